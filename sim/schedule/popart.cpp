// PopART pipelining: Repeat(batches) { fill; Repeat(G-S+1) { cycle }; flush; weight
// update }. In cycle c stage s works on micro-batch c-s. Within a cycle each IPU
// streams in, runs its active stages in ascending order, streams out; then one copy
// phase holds every stage boundary's copy, on every cycle, fill and flush included.
#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

void check_pipeline(const ScheduleContext& ctx, std::int64_t depth) {
  const Scenario& sc = ctx.scenario;
  const Plan& plan = ctx.plan;
  if (!plan.annotated)
    throw InputError(sc.model.file, "/ops", "pipeline.needs-virtual-graphs",
                     "pipelining needs virtualGraph annotations on the ops; this model has none");
  if (plan.ipus.size() < 2)
    throw InputError(sc.model.file, "/ops", "pipeline.single-ipu",
                     "pipelining needs more than one IPU; every op of this model is on virtualGraph " +
                         std::to_string(plan.ipus.front().id));
  const auto S = static_cast<std::int64_t>(plan.stage_count());
  if (depth < S) {
    const bool training = sc.execution.training;
    std::string why = std::to_string(plan.forward_stage_count) + " forward stage(s) after merging";
    if (training) why += ", so 2*" + std::to_string(plan.forward_stage_count) + "-1 stages in training";
    throw InputError(sc.file, sc.execution_pointer(training ? "gradientAccumulation" : "batchesPerStep"),
                     "pipeline.depth",
                     std::string("PopART's depth rule needs ") + (training ? "G" : "batchesPerStep") +
                         " >= S: " + std::to_string(depth) + " < " + std::to_string(S) + " (" + why + ")");
  }
}

} // namespace

Schedule build_popart(const ScheduleContext& ctx) {
  const Execution& ex = ctx.scenario.execution;
  const std::int64_t depth = ex.training ? ex.gradient_accumulation : ex.batches_per_step;
  const std::int64_t batches = ex.training ? ex.batches_per_step : 1;
  check_pipeline(ctx, depth);
  const Plan& plan = ctx.plan;
  const std::int64_t cycles = depth + plan.stage_count() - 1;
  std::vector<const PlanCopy*> all_copies;
  for (const PlanCopy& c : plan.copies) all_copies.push_back(&c);

  ProgramBuilder b(ctx, "popart");
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    for (std::int64_t c = 0; c < cycles; ++c) {
      for (const PlanIpu& ipu : plan.ipus) {
        std::vector<const PlanStage*> active;
        for (int s : ipu.stages)
          if (s <= c && c < s + depth) active.push_back(&plan.stages[s]);
        auto micro_batch = [&](const PlanStage* st) { return batch * depth + c - st->id; };
        for (const PlanStage* st : active) b.host_input(*st, micro_batch(st));
        for (const PlanStage* st : active) b.compute(*st, micro_batch(st));
        for (const PlanStage* st : active) b.host_output(*st, micro_batch(st));
      }
      b.exchange(all_copies);
    }
    if (ex.training) b.weight_updates();
  }
  return b.finish(batches * depth, static_cast<int>(cycles));
}

} // namespace ipusim
