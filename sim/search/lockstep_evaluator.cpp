// TensorFlow's lockstep schedules timed as emit_steps lays them out (sim/schedule/tensorflow.cpp):
// per step each IPU streams in, computes its tasks and streams out; then one sync, and the
// copies the step produced (sync, copies, barrier) when there are any.
#include <algorithm>
#include <vector>

#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/schedule_evaluators.hpp"

namespace ipusim {

namespace {

class LockstepEvaluator {
public:
  LockstepEvaluator(const Execution& ex, const Plan& plan, RouteTable& routes)
      : ex_(ex), plan_(plan), hw_(routes.hardware()), timer_(ex, plan, routes) {
    recompute_ = ex.recomputation == Recomputation::Pipeline;
    const int stages = plan.stage_count();
    out_.resize(static_cast<std::size_t>(stages) * 2);
    for (const PlanCopy& c : plan.copies) out_[static_cast<std::size_t>(2 * c.from_stage + (c.gradient ? 1 : 0))].push_back(&c);
  }

  StepEstimate run() {
    const int N = plan_.forward_stage_count;
    const bool training = plan_.training;
    const std::int64_t depth = training ? ex_.gradient_accumulation : ex_.batches_per_step;
    const std::int64_t batches = training ? ex_.batches_per_step : 1;
    // The builder's rules (tensorflow.cpp); the scenario's file is filled in by estimate_step.
    check_tensorflow_pipeline(ex_.schedule, plan_, depth, "",
                              training ? "/execution/gradientAccumulation" : "/execution/batchesPerStep", "");
    const std::vector<LockstepRun> runs = tf_lockstep_runs(ex_.schedule, N, depth, training);
    StepEstimate e;
    double batch = 0;
    for (const LockstepRun& run : runs) {
      double body = 0;
      for (const auto& step : run.body) body += step_seconds(step);
      batch += body * static_cast<double>(run.times);
      // The steady period: the longest run's repeat, one micro-batch further each time.
      if (run.times > 1) e.cycle_seconds = std::max(e.cycle_seconds, body);
    }
    if (e.cycle_seconds == 0) e.cycle_seconds = batch / static_cast<double>(depth);
    e.fill_flush_seconds = batch - static_cast<double>(depth) * e.cycle_seconds;
    e.latency_seconds = first_micro_batch_seconds(runs, N, training);
    if (training) {
      e.update_seconds = timer_.weight_update_seconds(false);
      batch += e.update_seconds;
    }
    e.step_seconds = timer_.step_seconds(static_cast<double>(batches) * batch, batches * depth);
    e.contention = timer_.contention;
    return e;
  }

private:
  // The plan stage whose work a task runs, and which part of it.
  const PlanStage& stage_of(const LockstepTask& t) const {
    const int L = plan_.loss_stage;
    return plan_.stages[static_cast<std::size_t>(t.backward && t.stage != L ? 2 * L - t.stage : t.stage)];
  }
  double compute_seconds(const LockstepTask& t) const {
    const PlanStage& st = stage_of(t);
    if (!t.backward) return st.backward ? 0.0 : st.forward_seconds;
    return st.backward || st.backward_seconds > 0 ? st.backward_seconds + (recompute_ ? st.recompute_seconds : 0.0) : 0.0;
  }

  double step_seconds(const std::vector<LockstepTask>& step) {
    const int L = plan_.loss_stage;
    double slowest = 0;
    std::vector<int> streaming;  // IPUs with host streams in this step
    for (const PlanIpu& ipu : plan_.ipus) {
      double compute = 0, io = 0;
      for (const LockstepTask& t : step) {
        if (plan_.stages[static_cast<std::size_t>(t.stage)].ipu != ipu.id) continue;
        compute += compute_seconds(t);
        if (t.backward || !ex_.host_io) continue;
        const PlanStage& st = plan_.stages[static_cast<std::size_t>(t.stage)];
        if (st.host_input_bytes > 0) io += timer_.host_seconds(st.host_input_bytes);
        if (st.host_output_bytes > 0) io += timer_.host_seconds(st.host_output_bytes);
      }
      if (io > 0) streaming.push_back(ipu.id);
      if (ex_.io_tiles > 0 && io > 0) {
        timer_.contention |= kIoTiles;
        slowest = std::max(slowest, std::max(compute, io));
      } else {
        slowest = std::max(slowest, compute + io);
      }
    }
    timer_.note_host_streams(streaming);
    double copies = 0;
    LinkUse use;
    for (const LockstepTask& t : step) {
      const int from = t.backward ? 2 * L - t.stage : t.stage;
      for (const PlanCopy* c : out_[static_cast<std::size_t>(2 * from + (t.backward ? 1 : 0))])
        copies = std::max(copies, timer_.copy_seconds(*c, use));
    }
    if (use.contended()) timer_.contention |= kSharedCopyLinks;
    return slowest + timer_.sync() + copies;
  }

  // From the step of micro-batch 0's first task to the end of the step of its last (its
  // backward through stage 0, or its forward through the last stage in inference).
  double first_micro_batch_seconds(const std::vector<LockstepRun>& runs, int N, bool training) {
    double t = 0;
    bool started = false;
    for (const LockstepRun& run : runs)
      for (std::int64_t k = 0; k < run.times; ++k)
        for (const auto& step : run.body) {
          bool first = false, last = false;
          for (const LockstepTask& task : step) {
            if (task.micro_batch + k != 0) continue;
            first = true;
            last = last || (training ? task.backward && task.stage == 0 : task.stage == N - 1);
          }
          started = started || first;
          if (started) t += step_seconds(step);
          if (last) return t;
        }
    return t;
  }

  const Execution& ex_;
  const Plan& plan_;
  const HardwareConfig& hw_;
  TransferTimer timer_;
  bool recompute_ = false;
  std::vector<std::vector<const PlanCopy*>> out_;  // by 2 x from_stage + gradient
};

} // namespace

StepEstimate estimate_lockstep_step(const Execution& ex, const Plan& plan, RouteTable& routes) {
  return LockstepEvaluator(ex, plan, routes).run();
}

} // namespace ipusim
