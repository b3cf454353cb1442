#include "sim/search/evaluator.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/schedule_evaluators.hpp"

namespace ipusim {

namespace {

// PopART's schedule as build_popart lays it out: in cycle c stage s is active when
// s <= c < s + D; every IPU streams in, runs its active stages, streams out; then the sync
// and the copy phase (every copy of every replica at once). Cycles S-1 .. D-1 have every
// stage active and are identical: one is costed and counted D-S+1 times.
class PopartEvaluator {
public:
  PopartEvaluator(const Execution& ex, const Plan& plan, RouteTable& routes)
      : ex_(ex), plan_(plan), hw_(routes.hardware()), timer_(ex, plan, routes) {
    recompute_ = ex.recomputation == Recomputation::Pipeline;
  }

  StepEstimate run() {
    const bool accumulating = plan_.training && ex_.gradient_accumulation > 1;
    const std::int64_t depth = accumulating ? ex_.gradient_accumulation : ex_.batches_per_step;
    const std::int64_t batches = accumulating ? ex_.batches_per_step : 1;
    const auto S = static_cast<std::int64_t>(plan_.stage_count());
    if (depth < S)
      throw InputError("", accumulating ? "/execution/gradientAccumulation" : "/execution/batchesPerStep",
                       "pipeline.depth", "PopART's depth rule needs the depth >= S: " + std::to_string(depth) + " < " +
                                             std::to_string(S));
    const double copy_phase = copy_phase_seconds();
    auto cycle = [&](std::int64_t c) {
      double slowest = 0;
      for (const PlanIpu& ipu : plan_.ipus) slowest = std::max(slowest, segment_seconds(ipu, c, depth, accumulating));
      return slowest + timer_.sync() + copy_phase;
    };
    StepEstimate e;
    double ramps = 0;
    for (std::int64_t c = 0; c < S - 1; ++c) ramps += cycle(c);
    for (std::int64_t c = depth; c < depth + S - 1; ++c) ramps += cycle(c);
    e.cycle_seconds = cycle(S - 1);
    double batch = ramps + static_cast<double>(depth - S + 1) * e.cycle_seconds;
    e.fill_flush_seconds = ramps - static_cast<double>(S - 1) * e.cycle_seconds;
    if (accumulating) {
      e.update_seconds = timer_.weight_update_seconds(false);
      batch += e.update_seconds;
    }
    e.step_seconds = timer_.step_seconds(static_cast<double>(batches) * batch, batches * depth);
    e.latency_seconds = static_cast<double>(S) * e.cycle_seconds;
    e.contention = timer_.contention;
    return e;
  }

private:
  // One IPU's work in lockstep cycle c: host inputs, its active stages, host outputs.
  double segment_seconds(const PlanIpu& ipu, std::int64_t c, std::int64_t depth, bool accumulating) {
    double compute = 0, io = 0;
    bool streams = false;
    for (int s : ipu.stages) {
      if (!(s <= c && c < s + depth)) continue;
      const PlanStage& st = plan_.stages[static_cast<std::size_t>(s)];
      if (!st.backward) compute += st.forward_seconds;
      if (st.backward || st.backward_seconds > 0)
        compute += st.backward_seconds + (recompute_ ? st.recompute_seconds : 0.0);
      if (plan_.training && !accumulating && (st.update_seconds > 0 || st.state_bytes > 0)) {
        compute += st.update_seconds + (st.state_bytes > 0 ? 2 * timer_.memory_seconds(st.state_bytes) : 0.0);
        if (timer_.replicas() > 1) timer_.contention |= kStageUpdatesWithReplicas;
      }
      if (ex_.host_io && st.host_input_bytes > 0) io += timer_.host_seconds(st.host_input_bytes), streams = true;
      if (ex_.host_io && st.host_output_bytes > 0) io += timer_.host_seconds(st.host_output_bytes), streams = true;
    }
    if (streams && hw_.host_link.shared_by > 1 && !timer_.prefetched() && !(timer_.contention & kSharedHostLink))
      note_host_sharing(ipu, c, depth);
    if (ex_.io_tiles > 0 && io > 0) {
      timer_.contention |= kIoTiles;
      return std::max(compute, io);
    }
    return compute + io;
  }

  // IPUs behind one host link streaming in the same cycle share it.
  void note_host_sharing(const PlanIpu& me, std::int64_t c, std::int64_t depth) {
    const int group = hw_.host_link.shared_by;
    const int replicas = timer_.replicas();
    for (int r = 0; r < replicas; ++r)
      for (int r2 = 0; r2 < replicas; ++r2)
        for (const PlanIpu& other : plan_.ipus) {
          if ((r2 == r && other.id == me.id) || timer_.physical(r, me.id) / group != timer_.physical(r2, other.id) / group)
            continue;
          for (int s : other.stages) {
            const PlanStage& st = plan_.stages[static_cast<std::size_t>(s)];
            if (s <= c && c < s + depth && (st.host_input_bytes > 0 || st.host_output_bytes > 0)) {
              timer_.contention |= kSharedHostLink;
              return;
            }
          }
        }
  }

  // Every copy of every replica moves at once in each cycle's copy phase.
  double copy_phase_seconds() {
    double longest = 0;
    LinkUse use;
    for (const PlanCopy& c : plan_.copies) longest = std::max(longest, timer_.copy_seconds(c, use));
    if (use.contended()) timer_.contention |= kSharedCopyLinks;
    return longest;
  }

  const Execution& ex_;
  const Plan& plan_;
  const HardwareConfig& hw_;
  TransferTimer timer_;
  bool recompute_ = false;
};

} // namespace

const std::vector<std::string>& evaluated_schedules() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ScheduleInfo& s : schedules())
      if (s.step_model != StepModel::None) out.push_back(s.name);
    return out;
  }();
  return names;
}

bool has_evaluator(const std::string& schedule) {
  const auto& names = evaluated_schedules();
  return std::find(names.begin(), names.end(), schedule) != names.end();
}

StepEstimate estimate_step(const Execution& ex, const Plan& plan, RouteTable& routes) {
  switch (schedule_info(ex.schedule).step_model) {
  case StepModel::PopartCycles: return PopartEvaluator(ex, plan, routes).run();
  case StepModel::AllForwardsFirst:
  case StepModel::OneForwardOneBackward: return estimate_async_step(ex, plan, routes);
  case StepModel::TensorFlowSteps: return estimate_lockstep_step(ex, plan, routes);
  case StepModel::None: break;
  }
  throw std::invalid_argument("estimate_step: the " + ex.schedule + " schedule has no exact evaluator");
}

StepEstimate estimate_step(const Scenario& scenario, const Plan& plan) {
  RouteTable routes(scenario.hardware);
  try {
    return estimate_step(scenario.execution, plan, routes);
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    throw InputError(scenario.file, e.pointer(), e.rule(), e.message());
  }
}

} // namespace ipusim
