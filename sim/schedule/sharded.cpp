// Sharded execution (virtualGraph only, pipelining off): one micro-batch at a time
// through the stages in order, forward then backward when training; only one IPU
// works at any moment. Every hand-over from one stage to the next is a sync, with
// the boundary's copies when there are any.
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

Schedule build_sharded(const ScheduleContext& ctx) {
  const Execution& ex = ctx.scenario.execution;
  const std::int64_t per_batch = ex.training ? ex.gradient_accumulation : ex.batches_per_step;
  const std::int64_t batches = ex.training ? ex.batches_per_step : 1;
  ProgramBuilder b(ctx, "sharded", /*recompute=*/false);
  b.repeat("batches", batches, per_batch, [&] {
    b.repeat("micro-batches", per_batch, 1, [&] {
      for (const PlanStage& stage : ctx.plan.stages) {
        b.host_input(stage, 0);
        b.compute(stage, 0);
        b.host_output(stage, 0);
        std::vector<const PlanCopy*> outgoing;
        for (const PlanCopy& c : ctx.plan.copies)
          if (c.from_stage == stage.id) outgoing.push_back(&c);
        // The next stage on the same IPU (TensorFlow keeps such stages) simply follows.
        const auto next = static_cast<std::size_t>(stage.id + 1);
        const bool same_ipu = next < ctx.plan.stages.size() && ctx.plan.stages[next].ipu == stage.ipu;
        if (!outgoing.empty()) b.exchange(outgoing);
        else if (!same_ipu) b.sync_all(ctx.sync_seconds);
      }
    });
    if (ex.training) b.weight_updates();
  });
  // One micro-batch at a time: each forward stage keeps one micro-batch's activations for its backward.
  std::vector<int> stash(static_cast<std::size_t>(ctx.plan.forward_stage_count), 0);
  if (ex.training)
    for (int s = 0; s < ctx.plan.loss_stage; ++s) stash[s] = 1;
  Schedule schedule = b.finish(batches * per_batch, 0, stash);
  schedule.one_stage_at_a_time = true;
  return schedule;
}

} // namespace

const ScheduleInfo& sharded_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"sharded", "one micro-batch at a time through the IPUs in stage order; one IPU busy at a time",
                   &build_sharded, "PopART and PopTorch (sharded execution), TensorFlow (sharding)"};
    s.pipeline = false;
    return s;
  }();
  return info;
}

} // namespace ipusim
