// TimeAttribution across skipped steady-state periods (periodic.hpp): whether two periods
// changed its whole state alike, and moving it on by many such periods at once.
#include "sim/metrics/attribution_state.hpp"
#include "sim/metrics/periodic.hpp"

namespace ipusim::attribution_detail {

namespace {

bool same_segment(const Segment& a, const Segment& b, int dp) {
  return a.work == b.work && a.copies == b.copies && a.all_reduce == b.all_reduce && a.update == b.update &&
         a.asynchronous == b.asynchronous && b.period - a.period == dp;
}

bool same_idle_growth(const IdleBreakdown& a0, const IdleBreakdown& a, const IdleBreakdown& b) {
  using ipusim::periodic::same_growth;
  return same_growth(a0.fill_flush_s, a.fill_flush_s, b.fill_flush_s) &&
         same_growth(a0.imbalance_s, a.imbalance_s, b.imbalance_s) &&
         same_growth(a0.copy_wait_s, a.copy_wait_s, b.copy_wait_s) &&
         same_growth(a0.update_wait_s, a.update_wait_s, b.update_wait_s) &&
         same_growth(a0.turn_wait_s, a.turn_wait_s, b.turn_wait_s);
}

void add_growth(IdleBreakdown& now, const IdleBreakdown& before, double n) {
  now.fill_flush_s += n * (now.fill_flush_s - before.fill_flush_s);
  now.imbalance_s += n * (now.imbalance_s - before.imbalance_s);
  now.copy_wait_s += n * (now.copy_wait_s - before.copy_wait_s);
  now.update_wait_s += n * (now.update_wait_s - before.update_wait_s);
  now.turn_wait_s += n * (now.turn_wait_s - before.turn_wait_s);
}

using ipusim::periodic::same_growth, ipusim::periodic::shifted;

// The IPU's units ran as often, and their seconds grew alike, in both periods.
bool units_grew_alike(const IpuState& x0, const IpuState& x, const IpuState& y, std::int64_t ds) {
  if (y.units.size() != x.units.size() || x.units.size() != x0.units.size()) return false;
  for (auto u0 = x0.units.begin(), u = x.units.begin(), v = y.units.begin(); v != y.units.end(); ++u0, ++u, ++v) {
    if (u0->first != v->first || u->first != v->first) return false;
    const UnitStats &p0 = u0->second, &p = u->second, &q = v->second;
    if (!same_growth(p0.seconds, p.seconds, q.seconds) || q.count - p.count != p.count - p0.count) return false;
    if (p.last_segment < 0 ? q.last_segment != p.last_segment : q.last_segment - p.last_segment != ds) return false;
  }
  return true;
}

// The IPU's pending waits are the same one period (T seconds, dp periods of segments) later.
bool waits_recur(const IpuState& x, const IpuState& y, double T, std::int64_t dp) {
  if (x.waits.size() != y.waits.size()) return false;
  for (std::size_t w = 0; w < y.waits.size(); ++w) {
    const PendingWait &p = x.waits[w], &q = y.waits[w];
    // A wait of the fill that lacks units waits unchanged for its batch's end; the others recur.
    const bool kept = p.start == q.start && p.period == q.period;
    if (p.units != q.units || !shifted(p.seconds, q.seconds, 0) ||
        (!kept && (!shifted(p.start, q.start, T) || q.period - p.period != dp)))
      return false;
  }
  return true;
}

// The IPU's receives not yet settled are the same T seconds later.
bool receives_recur(const IpuState& x, const IpuState& y, double T) {
  if (x.receives.size() != y.receives.size()) return false;
  for (std::size_t k = 0; k < y.receives.size(); ++k) {
    const PendingReceive &p = x.receives[k], &q = y.receives[k];
    if (!shifted(p.start, q.start, T) || !shifted(p.seconds, q.seconds, 0) ||
        !shifted(p.senders_started, q.senders_started, T) || p.transfers_missing != q.transfers_missing ||
        p.first_of_unit != q.first_of_unit)
      return false;
  }
  return true;
}

// The copies' unclaimed transfers are the same T seconds later, and their waiting receivers the
// same ones, each `dr` (per IPU, from `first`) receives further.
bool copies_recur(const std::map<int, CopyQueue>& a, const std::map<int, CopyQueue>& b, double T,
                  const std::vector<std::int64_t>& dr, const IpuState* first) {
  for (auto c = a.begin(), d = b.begin(); d != b.end(); ++c, ++d) {
    const CopyQueue &p = c->second, &q = d->second;
    if (p.unclaimed.size() != q.unclaimed.size() || p.waiting.size() != q.waiting.size()) return false;
    for (std::size_t k = 0; k < q.unclaimed.size(); ++k)
      if (!shifted(p.unclaimed[k], q.unclaimed[k], T)) return false;
    for (std::size_t k = 0; k < q.waiting.size(); ++k) {
      if (p.waiting[k].first != q.waiting[k].first) return false;
      const auto ipu = static_cast<std::size_t>(q.waiting[k].first - first);
      if (static_cast<std::int64_t>(q.waiting[k].second - p.waiting[k].second) != dr[ipu]) return false;
    }
  }
  return true;
}

} // namespace

// Every IPU passed as many barriers and weight-update phases in both periods, and
// everything it keeps (waits, receives, copies unclaimed, its units' last runs) is the
// same one period later, its sums grown alike.
bool StateImpl::periodic(const RepeatedPeriods& r, std::int64_t periods) const {
  using ipusim::periodic::cursor_moved, ipusim::periodic::room_for;
  if (marks_.empty() || marks_.back().size() < 3 || ipus_.empty()) return false;
  const Mark &m0 = marks_.back()[0], &a = marks_.back()[1], &b = marks_.back()[2];
  const double T = r.period;
  const std::int64_t ds = b.ipus[0].segment - a.ipus[0].segment;
  const std::int64_t dp = b.ipus[0].period - a.ipus[0].period;
  if (dp < 0 || (dp > 0 && periods > (std::numeric_limits<int>::max() - segments_.period_) / dp)) return false;
  std::vector<std::int64_t> dr(ipus_.size());
  for (std::size_t i = 0; i < ipus_.size(); ++i) {
    const IpuState &x0 = m0.ipus[i], &x = a.ipus[i], &y = b.ipus[i];
    if (y.segment - x.segment != ds || x.segment - x0.segment != ds || y.period - x.period != dp ||
        x.period - x0.period != dp || x.own_work != y.own_work || !shifted(x.cursor, y.cursor, T))
      return false;
    if (!same_idle_growth(x0.out.idle, x.out.idle, y.out.idle) || !same_growth(x0.out.update_s, x.out.update_s, y.out.update_s))
      return false;
    if (!units_grew_alike(x0, x, y, ds) || !waits_recur(x, y, T, dp)) return false;
    const int moved = cursor_moved(x.receive_steps, y.receive_steps, r.loop, r.iterations);
    if (moved < 0 || !room_for(ipus_[i].receive_steps, moved, r.iterations, periods)) return false;
    dr[i] = static_cast<std::int64_t>(y.receives_base - x.receives_base);
    if (static_cast<std::int64_t>(x.receives_base - x0.receives_base) != dr[i] ||
        static_cast<std::int64_t>(y.unsettled - x.unsettled) != dr[i] || !receives_recur(x, y, T))
      return false;
  }
  if (!copies_recur(a.copies, b.copies, T, dr, ipus_.data())) return false;
  const SegmentStream &s0 = m0.segments, &s = a.segments, &t = b.segments;
  if (t.base_ - s.base_ != ds || s.base_ - s0.base_ != ds || t.window_.size() != s.window_.size() ||
      t.another_ != s.another_ || t.in_update_ != s.in_update_ || t.period_ - s.period_ != dp)
    return false;
  for (std::size_t k = 0; k < t.window_.size(); ++k)
    if (!same_segment(s.window_[k], t.window_[k], static_cast<int>(dp))) return false;
  for (std::size_t c = 0; c < t.cursors_.size(); ++c) {
    const int moved = cursor_moved(s.cursors_[c], t.cursors_[c], r.loop, r.iterations);
    if (moved < 0 || !room_for(segments_.cursors_[c], moved, r.iterations, periods)) return false;
  }
  return true;
}

void StateImpl::add_periods(const RepeatedPeriods& r, std::int64_t periods) {
  using ipusim::periodic::cursor_moved, ipusim::periodic::skip;
  const Mark &a = marks_.back()[1], &b = marks_.back()[2];
  const double n = static_cast<double>(periods), later = n * r.period;
  const std::int64_t ds = b.ipus[0].segment - a.ipus[0].segment;
  const int dp = static_cast<int>(periods * (b.ipus[0].period - a.ipus[0].period));
  std::vector<std::uint64_t> dr(ipus_.size());
  for (std::size_t i = 0; i < ipus_.size(); ++i) {
    IpuState& y = ipus_[i];
    const IpuState& x = a.ipus[i];
    y.segment += periods * ds;
    y.period += dp;
    y.cursor += later;
    add_growth(y.out.idle, x.out.idle, n);
    y.out.update_s += n * (y.out.update_s - x.out.update_s);
    auto u = x.units.begin();
    for (auto v = y.units.begin(); v != y.units.end(); ++u, ++v) {
      v->second.seconds += n * (v->second.seconds - u->second.seconds);
      v->second.count += periods * (v->second.count - u->second.count);
      if (v->second.last_segment >= 0) v->second.last_segment += periods * ds;
    }
    for (std::size_t w = 0; w < y.waits.size(); ++w)
      if (y.waits[w].start != x.waits[w].start || y.waits[w].period != x.waits[w].period) {
        y.waits[w].start += later;
        y.waits[w].period += dp;
      }
    skip(y.receive_steps, cursor_moved(x.receive_steps, b.ipus[i].receive_steps, r.loop, r.iterations), r.iterations,
         periods);
    dr[i] = static_cast<std::uint64_t>(periods) * (y.receives_base - x.receives_base);
    y.receives_base += dr[i];
    y.unsettled += dr[i];
    for (PendingReceive& p : y.receives) {
      p.start += later;
      p.senders_started += later;
    }
  }
  for (auto& [copy, q] : copies_) {
    for (double& t : q.unclaimed) t += later;
    for (auto& [st, serial] : q.waiting) serial += dr[static_cast<std::size_t>(st - ipus_.data())];
  }
  for (std::size_t c = 0; c < segments_.cursors_.size(); ++c)
    skip(segments_.cursors_[c], cursor_moved(a.segments.cursors_[c], b.segments.cursors_[c], r.loop, r.iterations),
         r.iterations, periods);
  segments_.base_ += periods * ds;
  for (Segment& s : segments_.window_) s.period += dp;
  segments_.period_ += dp;
}
} // namespace ipusim::attribution_detail
