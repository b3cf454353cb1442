// Steady state: a loop's periods reported without simulating them.
//
// Whenever the first IPU inside a loop (the reference) begins an iteration of it, and
// every program has that loop, the engine takes a snapshot of the whole simulation: each
// IPU's position (step, loop iterations), what it is doing and since when (the step, and
// the exec or sleep under way: the step's start is part of what it will report), every
// transfer it started and has not reported (how long ago it started and finished, bytes
// left), and the copies sent and not yet taken. SimGrid's future is a function of that
// state and of the programs' remaining steps. When a snapshot equals an earlier one of
// the same loop instance except that every IPU inside the loop is P iterations further
// and everything happened T seconds later, each of the next periods repeats the last one
// T later, for as long as every such IPU stays inside the loop. IPUs outside the loop
// may take part only by waiting, unchanged, for a copy or a barrier that no period gives
// them (GPipe's fast stages, done with their forwards while the slowest works through its
// queue); a queue of copies may shrink from period to period only while nothing is added
// to it (then at most as many periods as it lasts), or grow while nothing is taken. So
// the engine reports the notes (events, transfers) of the last period again, k*T later
// and k*P micro-batches further for each skipped period, moves every IPU inside the loop
// on by the skipped iterations, dates the waits of the others from before the skip, and
// carries on simulating with its clock T*periods behind the reported one. Snapshots of
// loops whose state never repeats (IPUs inside the loop at different rates, contention
// that does not settle) never match, and those loops are simulated in full.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/engine/engine_run.hpp"

namespace ipusim::engine_detail {

namespace {

// Snapshots kept per loop: periods of up to this many iterations minus one are found.
constexpr std::size_t kSnapshotsKept = 5;
// Notes kept while looking for a period, per IPU (a period's notes grow with the IPUs,
// mirrored ones included: a Pod256's 256 replicas note about 600 each per iteration of
// ResNet-50's loop, its ring all-reduce included); past it the oldest snapshots are dropped. A fixed 65,536 left
// that loop simulated in full (10.9 s of CPU instead of 2.3 s, every figure the same).
constexpr std::size_t kNotesPerIpu = 4096;
constexpr std::size_t kMinNotes = 1 << 16;
// No snapshot is taken while an IPU holds more transfers than this (sent and not yet reported):
// a snapshot holds each one, and a route that carries a copy slower than it is posted gathers
// them, one more every few micro-batches (GPipe's copies over a slow link), in a state that
// never repeats while they gather, and that its sender, waiting, holds until it moves on. A
// loop whose steady state has more is simulated in full.
constexpr std::size_t kMaxTransfersPerIpu = 1024;

// Rounding in SimGrid's clock differs between two equal periods by a few units in the
// last place of the clock; anything larger is a real difference.
bool same_time(double a, double b, double clock) {
  const double ulp = std::nextafter(clock, std::numeric_limits<double>::infinity()) - clock;
  return std::fabs(a - b) <= 32 * ulp + 1e-15;
}

bool same_amount(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)) + 1e-9; }

std::size_t depth_of(const Program& program, const std::vector<ProgramCursor::Frame>& frames, int loop) {
  for (std::size_t d = 0; d < frames.size(); ++d)
    if (program.repeats[frames[d].repeat].loop == loop) return d;
  return frames.size();
}

} // namespace

void Run::on_iterations_begun(ActorState& st, std::size_t a) {
  const ProgramCursor& cursor = st.cursor;
  for (std::size_t d = cursor.first_new_frame(); d < cursor.frames().size(); ++d) {
    const Repeat& r = cursor.repeat_of(d);
    const bool first_iteration = cursor.frames()[d].iteration == 0;
    if (a == 0 && first_iteration) instances_.push_back({r.loop, r.times});
    if (!options_.steady_state || !every_program_loops_[static_cast<std::size_t>(r.loop)]) continue;
    if (!is_reference(a, r.loop)) continue;
    if (first_iteration) snapshots_.erase(r.loop);  // another instance of the loop: its old snapshots cannot match
    if (holds_too_many_transfers()) continue;
    Snapshot now_state = take_snapshot(r.loop);
    auto& kept = snapshots_[r.loop];
    for (auto older = kept.rbegin(); older != kept.rend(); ++older) {
      const Period period = period_between(*older, now_state, r.loop);
      if (period.iterations <= 0) continue;
      const Snapshot first = *older;
      if (!skip_periods(first, now_state, period)) break;
      snapshots_.erase(r.loop);
      trim_notes();
      return;
    }
    kept.push_back(std::move(now_state));
    if (kept.size() > kSnapshotsKept) kept.pop_front();
    trim_notes();
  }
}

bool Run::holds_too_many_transfers() const {
  for (const ActorState& st : actors_)
    if (st.sends.size() + st.streams.size() + st.waiting_on.size() > kMaxTransfersPerIpu) return true;
  return false;
}

bool Run::is_reference(std::size_t a, int loop) {
  const auto inside = [&](std::size_t i) {
    const ActorState& other = actors_[i];
    return depth_of(*other.program, other.cursor.frames(), loop) < other.cursor.frames().size();
  };
  auto found = reference_.find(loop);
  if (found != reference_.end() && found->second < a && inside(found->second)) return false;
  std::size_t first = a;
  for (std::size_t i = 0; i < a; ++i)
    if (inside(i)) {
      first = i;
      break;
    }
  if (found == reference_.end() || found->second != first) {
    reference_[loop] = first;
    snapshots_.erase(loop);
  }
  return first == a;
}

Snapshot Run::take_snapshot(int loop) const {
  Snapshot s;
  s.loop = loop;
  s.raw_time = now();
  s.time = s.raw_time + offset_;
  s.mark = notes_base_ + notes_.size();
  s.activities = activities_;
  s.sent = arrivals_.sent();
  s.taken = arrivals_.taken();
  for (const GroupState& g : group_states_) s.joins.insert(s.joins.end(), g.joins.begin(), g.joins.end());
  for (const ActorState& st : actors_) {
    ActorSnapshot a;
    a.index = st.cursor.index();
    a.frames = st.cursor.frames();
    a.doing = st.doing;
    a.running = st.running;
    a.taken = st.taken;
    a.step_age = st.running ? s.raw_time - st.current.start : 0;
    a.timed_age = st.doing == Doing::Timed ? s.raw_time - st.timed_start : 0;
    auto add = [&](const Pending& p) {
      // Not started (-1): queued behind its copy's transfer on the route (CopyArrivals).
      const double started = p.comm.start_time(), finished = p.comm.finish_time();
      a.activities.push_back({p.tag, started >= 0 ? s.raw_time - started : -1, finished >= 0 ? s.raw_time - finished : -1,
                              p.comm.remaining(p.bytes)});
    };
    for (const Pending& p : st.waiting_on) add(p);
    for (const Pending& p : st.sends) add(p);
    for (const Pending& p : st.streams) add(p);
    s.actors.push_back(std::move(a));
  }
  return s;
}

Period Run::period_between(const Snapshot& older, const Snapshot& newer, int loop) const {
  if (!(newer.raw_time > older.raw_time)) return {};
  const double clock = newer.raw_time;
  Period result;
  result.max_periods = std::numeric_limits<std::int64_t>::max();
  // A copy's backlog may change from period to period only where nothing is sent to it:
  // its receiver takes what is already there without waiting, for at most backlog / taken
  // more periods.
  for (std::size_t c = 0; c < newer.sent.size(); ++c) {
    const std::int64_t sent = newer.sent[c] - older.sent[c], taken = newer.taken[c] - older.taken[c];
    if (sent == taken) continue;
    if (sent != 0) return {};
    result.max_periods = std::min(result.max_periods, (newer.sent[c] - newer.taken[c]) / taken);
    result.drained.emplace_back(c, taken);
  }
  // A collective's members must have begun as many blocks each: the n-th block of each
  // belongs to one instance, before and after the skip.
  for (std::size_t g = 0, at = 0; g < group_states_.size(); ++g) {
    const std::size_t members = group_states_[g].joins.size();
    for (std::size_t m = 1; m < members; ++m)
      if (newer.joins[at + m] - older.joins[at + m] != newer.joins[at] - older.joins[at]) return {};
    at += members;
  }
  std::int64_t period = 0, stride = -1;
  for (std::size_t i = 0; i < actors_.size(); ++i)
    if (!moved_alike(*actors_[i].program, older.actors[i], newer.actors[i], loop, clock, period, stride)) return {};
  result.iterations = period;
  return result;
}

bool Run::moved_alike(const Program& program, const ActorSnapshot& a, const ActorSnapshot& b, int loop, double clock,
                      std::int64_t& period, std::int64_t& stride) {
  if (a.index != b.index || a.frames.size() != b.frames.size() || a.doing != b.doing || a.running != b.running ||
      a.taken != b.taken || a.activities.size() != b.activities.size())
    return false;
  if (depth_of(program, a.frames, loop) == a.frames.size()) {
    // Outside the loop: it must be waiting for a copy or at a barrier that none of the
    // loop's periods gives it, with nothing of its own still moving.
    if (a.frames != b.frames || !a.running || (a.doing != Doing::Receive && a.doing != Doing::Barrier)) return false;
    for (std::size_t k = 0; k < a.activities.size(); ++k)
      if (a.activities[k].tag != b.activities[k].tag || a.activities[k].finished_ago < 0 ||
          b.activities[k].finished_ago < 0)
        return false;
    return true;
  }
  if (!same_time(a.timed_age, b.timed_age, clock) || !same_time(a.step_age, b.step_age, clock)) return false;
  for (std::size_t d = 0; d < a.frames.size(); ++d) {
    if (a.frames[d].repeat != b.frames[d].repeat) return false;
    const Repeat& r = program.repeats[a.frames[d].repeat];
    const std::int64_t moved = b.frames[d].iteration - a.frames[d].iteration;
    if (r.loop != loop) {
      if (moved != 0) return false;
      continue;
    }
    if (moved <= 0 || (period != 0 && moved != period) || (stride >= 0 && r.stride != stride)) return false;
    period = moved;
    stride = r.stride;
  }
  for (std::size_t k = 0; k < a.activities.size(); ++k) {
    const auto& x = a.activities[k];
    const auto& y = b.activities[k];
    if (x.tag != y.tag || !same_time(x.started_ago, y.started_ago, clock) || (x.finished_ago < 0) != (y.finished_ago < 0) ||
        !same_time(x.finished_ago, y.finished_ago, clock) || !same_amount(x.remaining, y.remaining))
      return false;
  }
  return true;
}

std::shared_ptr<ReplayNote> Run::period_replay(const Snapshot& older, const Snapshot& newer, std::int64_t periods,
                                               std::int64_t iterations, std::int64_t stride) const {
  auto replay = std::make_shared<ReplayNote>();
  replay->window.assign(notes_.begin() + static_cast<std::ptrdiff_t>(older.mark - notes_base_),
                        notes_.begin() + static_cast<std::ptrdiff_t>(newer.mark - notes_base_));
  replay->times = periods;
  replay->period = newer.time - older.time;
  replay->label_shift = iterations * stride;
  replay->loop = older.loop;
  replay->iterations = iterations;
  // The links carry each period's bytes again: one period's sum times the periods (the
  // replay's sum to the last bit while the bytes are whole numbers).
  replay->period_link_bytes.assign(link_bytes_.size(), 0.0);
  for (const Note& note : replay->window) {
    if (const auto* t = std::get_if<TransferNote>(&note)) {
      for (int slot : *t->slots) replay->period_link_bytes[static_cast<std::size_t>(slot)] += t->bytes;
    } else if (const auto* inner = std::get_if<std::shared_ptr<const ReplayNote>>(&note)) {
      for (std::size_t slot = 0; slot < link_bytes_.size(); ++slot)
        replay->period_link_bytes[slot] += static_cast<double>((*inner)->times) * (*inner)->period_link_bytes[slot];
    }
  }
  return replay;
}

void Run::move_past_skipped(const std::vector<std::size_t>& depth, std::int64_t skipped, std::int64_t stride,
                            double skipped_time) {
  for (std::size_t i = 0; i < actors_.size(); ++i) {
    ActorState& st = actors_[i];
    if (depth[i] == st.cursor.frames().size()) {
      // Its wait and its finished transfers began before the skipped periods.
      st.current.start -= skipped_time;
      for (auto* queue : {&st.sends, &st.streams})
        for (Pending& p : *queue) p.shift -= skipped_time;
      for (Pending& p : st.waiting_on) p.shift -= skipped_time;
      continue;
    }
    st.cursor.skip_iterations(depth[i], skipped);
    if (st.running && st.current.micro_batch >= 0) st.current.micro_batch += skipped * stride;
  }
}

bool Run::skip_periods(const Snapshot& older, const Snapshot& newer, const Period& found) {
  const std::int64_t period = found.iterations;
  // Whole periods that fit before the first IPU would reach its loop's last iteration.
  std::int64_t room = std::numeric_limits<std::int64_t>::max(), stride = 0;
  std::vector<std::size_t> depth(actors_.size());
  for (std::size_t i = 0; i < actors_.size(); ++i) {
    const ActorState& st = actors_[i];
    depth[i] = depth_of(*st.program, st.cursor.frames(), older.loop);
    if (depth[i] == st.cursor.frames().size()) continue;  // waiting outside the loop
    const Repeat& r = st.program->repeats[st.cursor.frames()[depth[i]].repeat];
    room = std::min(room, r.times - 1 - st.cursor.frames()[depth[i]].iteration);
    stride = r.stride;
  }
  const std::int64_t periods = std::min(room / period, found.max_periods);
  if (periods < 1) return false;
  std::shared_ptr<ReplayNote> replay = period_replay(older, newer, periods, period, stride);
  for (std::size_t slot = 0; slot < link_bytes_.size(); ++slot)
    link_bytes_[slot] += static_cast<double>(periods) * replay->period_link_bytes[slot];
  report_repeats(*replay, 0, 0, observer_);
  activities_ += static_cast<std::uint64_t>(periods) * (newer.activities - older.activities);
  const double skipped_time = static_cast<double>(periods) * replay->period;
  offset_ += skipped_time;
  const std::int64_t skipped = periods * period;
  // The copies the skipped periods took, taken now (they are there: no time passes).
  for (const auto& [copy, per_period] : found.drained)
    for (std::int64_t k = 0; k < periods * per_period; ++k)
      if (sg4::CommPtr arriving = arrivals_.take(static_cast<int>(copy))) arriving->wait();
  move_past_skipped(depth, skipped, stride, skipped_time);
  for (auto i = instances_.rbegin(); i != instances_.rend(); ++i)
    if (i->loop == older.loop) {
      i->skipped += skipped;
      break;
    }
  if (keeping_notes()) notes_.emplace_back(std::shared_ptr<const ReplayNote>(std::move(replay)));
  return true;
}

void Run::report_repeats(const ReplayNote& replay, double time_shift, std::int64_t label_shift, RunObserver& observer) {
  RepeatedPeriods repeat;
  repeat.loop = replay.loop;
  repeat.iterations = replay.iterations;
  repeat.label_shift = replay.label_shift;
  repeat.period = replay.period;
  repeat.times = replay.times;
  repeat.replay = [this, &replay, time_shift, label_shift](std::int64_t k, RunObserver& to) {
    // The same shifts as the simulation's clock after k periods: k * period, not a running sum.
    const double dt = time_shift + static_cast<double>(k) * replay.period;
    const std::int64_t dl = label_shift + k * replay.label_shift;
    const bool transfers = to.wants_transfers();
    for (const Note& note : replay.window) {
      if (const auto* e = std::get_if<Event>(&note)) {
        Event copy = *e;
        copy.start += dt;
        copy.end += dt;
        if (copy.micro_batch >= 0) copy.micro_batch += dl;
        to.on_event(copy);
      } else if (const auto* t = std::get_if<TransferNote>(&note)) {
        if (transfers) to.on_transfer({t->src, t->dst, t->copy, t->start + dt, t->end + dt, t->bytes, *t->slots});
      } else {
        report_repeats(*std::get<std::shared_ptr<const ReplayNote>>(note), dt, dl, to);
      }
    }
  };
  observer.on_repeat(repeat);
}

void Run::trim_notes() {
  for (auto i = snapshots_.begin(); i != snapshots_.end();) i = i->second.empty() ? snapshots_.erase(i) : std::next(i);
  auto oldest_mark = [&] {
    std::uint64_t mark = notes_base_ + notes_.size();
    for (const auto& [loop, kept] : snapshots_) mark = std::min(mark, kept.front().mark);
    return mark;
  };
  // Bounded memory: a period longer than the notes kept is not looked for.
  const std::size_t max_notes = std::max(kMinNotes, kNotesPerIpu * schedule_.programs.size());
  while (notes_.size() > max_notes && !snapshots_.empty()) {
    auto oldest = snapshots_.begin();
    for (auto i = snapshots_.begin(); i != snapshots_.end(); ++i)
      if (i->second.front().mark < oldest->second.front().mark) oldest = i;
    oldest->second.pop_front();
    if (oldest->second.empty()) snapshots_.erase(oldest);
    const std::uint64_t mark = oldest_mark();
    while (notes_base_ < mark && !notes_.empty()) {
      notes_.pop_front();
      ++notes_base_;
    }
  }
  const std::uint64_t mark = oldest_mark();
  while (notes_base_ < mark && !notes_.empty()) {
    notes_.pop_front();
    ++notes_base_;
  }
}

} // namespace ipusim::engine_detail
