#pragma once
// The idle attribution's state machine (attribution.hpp): the segments between barriers,
// each IPU's units, waits and receives, the copies' queues. attribution.cpp runs it on
// events; attribution_periods.cpp compares it across steady-state periods and moves it on.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <vector>

#include "sim/metrics/attribution.hpp"
#include "sim/schedule/program_cursor.hpp"

namespace ipusim::attribution_detail {


// A piece of forward or backward work of one stage: (stage, backward?).
using Unit = std::pair<int, bool>;


// What happens between two barriers, over all IPUs (every program holds the same syncs,
// so segment k is the same stretch of the step on every IPU).
struct Segment {
  bool work = false;          // forward or backward compute somewhere
  bool copies = false;        // a copy phase of the pipeline
  bool all_reduce = false;    // gradient collectives
  bool update = false;        // weight updates
  bool asynchronous = false;  // waits for asynchronous copies (GPU-style schedules)
  int period = 0;             // weight-update phases before it: fill and flush are counted per batch
};

// A step every IPU waits at: the segments' boundaries.
inline bool is_barrier(const Step& step) { return step.kind == StepKind::Sync || step.kind == StepKind::HostRoundTrip; }

inline void mark(Segment& s, const Step& step) {
  switch (step.kind) {
  case StepKind::Sync:
  case StepKind::HostRoundTrip: break;
  case StepKind::Compute:
    if (is_pipeline_pass(step.pass)) s.work = true;
    else if (step.pass == Pass::Update) s.update = true;
    break;
  case StepKind::HostInput:
  case StepKind::HostOutput:
    if (step.stage >= 0) s.work = true;
    break;
  case StepKind::Exchange: (step.pass == Pass::AllReduce ? s.all_reduce : s.copies) = true; break;
  case StepKind::Send:
  case StepKind::Receive: s.asynchronous = true; break;
  case StepKind::StateLoad:
  case StepKind::StateStore: s.update = true; break;
  }
}

// The segments in order, read from the programs as far as the IPUs' events have got; the
// caller drops those every IPU has passed.
class SegmentStream {
public:
  // Over the schedule's first `programs` programs (the others mirror them, or there are no others).
  SegmentStream(const Schedule& schedule, std::size_t programs) {
    std::vector<std::size_t> barriers_before;  // per step of a program: the barriers before it
    for (std::size_t program = 0; program < programs; ++program) {
      const Program& p = schedule.programs[program];
      cursors_.emplace_back(p);
      barriers_before.assign(p.steps.size() + 1, 0);
      for (std::size_t i = 0; i < p.steps.size(); ++i)
        barriers_before[i + 1] = barriers_before[i] + (is_barrier(p.steps[i]) ? 1 : 0);
      std::vector<char> free(p.repeats.size(), 1);
      for (std::size_t r = 0; r < p.repeats.size(); ++r)
        if (barriers_before[p.repeats[r].first + p.repeats[r].length] != barriers_before[p.repeats[r].first]) free[r] = 0;
      barrier_free_.push_back(std::move(free));
    }
  }

  Segment at(std::int64_t k) {
    while (base_ + static_cast<std::int64_t>(window_.size()) <= k)
      if (!produce()) return Segment{};
    return window_[static_cast<std::size_t>(k - base_)];
  }
  void drop_below(std::int64_t k) {
    for (; base_ < k && !window_.empty(); ++base_) window_.pop_front();
  }
  std::size_t kept() const { return window_.size(); }

  // Read and moved on by TimeAttribution's periods (add_periods).
  bool produce() {
    if (!another_) return false;
    Segment s;
    another_ = false;
    for (std::size_t i = 0; i < cursors_.size(); ++i)
      for (ProgramCursor& c = cursors_[i]; !c.done();) {
        const Step& step = c.step();
        c.advance();
        if (is_barrier(step)) {
          another_ = true;  // the stretch after a barrier exists even when it holds nothing
          break;
        }
        mark(s, step);
        skip_repeated_iterations(c, barrier_free_[i]);
      }
    // A weight-update phase ends a batch.
    const bool update_phase = !s.work && (s.update || s.all_reduce);
    if (in_update_ && !update_phase) ++period_;
    in_update_ = update_phase;
    s.period = period_;
    window_.push_back(s);
    return true;
  }

  // A segment's marks only ever turn on: once a loop without a barrier in it has run one whole
  // iteration, its later iterations add nothing, so the cursor goes straight to the last one
  // (a GPU-style schedule's loop over G micro-batches holds no sync: walking it step by step
  // made a run's cost grow with G).
  static void skip_repeated_iterations(ProgramCursor& c, const std::vector<char>& barrier_free) {
    for (std::size_t d = c.first_new_frame(); d < c.frames().size(); ++d) {
      const ProgramCursor::Frame f = c.frames()[d];
      const std::int64_t left = c.repeat_of(d).times - 1 - f.iteration;
      if (f.iteration >= 1 && left > 0 && barrier_free[f.repeat]) {
        c.skip_iterations(d, left);
        return;
      }
    }
  }

  std::vector<ProgramCursor> cursors_;
  std::vector<std::vector<char>> barrier_free_;  // per cursor, per repeat: no Sync or HostRoundTrip in it
  std::deque<Segment> window_;
  std::int64_t base_ = 0;
  bool another_ = true;
  bool in_update_ = false;
  int period_ = 0;
};

struct UnitStats {
  double seconds = 0;          // compute and host I/O
  std::int64_t count = 0;      // compute events: micro-batches
  std::int64_t last_segment = -1;  // where it last ran in the current period; -1: not yet
  int index = -1;              // among the IPU's compute units (waits track those), -1: host I/O only
};

// A wait in a pipeline cycle, kept until it is known which of the IPU's units it lacks.
enum class Presence : char { Present, Missing, Undecided };
struct PendingWait {
  double seconds = 0;
  double start = 0;
  int period = 0;
  std::vector<Presence> units;  // by UnitStats::index
};

// An asynchronous receive, kept until the transfers it took say when their senders started
// and the next work says whether it was the first of its unit in the batch.
struct PendingReceive {
  double start = 0, seconds = 0, senders_started = 0;
  int transfers_missing = 0;
  int first_of_unit = -1;  // -1: not known yet
};

struct IpuState {
  IpuAttribution out;
  std::map<Unit, UnitStats> units;
  std::vector<UnitStats*> compute_units;  // by index
  std::int64_t segment = 0;  // barriers passed
  int period = 0;
  double cursor = 0;  // end of its last activity
  bool own_work = false;  // in the current segment
  std::vector<PendingWait> waits;
  ProgramCursor receive_steps;
  std::deque<PendingReceive> receives;
  std::uint64_t receives_base = 0;  // serial number of receives.front()
  std::uint64_t unsettled = 0;      // serial number of the first receive not followed by work yet

  explicit IpuState(const Program& program) : receive_steps(program) {}
};

// A copy's transfers pair with its receives in order: whichever comes first waits.
struct CopyQueue {
  std::deque<double> unclaimed;                           // senders' start times
  std::deque<std::pair<IpuState*, std::uint64_t>> waiting;  // receives (IPU, serial)
};

class StateImpl {
public:
  // The IPUs of the schedule's first `programs` programs.
  StateImpl(const Schedule& schedule, std::size_t programs, Mode mode, bool record)
      : segments_(schedule, programs), one_at_a_time_(mode == Mode::Sharded || schedule.one_stage_at_a_time),
        record_(record) {
    ipus_.reserve(programs);
    for (std::size_t i = 0; i < programs; ++i) {
      const Program& program = schedule.programs[i];
      IpuState& st = ipus_.emplace_back(program);
      st.out.ipu = program.ipu;
      for (const Step& step : program.steps) {
        if (step.kind == StepKind::Compute && is_pipeline_pass(step.pass)) {
          UnitStats& u = st.units[{step.stage, is_backward(step.pass)}];
          if (u.index < 0) {
            u.index = static_cast<int>(st.compute_units.size());
            st.compute_units.push_back(&u);
          }
        }
        if (step.kind == StepKind::Receive)
          for (const Transfer& t : step.transfers) copies_[t.copy];
      }
    }
    for (std::size_t i = 0; i < ipus_.size(); ++i) index_of_ipu_[ipus_[i].out.ipu] = i;
  }

  void on_event(const Event& e) {
    const auto found = index_of_ipu_.find(e.ipu);
    if (found == index_of_ipu_.end()) return;
    IpuState& st = ipus_[found->second];
    if (e.kind == EventKind::Sync || e.kind == EventKind::HostRoundTrip) {
      barrier_wait(st, st.cursor, e.start);
      st.cursor = e.end;
      st.own_work = false;
      ++st.segment;
      const int period = segments_.at(st.segment).period;
      if (period != st.period) begin_period(st, period);
      drop_passed_segments();
      return;
    }
    st.cursor = std::max(st.cursor, e.end);
    const double d = e.end - e.start;
    if (e.kind != EventKind::Receive && d > 0) st.own_work = true;
    if (e.kind == EventKind::Compute && e.pass == Pass::Update) st.out.update_s += d;
    if (e.kind == EventKind::Receive) receive(st, e);
    const bool compute = e.kind == EventKind::Compute && is_pipeline_pass(e.pass);
    const bool stage_io = (e.kind == EventKind::HostInput || e.kind == EventKind::HostOutput) && e.stage >= 0;
    if (!compute && !stage_io) return;
    UnitStats& u = st.units[{e.stage, compute && is_backward(e.pass)}];
    u.seconds += d;
    if (!compute) return;
    settle_receives(st, u.last_segment < 0);
    ++u.count;
    u.last_segment = st.segment;
    if (u.index >= 0)
      for (PendingWait& w : st.waits) {
        Presence& p = w.units[static_cast<std::size_t>(u.index)];
        if (p == Presence::Undecided) p = Presence::Present;  // it ran before and after the wait
      }
    resolve_waits(st, false);
  }

  void on_transfer(const TransferRecord& t) {
    const auto found = copies_.find(t.copy);
    if (found == copies_.end()) return;
    CopyQueue& q = found->second;
    if (q.waiting.empty()) {
      q.unclaimed.push_back(t.start);
      return;
    }
    auto [st, serial] = q.waiting.front();
    q.waiting.pop_front();
    PendingReceive& r = st->receives[static_cast<std::size_t>(serial - st->receives_base)];
    r.senders_started = std::max(r.senders_started, t.start);
    --r.transfers_missing;
    finish_receives(*st, false);
  }

  Attribution finish(double end_time) {
    Attribution out;
    double bottleneck_work = 0;
    for (IpuState& st : ipus_) {
      barrier_wait(st, st.cursor, end_time);  // the last stretch ends with the step
      begin_period(st, st.period + 1);
      resolve_waits(st, true);
      settle_receives(st, true);
      finish_receives(st, true);
      std::map<int, double> per_stage;
      for (const auto& [u, stats] : st.units) {
        st.out.pipeline_work_s += stats.seconds;
        per_stage[u.first] += stats.seconds;
      }
      // Stages of equal work (a V schedule's mirrored halves) go to the first: a sum's last
      // bits, which depend on how the periods were added, do not pick one (as for the IPU below).
      double heaviest = -1;
      for (const auto& [stage, seconds] : per_stage)
        if (seconds > heaviest * (1 + 1e-12)) {
          heaviest = seconds;
          st.out.heaviest_stage = stage;
        }
      if (out.bottleneck_ipu < 0 || st.out.pipeline_work_s > bottleneck_work * (1 + 1e-12)) {
        out.bottleneck_ipu = st.out.ipu;
        out.bottleneck_stage = st.out.heaviest_stage;
        bottleneck_work = st.out.pipeline_work_s;
      }
      out.ipus.push_back(st.out);
    }
    std::stable_sort(slices_.begin(), slices_.end(), [](const IdleSlice& a, const IdleSlice& b) {
      return a.ipu != b.ipu ? a.ipu < b.ipu : a.start < b.start;
    });
    out.idle_slices = std::move(slices_);
    return out;
  }

private:
  void add(IpuState& st, IdleCause cause, double start, double seconds) {
    if (!(seconds > 0)) return;
    if (record_) slices_.push_back({st.out.ipu, start, start + seconds, cause});
    IdleBreakdown& b = st.out.idle;
    switch (cause) {
    case IdleCause::FillFlush: b.fill_flush_s += seconds; break;
    case IdleCause::Imbalance: b.imbalance_s += seconds; break;
    case IdleCause::CopyWait: b.copy_wait_s += seconds; break;
    case IdleCause::UpdateWait: b.update_wait_s += seconds; break;
    case IdleCause::TurnWait: b.turn_wait_s += seconds; break;
    }
  }

  // The wait of the IPU's current segment, from its last activity to the barrier's release.
  void barrier_wait(IpuState& st, double arrival, double release) {
    const Segment s = segments_.at(st.segment);
    const double wait = std::max(0.0, release - arrival);
    if (s.work && s.asynchronous) {
      add(st, IdleCause::FillFlush, arrival, wait);  // the asynchronous pipeline drains
    } else if (s.work) {
      if (one_at_a_time_) {
        add(st, st.own_work ? IdleCause::Imbalance : IdleCause::TurnWait, arrival, wait);
      } else if (wait > 0) {
        PendingWait w{wait, arrival, st.period, {}};
        for (const UnitStats* u : st.compute_units)
          w.units.push_back(u->last_segment == st.segment ? Presence::Present
                            : u->last_segment < 0         ? Presence::Missing  // not started in this batch
                                                          : Presence::Undecided);
        st.waits.push_back(std::move(w));
        resolve_waits(st, false);
      }
    } else if (s.copies || s.all_reduce) {
      add(st, IdleCause::CopyWait, arrival, wait);
    } else if (s.update) {
      add(st, IdleCause::UpdateWait, arrival, wait);
    } else {
      add(st, IdleCause::Imbalance, arrival, wait);
    }
  }

  // Units that have not run again by the end of a batch had finished: flush.
  void begin_period(IpuState& st, int period) {
    for (PendingWait& w : st.waits)
      for (Presence& p : w.units)
        if (p == Presence::Undecided) p = Presence::Missing;
    for (UnitStats* u : st.compute_units) u->last_segment = -1;
    st.period = period;
    resolve_waits(st, false);
  }

  // A wait is fill/flush up to the work per micro-batch of the units it lacks, the rest
  // imbalance. That work is the units' mean over the run up to the end of the wait's batch
  // (over the whole run when it has one batch), so a wait that lacks units is settled when
  // its batch ends; one that lacks none is imbalance as soon as that is known. `force`: the
  // run is over.
  void resolve_waits(IpuState& st, bool force) {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < st.waits.size(); ++k) {
      const PendingWait& w = st.waits[k];
      const bool batch_over = force || w.period < st.period;
      double missing = 0;
      bool ready = true;
      for (std::size_t i = 0; i < w.units.size() && ready; ++i) {
        if (w.units[i] == Presence::Present) continue;
        const UnitStats& u = *st.compute_units[i];
        ready = batch_over && (u.count > 0 || force);
        if (u.count > 0) missing += u.seconds / static_cast<double>(u.count);
      }
      if (!ready) {
        if (kept != k) st.waits[kept] = std::move(st.waits[k]);
        ++kept;
        continue;
      }
      const double fill = std::min(w.seconds, missing);
      add(st, IdleCause::FillFlush, w.start, fill);
      add(st, IdleCause::Imbalance, w.start + fill, w.seconds - fill);
    }
    st.waits.resize(kept);
  }

  // An asynchronous receive: waiting until the copy's senders started sending, then for
  // the bytes. The first part is fill/flush when the work it unblocks is the first of its
  // unit in this batch, imbalance otherwise.
  void receive(IpuState& st, const Event& e) {
    ProgramCursor& c = st.receive_steps;
    while (!c.done() && c.step().kind != StepKind::Receive) c.advance();
    if (c.done()) return;
    const Step& step = c.step();
    c.advance();
    const std::uint64_t serial = st.receives_base + st.receives.size();
    PendingReceive& r = st.receives.emplace_back();
    r.start = e.start;
    r.seconds = std::max(0.0, e.end - e.start);
    r.senders_started = e.start;
    for (const Transfer& t : step.transfers) {
      CopyQueue& q = copies_.at(t.copy);
      if (q.unclaimed.empty()) {
        ++r.transfers_missing;
        q.waiting.emplace_back(&st, serial);
      } else {
        r.senders_started = std::max(r.senders_started, q.unclaimed.front());
        q.unclaimed.pop_front();
      }
    }
    finish_receives(st, false);
  }

  void settle_receives(IpuState& st, bool first_of_unit) {
    for (; st.unsettled < st.receives_base + st.receives.size(); ++st.unsettled)
      st.receives[static_cast<std::size_t>(st.unsettled - st.receives_base)].first_of_unit = first_of_unit ? 1 : 0;
    finish_receives(st, false);
  }

  // `force`: the run is over; a transfer never reported leaves the whole receive to the copy.
  void finish_receives(IpuState& st, bool force) {
    while (!st.receives.empty()) {
      const PendingReceive& r = st.receives.front();
      if (!force && (r.first_of_unit < 0 || r.transfers_missing > 0)) return;
      const double sender_wait = std::clamp(r.senders_started - r.start, 0.0, r.seconds);
      add(st, r.first_of_unit != 0 ? IdleCause::FillFlush : IdleCause::Imbalance, r.start, sender_wait);
      add(st, IdleCause::CopyWait, r.start + sender_wait, r.seconds - sender_wait);
      st.receives.pop_front();
      ++st.receives_base;
    }
    if (force)
      for (auto& [copy, q] : copies_)
        std::erase_if(q.waiting, [&](const auto& w) { return w.first == &st; });
  }

public:
  bool can_add_periods() const { return !record_; }
  // Repeats nest (an inner loop's inside an outer loop's period): a list of marks each.
  void begin_marks() { marks_.emplace_back(); }
  void end_marks() { marks_.pop_back(); }
  void mark() {
    drop_passed_segments(true);  // dropping early changes nothing: every IPU has passed them
    marks_.back().push_back({ipus_, copies_, segments_});
    if (marks_.back().size() > 3) marks_.back().pop_front();
  }
  bool periodic(const RepeatedPeriods& r, std::int64_t periods) const;
  void add_periods(const RepeatedPeriods& r, std::int64_t periods);

private:
  struct Mark {
    std::vector<IpuState> ipus;  // their pointers still point into the live state
    std::map<int, CopyQueue> copies;
    SegmentStream segments;
  };
  std::vector<std::deque<Mark>> marks_;

  void drop_passed_segments(bool now = false) {
    if (ipus_.empty() || (!now && segments_.kept() <= drop_at_)) return;
    std::int64_t passed = ipus_.front().segment;
    for (const IpuState& st : ipus_) passed = std::min(passed, st.segment);
    segments_.drop_below(passed);
    drop_at_ = std::max<std::size_t>(16, 2 * segments_.kept());
  }

  SegmentStream segments_;
  bool one_at_a_time_;
  std::vector<IpuState> ipus_;
  std::map<int, std::size_t> index_of_ipu_;
  std::map<int, CopyQueue> copies_;  // copies taken by asynchronous receives
  std::size_t drop_at_ = 16;
  bool record_;
  std::vector<IdleSlice> slices_;
};

} // namespace ipusim::attribution_detail
