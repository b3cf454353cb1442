// Sharded execution timed as build_sharded lays it out (sim/schedule/sharded.cpp): one
// micro-batch at a time through the stages in order, each stage's IPU streaming in,
// computing and streaming out while the others wait, then the hand-over (a sync and the
// boundary's copies, or a sync alone when the next stage is on another IPU); every
// micro-batch the same, then the weight update per batch when training.
#include <algorithm>

#include "sim/search/evaluator.hpp"

namespace ipusim {

StepEstimate estimate_sharded_step(const Execution& ex, const Plan& plan, RouteTable& routes) {
  TransferTimer timer(ex, plan, routes);
  double micro_batch = 0;
  for (const PlanStage& stage : plan.stages) {
    double compute = stage.backward ? 0.0 : stage.forward_seconds;
    if (stage.backward || stage.backward_seconds > 0) compute += stage.backward_seconds;  // no recomputation
    double io = 0;
    if (ex.host_io && stage.host_input_bytes > 0) io += timer.host_seconds(stage.host_input_bytes);
    if (ex.host_io && stage.host_output_bytes > 0) io += timer.host_seconds(stage.host_output_bytes);
    if (io > 0) timer.note_host_streams({stage.ipu});  // every replica's copy of the stage streams at once
    if (ex.io_tiles > 0 && io > 0) {
      timer.contention |= kIoTiles;
      micro_batch += std::max(compute, io);
    } else {
      micro_batch += compute + io;
    }
    double copies = -1;  // none
    LinkUse use;
    for (const PlanCopy& c : plan.copies)
      if (c.from_stage == stage.id) copies = std::max(copies, timer.copy_seconds(c, use));
    if (use.contended()) timer.contention |= kSharedCopyLinks;
    const auto next = static_cast<std::size_t>(stage.id + 1);
    const bool same_ipu = next < plan.stages.size() && plan.stages[next].ipu == stage.ipu;
    if (copies >= 0) micro_batch += timer.sync() + copies;
    else if (!same_ipu) micro_batch += timer.sync();
  }
  const std::int64_t depth = ex.training ? ex.gradient_accumulation : ex.batches_per_step;
  const std::int64_t batches = ex.training ? ex.batches_per_step : 1;
  StepEstimate e;
  e.cycle_seconds = micro_batch;
  e.latency_seconds = micro_batch;
  double batch = static_cast<double>(depth) * micro_batch;
  if (ex.training) {
    e.update_seconds = timer.weight_update_seconds(false);
    batch += e.update_seconds;
  }
  e.step_seconds = timer.step_seconds(static_cast<double>(batches) * batch, batches * depth);
  e.contention = timer.contention;
  return e;
}

} // namespace ipusim
