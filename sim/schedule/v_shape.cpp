// V-Half and V-Min (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024):
// the order of sail-sg/zero-bubble-pipeline-parallelism's scheduler/zbv_greedy.py, ported rule
// for rule. A stable pattern places each device's F, f, B, b (forward and backward of the V's
// two chunks) in slots six apart per micro-batch; `reorder` squeezes ops into earlier free slots
// while the device's peak memory does not grow, once with W placed and once without; W then
// fill the empty slots. The reference runs it on unit slots whatever the measured times, so the
// order depends only on p and m.
#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>

#include "sim/schedule/order.hpp"

namespace ipusim {

namespace {

using Times = std::vector<std::int64_t>;  // slot of each micro-batch's op of one type
using Stage = std::vector<Times>;         // by type: F, f, B, b, then W (one list or two)
using Stages = std::vector<Stage>;

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

std::int64_t last_slot(const Stage& s) {
  std::int64_t bound = 0;
  for (const Times& t : s)
    if (!t.empty()) bound = std::max(bound, t.back());
  return bound;
}

// The next op by (slot, type) among the lists' unvisited heads, or type -1.
std::pair<std::int64_t, int> next_of(const Stage& s, const std::vector<std::size_t>& p, int types) {
  std::pair<std::int64_t, int> best{kNone, -1};
  for (int t = 0; t < types; ++t) {
    const auto T = static_cast<std::size_t>(t);
    if (p[T] < s[T].size() && s[T][p[T]] < best.first) best = {s[T][p[T]], t};
  }
  return best;
}

// W after each B or b, in the first free slots (split: one W list per chunk).
Stage put_w(Stage s, bool split) {
  const std::int64_t bound = last_slot(s);
  s.resize(split ? 6 : 5);
  std::array<int, 2> pending{0, 0};
  std::vector<std::size_t> p(4, 0);
  std::int64_t i = 0;
  for (i = 0; i <= bound; ++i) {
    const auto [at, type] = next_of(s, p, 4);
    if (at == i) {
      p[static_cast<std::size_t>(type)] += 1;
      if (type >= 2) pending[split ? static_cast<std::size_t>(type - 2) : 0] += 1;
    } else {
      for (std::size_t w = 0; w < 2; ++w)
        if (pending[w]) {
          s[w + 4].push_back(i);
          pending[w] -= 1;
          break;
        }
    }
  }
  i -= 1;  // Python's loop variable stays at the bound
  for (std::size_t w = 0; w < 2; ++w)
    while (pending[w] > 0) s[w + 4].push_back(++i), pending[w] -= 1;
  return s;
}

// Peak activations of a device (F and f hold one, W frees one; without W listed, the first
// free slot after a B frees it), scanned slot by slot from a state: the activations held and
// the Bs whose W is still to come after the slots before `from`.
struct Scan {
  static constexpr std::array<int, 5> kMemory{1, 1, 0, 0, -1};
  const Stage& s;
  const bool has_w;
  std::vector<std::size_t> p;  // per type, the ops before the slot being scanned
  int cur = 0, pending = 0;

  Scan(const Stage& stage, std::int64_t from, int held, int pending_w)
      : s(stage), has_w(stage.size() > 4), p(stage.size(), 0), cur(held), pending(pending_w) {
    for (std::size_t t = 0; t < s.size(); ++t)
      p[t] = static_cast<std::size_t>(std::lower_bound(s[t].begin(), s[t].end(), from) - s[t].begin());
  }
  // Slot i: its op, or (without W listed) a pending B's release.
  void step(std::int64_t i) {
    const auto [at, type] = next_of(s, p, static_cast<int>(s.size()));
    if (at == i) {
      p[static_cast<std::size_t>(type)] += 1;
      cur += kMemory[static_cast<std::size_t>(type)];
      if (type == 2 || type == 3) pending += 1;
    } else if (!has_w && pending) {
      cur += kMemory[4];
      pending -= 1;
    }
  }
};

// A device's activations and pending Ws after each slot, kept while `reorder` squeezes its
// ops, so that a trial move rescans only from the slot it tries until the scan meets the
// kept profile again (from there on nothing differs) instead of the whole slot list.
class MemoryProfile {
public:
  explicit MemoryProfile(const Stage& s) {
    const std::int64_t bound = last_slot(s);
    Scan scan(s, 0, 0, 0);
    for (std::int64_t i = 0; i <= bound; ++i) {
      scan.step(i);
      held_.push_back(scan.cur);
      pending_.push_back(scan.pending);
    }
  }

  // The device's peak activations (none before its first op).
  int peak() const { return std::max(0, *std::max_element(held_.begin(), held_.end())); }

  // Whether the device stays within `limit` with one op moved from slot `was` to the earlier
  // slot it now has in `s`; kept as the device's profile when it does. The profile is within
  // the limit before the move, and the slots before the new one are as they were.
  bool moved_within(const Stage& s, std::int64_t now, std::int64_t was, int limit) {
    const std::int64_t bound = last_slot(s);
    const auto before = static_cast<std::size_t>(now);
    Scan scan(s, now, now > 0 ? held_[before - 1] : 0, now > 0 ? pending_[before - 1] : 0);
    trial_held_.clear();
    trial_pending_.clear();
    for (std::int64_t i = now; i <= bound; ++i) {
      scan.step(i);
      if (scan.cur > limit) return false;
      const auto I = static_cast<std::size_t>(i);
      if (i >= was && scan.cur == held_[I] && scan.pending == pending_[I]) break;  // as before from here
      trial_held_.push_back(scan.cur);
      trial_pending_.push_back(scan.pending);
    }
    std::copy(trial_held_.begin(), trial_held_.end(), held_.begin() + static_cast<std::ptrdiff_t>(now));
    std::copy(trial_pending_.begin(), trial_pending_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(now));
    return true;
  }

private:
  std::vector<int> held_, pending_;  // after each slot
  std::vector<int> trial_held_, trial_pending_;
};

// Every op of every device in (slot, device, type, micro-batch) order: a min-heap of the lists'
// heads (a list's next op joins when its head is visited), as a scan of all heads would pick them.
template <class Visit> void in_slot_order(const Stages& st, int types, Visit visit) {
  using Head = std::tuple<std::int64_t, std::size_t, int>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (std::size_t d = 0; d < st.size(); ++d)
    for (int t = 0; t < types; ++t)
      if (!st[d][static_cast<std::size_t>(t)].empty()) heads.emplace(st[d][static_cast<std::size_t>(t)][0], d, t);
  std::vector<std::vector<std::size_t>> p(st.size(), std::vector<std::size_t>(static_cast<std::size_t>(types), 0));
  while (!heads.empty()) {
    const auto [slot, d, t] = heads.top();
    heads.pop();
    const auto& list = st[d][static_cast<std::size_t>(t)];
    const std::size_t mb = p[d][static_cast<std::size_t>(t)]++;
    if (mb + 1 < list.size()) heads.emplace(list[mb + 1], d, t);
    visit(slot, d, t, mb);
  }
}

// Slots as the reference's eager_execution_time (unit costs, no copy time) re-times them.
Stages eager(const Stages& st) {
  const int types = static_cast<int>(st[0].size());
  Stages start = st;
  std::vector<std::vector<std::int64_t>> end_last(st.size());
  std::vector<std::int64_t> device_free(st.size(), 0);
  std::vector<Stage> end = st;
  in_slot_order(st, types, [&](std::int64_t, std::size_t d, int t, std::size_t mb) {
    const auto T = static_cast<std::size_t>(t);
    std::int64_t deps = 0;
    if ((t == 0 || t == 2) && d > 0) deps = std::max(deps, end[d - 1][T][mb]);
    if ((t == 1 || t == 3) && d + 1 < st.size()) deps = std::max(deps, end[d + 1][T][mb]);
    if (t > 0 && t < 4) deps = std::max(deps, end[d][T - 1][mb]);
    if (mb > 0) deps = std::max(deps, end[d][T][mb - 1]);
    deps = std::max(deps, device_free[d]) + 1;
    end[d][T][mb] = deps;
    device_free[d] = deps;
    start[d][T][mb] = deps - 1;
  });
  return start;
}

// The k-th smallest (from 0) of the slots of two ascending lists, as sorting their union
// would give it, in logarithmic time (W's dependency: the k-th B of either chunk). The lists
// stay ascending while ops are squeezed: an op moves only earlier, and never before the op
// of the micro-batch ahead of it.
std::int64_t kth_of_both(const Times& a, const Times& b, std::size_t k) {
  std::int64_t low = std::min(a.empty() ? kNone : a.front(), b.empty() ? kNone : b.front());
  std::int64_t high = std::max(a.empty() ? low : a.back(), b.empty() ? low : b.back());
  while (low < high) {  // the least slot with more than k slots at or below it
    const std::int64_t mid = low + (high - low) / 2;
    const auto at_or_below = static_cast<std::size_t>(std::upper_bound(a.begin(), a.end(), mid) - a.begin()) +
                             static_cast<std::size_t>(std::upper_bound(b.begin(), b.end(), mid) - b.begin());
    if (at_or_below > k) high = mid;
    else low = mid + 1;
  }
  return low;
}

Stages reorder(Stages st, bool consider_w) {
  if (consider_w)
    for (Stage& s : st) s = put_w(s, false);
  const int types = consider_w ? 5 : 4;
  int current = 0;
  std::vector<MemoryProfile> profiles;
  for (const Stage& s : st) current = std::max(current, profiles.emplace_back(s).peak());
  std::vector<std::vector<bool>> occupied;
  for (const Stage& s : st) occupied.emplace_back(static_cast<std::size_t>(last_slot(s) + 1), false);
  int phase = 0;
  const std::size_t last_f = st[0][0].size() - 1;
  // Visit in the order of the slots as they were: a squeezed op moves only earlier.
  const Stages before = st;
  in_slot_order(before, types, [&](std::int64_t slot, std::size_t d, int t, std::size_t mb) {
    const auto T = static_cast<std::size_t>(t);
    auto occupy = [&] { occupied[d][static_cast<std::size_t>(st[d][T][mb])] = true; };
    if (t == 3 && d == 0 && phase == 0) phase = 1;
    if (phase == 1) {
      if (t == 0 && mb == last_f) phase = 2;
      return occupy();
    }
    if (phase == 0 && !consider_w) return occupy();
    std::int64_t deps = -1;
    if ((t == 0 || t == 2) && d > 0) deps = std::max(deps, st[d - 1][T][mb]);
    if ((t == 1 || t == 3) && d + 1 < st.size()) deps = std::max(deps, st[d + 1][T][mb]);
    if (t > 0 && t < 4) deps = std::max(deps, st[d][T - 1][mb]);
    if (t == 4) deps = std::max(deps, kth_of_both(st[d][2], st[d][3], mb));
    if (mb > 0) deps = std::max(deps, st[d][T][mb - 1]);
    bool ok = false;
    for (std::int64_t at = deps + 1; at < slot && !ok; ++at)
      if (!occupied[d][static_cast<std::size_t>(at)]) {
        st[d][T][mb] = at;
        ok = profiles[d].moved_within(st[d], at, slot, current);
      }
    if (!ok) st[d][T][mb] = slot;
    occupy();
  });
  if (!consider_w)
    for (Stage& s : st) s = put_w(s, false);
  return eager(st);
}

} // namespace

ScheduleOrder order_v_greedy(int p, std::int64_t m, bool half) {
  ScheduleOrder o = v_layout(half ? "v-half" : "v-min", p, m);
  Stages st(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    std::array<std::int64_t, 4> pattern{};
    if (half) {
      const int gap = p % 2 == 0 ? 3 : 0;
      pattern = {2 * i, 3 * p - i - 2, 3 * p + gap + 2 * i - 1, 6 * p + gap - i - 2};
    } else {
      const int gap = p % 3 == 0 ? 2 : 0;
      pattern = {i, 2 * p - i - 1, 2 * p + gap + i, 4 * p + gap - i - 1};
    }
    for (std::int64_t x : pattern) {
      Times t;
      for (std::int64_t k = 0; k < m; ++k) t.push_back(x + 6 * k);
      st[static_cast<std::size_t>(i)].push_back(std::move(t));
    }
  }
  Stages r = reorder(st, true);
  for (Stage& s : r) s.resize(4);
  r = reorder(r, false);
  for (Stage& s : r) s = put_w(Stage(s.begin(), s.begin() + 4), true);
  in_slot_order(r, 6, [&](std::int64_t, std::size_t d, int t, std::size_t mb) {
    const int cat = t / 2, chunk = t % 2;
    o.ops[d].push_back({cat == 0 ? Pass::Forward : cat == 1 ? Pass::InputGradient : Pass::WeightGradient, static_cast<std::int64_t>(mb),
                        cat == 0 ? chunk : 1 - chunk});
  });
  return o;
}

const OrderScheduleInfo& v_half_order() {
  static const OrderScheduleInfo info{
      "v-half", "what-if: V-Half (controllable memory), V placement, about half of 1F1B's activations",
      "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", PartPlacement::V,
      [](int p, int, std::int64_t m, const OpTimes&, double) { return order_v_greedy(p, m, true); }};
  return info;
}

const OrderScheduleInfo& v_min_order() {
  static const OrderScheduleInfo info{
      "v-min", "what-if: V-Min (controllable memory), V placement, about a third of 1F1B's activations",
      "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", PartPlacement::V,
      [](int p, int, std::int64_t m, const OpTimes&, double) { return order_v_greedy(p, m, false); }};
  return info;
}

} // namespace ipusim
