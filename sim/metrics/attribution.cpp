#include "sim/metrics/attribution.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace ipusim {

const char* idle_cause_name(IdleCause cause) {
  switch (cause) {
  case IdleCause::FillFlush: return "fill-flush";
  case IdleCause::Imbalance: return "imbalance";
  case IdleCause::CopyWait: return "copy-wait";
  case IdleCause::UpdateWait: return "update-wait";
  case IdleCause::TurnWait: return "turn-wait";
  }
  return "?";
}

namespace {

// A piece of forward or backward work of one stage: (stage, backward?).
using Unit = std::pair<int, bool>;

bool is_pipeline_pass(Pass pass) { return pass == Pass::Forward || pass == Pass::Backward; }

// What happens between two barriers, over all IPUs (every program holds the same syncs,
// so segment k is the same stretch of the step on every IPU).
struct Segment {
  bool work = false;       // forward or backward compute somewhere
  bool copies = false;     // a copy phase of the pipeline
  bool all_reduce = false; // gradient collectives
  bool update = false;     // weight updates
  bool asynchronous = false;  // waits for asynchronous copies (GPU-style schedules)
  int period = 0;          // batches of micro-batches between weight-update phases
};

std::vector<Segment> segments_of(const Schedule& schedule) {
  std::vector<Segment> segments;
  for (const Program& program : schedule.programs) {
    std::size_t k = 0;
    for (const Step& step : program.steps) {
      if (segments.size() <= k) segments.resize(k + 1);
      Segment& s = segments[k];
      switch (step.kind) {
      case StepKind::Sync: ++k; break;
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
    if (segments.size() <= k) segments.resize(k + 1);
  }
  // A weight-update phase ends a batch: fill and flush are counted per batch.
  int period = 0;
  bool in_update = false;
  for (Segment& s : segments) {
    const bool update_phase = !s.work && (s.update || s.all_reduce);
    if (in_update && !update_phase) ++period;
    in_update = update_phase;
    s.period = period;
  }
  return segments;
}

struct IpuSegment {
  double arrival = 0;   // when the IPU reached the barrier closing the segment
  double release = -1;  // when the barrier let it go (-1: the segment has no closing barrier)
  bool own_work = false;
  std::set<Unit> units;
};

// Per IPU: its events split by barrier, and its work per stage.
struct IpuWalk {
  std::vector<IpuSegment> segments;
  std::map<Unit, double> unit_seconds;
  std::map<Unit, int> unit_count;  // compute events: micro-batches
  std::map<Unit, std::map<int, std::pair<std::size_t, std::size_t>>> unit_span;  // period -> first, last segment
  double update_s = 0;
  double last_end = 0;
};

class Attributor {
public:
  Attributor(const Schedule& schedule, const RunLog& log, Mode mode, std::vector<IdleInterval>* intervals)
      : schedule_(schedule), log_(log), intervals_(intervals), segments_(segments_of(schedule)),
        one_at_a_time_(mode == Mode::Sharded || schedule.one_stage_at_a_time) {
    for (std::size_t i = 0; i < log.transfers.size(); ++i)
      if (log.transfers[i].copy >= 0) transfers_by_copy_[log.transfers[i].copy].push_back(i);
  }

  Attribution run() {
    std::map<int, std::vector<const Event*>> events;
    for (const Event& e : log_.events) events[e.ipu].push_back(&e);
    Attribution out;
    for (const Program& program : schedule_.programs) {
      IpuAttribution a;
      a.ipu = program.ipu;
      attribute_ipu(program, events[program.ipu], a);
      out.ipus.push_back(a);
    }
    for (const IpuAttribution& a : out.ipus)
      if (out.bottleneck_ipu < 0 || a.pipeline_work_s > bottleneck_work_ * (1 + 1e-12)) {
        out.bottleneck_ipu = a.ipu;
        out.bottleneck_stage = a.heaviest_stage;
        bottleneck_work_ = a.pipeline_work_s;
      }
    return out;
  }

private:
  const Segment& segment(std::size_t k) const {
    static const Segment none;
    return k < segments_.size() ? segments_[k] : none;
  }

  void add(IpuAttribution& a, IdleCause cause, double start, double seconds) {
    if (!(seconds > 0)) return;
    IdleBreakdown& b = a.idle;
    switch (cause) {
    case IdleCause::FillFlush: b.fill_flush_s += seconds; break;
    case IdleCause::Imbalance: b.imbalance_s += seconds; break;
    case IdleCause::CopyWait: b.copy_wait_s += seconds; break;
    case IdleCause::UpdateWait: b.update_wait_s += seconds; break;
    case IdleCause::TurnWait: b.turn_wait_s += seconds; break;
    }
    if (intervals_) intervals_->push_back({a.ipu, start, start + seconds, cause});
  }

  IpuWalk walk(const Program& program, const std::vector<const Event*>& events) const {
    IpuWalk w;
    w.segments.emplace_back();
    double cursor = 0;  // end of the IPU's last activity
    for (const Event* e : events) {
      std::size_t k = w.segments.size() - 1;
      const double d = e->end - e->start;
      if (e->kind == EventKind::Sync) {
        w.segments[k].arrival = cursor;
        w.segments[k].release = e->start;
        w.segments.emplace_back();
        cursor = e->end;
        continue;
      }
      cursor = std::max(cursor, e->end);
      IpuSegment& s = w.segments[k];
      if (e->kind != EventKind::Receive && d > 0) s.own_work = true;
      const int period = segment(k).period;
      if (e->kind == EventKind::Compute && e->pass == Pass::Update) w.update_s += d;
      const bool stage_work = (e->kind == EventKind::Compute && is_pipeline_pass(e->pass)) ||
                              ((e->kind == EventKind::HostInput || e->kind == EventKind::HostOutput) && e->stage >= 0);
      if (!stage_work) continue;
      const Unit u{e->stage, e->kind == EventKind::Compute && e->pass == Pass::Backward};
      w.unit_seconds[u] += d;
      if (e->kind != EventKind::Compute) continue;
      ++w.unit_count[u];
      s.units.insert(u);
      auto [it, fresh] = w.unit_span[u].try_emplace(period, k, k);
      if (!fresh) it->second.second = k;
    }
    w.segments.back().arrival = cursor;
    w.last_end = cursor;
    (void)program;
    return w;
  }

  // Work per micro-batch of the IPU's stages that have not started yet, or have already
  // finished, in segment k's batch: what the IPU would be doing in a full pipeline.
  double missing_work(const IpuWalk& w, std::size_t k) const {
    double missing = 0;
    const int period = segment(k).period;
    for (const auto& [u, spans] : w.unit_span) {
      const auto span = spans.find(period);
      if (span != spans.end() && k >= span->second.first && k <= span->second.second) continue;
      const int n = w.unit_count.at(u);
      missing += w.unit_seconds.at(u) / n;
    }
    return missing;
  }

  void barrier_wait(IpuAttribution& a, const IpuWalk& w, std::size_t k, double start, double wait) {
    const Segment& s = segment(k);
    if (s.work && s.asynchronous) {
      add(a, IdleCause::FillFlush, start, wait);  // the asynchronous pipeline drains
    } else if (s.work) {
      if (one_at_a_time_) {
        add(a, w.segments[k].own_work ? IdleCause::Imbalance : IdleCause::TurnWait, start, wait);
      } else {
        const double fill = std::min(wait, missing_work(w, k));
        add(a, IdleCause::FillFlush, start, fill);
        add(a, IdleCause::Imbalance, start + fill, wait - fill);
      }
    } else if (s.copies || s.all_reduce) {
      add(a, IdleCause::CopyWait, start, wait);
    } else if (s.update) {
      add(a, IdleCause::UpdateWait, start, wait);
    } else {
      add(a, IdleCause::Imbalance, start, wait);
    }
  }

  // An asynchronous receive: waiting until the copy's sender started sending, then for
  // the bytes. The first part is fill/flush when the work it unblocks is the first of its
  // stage in this batch, imbalance otherwise.
  void receive_waits(IpuAttribution& a, const Program& program, const std::vector<const Event*>& events,
                     const IpuWalk& w) {
    std::vector<const Step*> receives;
    for (const Step& step : program.steps)
      if (step.kind == StepKind::Receive) receives.push_back(&step);
    std::size_t next_receive = 0, k = 0;
    std::map<Unit, int> seen_in_period;
    int period = 0;
    struct Pending {
      double start, sender_wait, copy_wait;
    };
    std::vector<Pending> pending;
    auto settle = [&](bool first_of_unit) {
      for (const Pending& p : pending) {
        add(a, first_of_unit ? IdleCause::FillFlush : IdleCause::Imbalance, p.start, p.sender_wait);
        add(a, IdleCause::CopyWait, p.start + p.sender_wait, p.copy_wait);
      }
      pending.clear();
    };
    for (const Event* e : events) {
      if (e->kind == EventKind::Sync) {
        ++k;
        continue;
      }
      if (segment(k).period != period) {
        period = segment(k).period;
        seen_in_period.clear();
      }
      if (e->kind == EventKind::Receive && next_receive < receives.size()) {
        const Step& step = *receives[next_receive++];
        double senders_started = e->start;
        for (const Transfer& t : step.transfers) {
          auto& queue = transfers_by_copy_[t.copy];
          std::size_t& used = transfers_used_[t.copy];
          if (used < queue.size()) senders_started = std::max(senders_started, log_.transfers[queue[used++]].start);
        }
        const double d = std::max(0.0, e->end - e->start);
        const double sender_wait = std::clamp(senders_started - e->start, 0.0, d);
        pending.push_back({e->start, sender_wait, d - sender_wait});
      } else if (e->kind == EventKind::Compute && is_pipeline_pass(e->pass)) {
        const Unit u{e->stage, e->pass == Pass::Backward};
        settle(seen_in_period[u]++ == 0);
      }
    }
    settle(true);
    (void)w;
  }

  void attribute_ipu(const Program& program, const std::vector<const Event*>& events, IpuAttribution& a) {
    const IpuWalk w = walk(program, events);
    a.update_s = w.update_s;
    std::map<int, double> per_stage;
    for (const auto& [u, seconds] : w.unit_seconds) {
      a.pipeline_work_s += seconds;
      per_stage[u.first] += seconds;
    }
    double heaviest = -1;
    for (const auto& [stage, seconds] : per_stage)
      if (seconds > heaviest) {
        heaviest = seconds;
        a.heaviest_stage = stage;
      }
    for (std::size_t k = 0; k < w.segments.size(); ++k) {
      const IpuSegment& s = w.segments[k];
      const double release = s.release >= 0 ? s.release : log_.end_time;  // the last stretch ends with the step
      barrier_wait(a, w, k, s.arrival, std::max(0.0, release - s.arrival));
    }
    receive_waits(a, program, events, w);
  }

  const Schedule& schedule_;
  const RunLog& log_;
  std::vector<IdleInterval>* intervals_;
  std::vector<Segment> segments_;
  bool one_at_a_time_;
  std::map<int, std::vector<std::size_t>> transfers_by_copy_;
  std::map<int, std::size_t> transfers_used_;
  double bottleneck_work_ = 0;
};

} // namespace

Attribution attribute_time(const Schedule& schedule, const RunLog& log, Mode mode, std::vector<IdleInterval>* intervals) {
  return Attributor(schedule, log, mode, intervals).run();
}

} // namespace ipusim
