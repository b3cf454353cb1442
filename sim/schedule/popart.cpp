// PopART pipelining: Repeat(batches) { fill; Repeat(D-S+1) { cycle }; flush; weight
// update }. In cycle c stage s works on micro-batch c-s. Within a cycle each IPU
// streams in, runs its active stages in ascending order, streams out; then one copy
// phase holds every stage boundary's copy, on every cycle, fill and flush included.
// The depth D is G with gradient accumulation; without it (training with G = 1, and
// inference) it is batchesPerStep and a step is one fill and flush (PipelineInfo in
// transforms/pipeline.cpp; popx/popprograms.cpp adds no outer loop then), and a training
// step updates the weights in the backward stages, every micro-batch (each VarUpdate
// takes the pipeline stage of the gradient it reads).
#include "sim/schedule/schedule.hpp"

#include "sim/io/checked_int.hpp"
#include "sim/io/input_error.hpp"

namespace ipusim {

std::vector<int> popart_stash_depth(const Plan& plan) {
  // Merged stages from the stashing stage to its backward, inclusive; none for the loss stage.
  return stash_depths("popart", plan.forward_stage_count, 0, plan.training);
}

namespace {

Schedule build_popart(const ScheduleContext& ctx) {
  check_pipelinable(ctx);
  const Plan& plan = ctx.plan;
  const Execution& ex = ctx.scenario.execution;
  const bool accumulating = plan.training && ex.gradient_accumulation > 1;
  const std::int64_t depth = accumulating ? ex.gradient_accumulation : ex.batches_per_step;
  const std::int64_t batches = accumulating ? ex.batches_per_step : 1;
  const auto S = static_cast<std::int64_t>(plan.stage_count());
  if (depth < S) {
    std::string why = std::to_string(plan.forward_stage_count) + " forward stage(s) after merging";
    if (plan.training) why += ", so 2*" + std::to_string(plan.forward_stage_count) + "-1 stages in training";
    if (plan.training && !accumulating) why += "; without gradient accumulation (G = 1) the depth is batchesPerStep";
    const std::string field = accumulating ? "gradientAccumulation" : "batchesPerStep";
    throw InputError(ctx.scenario.file, ctx.scenario.execution_pointer(field), "pipeline.depth",
                     std::string("PopART's depth rule needs ") + (accumulating ? "G" : "batchesPerStep") +
                         " >= S: " + std::to_string(depth) + " < " + std::to_string(S) + " (" + why + ")");
  }
  const std::int64_t cycles = checked_add(depth, S - 1, "PopART cycles");
  std::vector<const PlanCopy*> all_copies;
  for (const PlanCopy& c : plan.copies) all_copies.push_back(&c);

  ProgramBuilder b(ctx, "popart", ctx.recompute());
  // Cycle c of the first batch; every cycle of the main loop (S-1 <= c < depth) has all
  // stages active, so one of them, repeated with micro-batches one further each time, is all of them.
  auto cycle = [&](std::int64_t c) {
    for (const PlanIpu& ipu : plan.ipus) {
      std::vector<const PlanStage*> active;
      for (int s : ipu.stages)
        if (s <= c && c < s + depth) active.push_back(&plan.stages[s]);
      for (const PlanStage* st : active) b.host_input(*st, c - st->id);
      for (const PlanStage* st : active) {
        b.compute(*st, c - st->id);
        if (plan.training && !accumulating) b.stage_update(*st, c - st->id);
      }
      for (const PlanStage* st : active) b.host_output(*st, c - st->id);
    }
    b.exchange(all_copies);
  };
  b.repeat("batches", batches, depth, [&] {
    for (std::int64_t c = 0; c < S - 1; ++c) cycle(c);
    b.repeat("main cycles", depth - S + 1, 1, [&] { cycle(S - 1); });
    for (std::int64_t c = depth; c < cycles; ++c) cycle(c);
    if (accumulating) b.weight_updates();
  });
  return b.finish(checked_mul(batches, depth, "micro-batches"), checked_int(cycles, "PopART cycles"),
                  popart_stash_depth(plan));
}

} // namespace

const ScheduleInfo& popart_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"popart", "PopART pipelining: G+S-1 lockstep cycles (fill, main, flush), a copy phase every cycle",
                   &build_popart, "PopART and PopTorch (pipelined execution)"};
    // Merged stages from the stashing stage to its backward, inclusive; none for the loss stage.
    s.stash_depth = [](int stage, int N, std::int64_t) { return stage < N - 1 ? 2 * (N - 1 - stage) + 1 : 0; };
    // The depth rule build_popart enforces: depth >= S, S = 2P-1 stages in training, P in inference.
    s.accepts = [](int P, bool, std::int64_t depth, bool training) { return depth >= (training ? 2 * P - 1 : P); };
    s.step_model = StepModel::PopartCycles;
    s.lockstep_cycles = true;
    return s;
  }();
  return info;
}

} // namespace ipusim
