// GPU-style asynchronous schedules: no lockstep; each IPU runs its list of stage tasks
// in order, a task starting as soon as its input copy has arrived, its output copies
// sent without waiting. One forward stage per IPU, as in the GPU literature (training 1F1B
// with several on an IPU runs from its order, order_lowering.cpp).
// - GPipe (Huang et al. 2019): all forwards, then all backwards.
// - 1F1B / PipeDream-Flush (Narayanan et al. 2021): stage s runs min(p-s-1, m) warm-up
//   forwards, then alternates one forward and one backward, then drains its backwards.
#include <algorithm>
#include <cstdint>
#include <map>

#include "sim/io/input_error.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

enum class Order { GPipe, OneFOneB };

// The loops of one stage's task list, each a run of identical tasks (labels one further
// per iteration): GPipe m forwards then m backwards; 1F1B min(p-s-1, m) warm-up forwards,
// then forward w+i with backward i, then the last w backwards.
struct Phase {
  const char* name;
  std::int64_t times;
  std::int64_t forward = -1;   // the forward's micro-batch in iteration 0, or none
  std::int64_t backward = -1;  // likewise the backward's, run after the forward
};

std::vector<Phase> phases(Order order, int s, int p, std::int64_t m, bool training) {
  if (!training) return {{"forwards", m, 0, -1}};
  if (order == Order::GPipe) return {{"forwards", m, 0, -1}, {"backwards", m, -1, 0}};
  const std::int64_t w = std::min<std::int64_t>(p - s - 1, m);
  return {{"1F1B warm-up", w, 0, -1}, {"1F1B steady", m - w, w, 0}, {"1F1B cool-down", w, -1, m - w}};
}

Schedule build_async(const ScheduleContext& ctx, Order order) {
  check_pipelinable(ctx);
  const Plan& plan = ctx.plan;
  const int p = plan.forward_stage_count;
  const int L = plan.loss_stage;
  const std::string name = order == Order::GPipe ? "gpipe" : "1f1b";
  for (const PlanIpu& ipu : plan.ipus) {
    // Training 1F1B with stages sharing an IPU runs from its order over one part per stage
    // (order_lowering.cpp: each IPU runs its stages' ops in the shared-IPU evaluator's order).
    if (order == Order::OneFOneB && plan.training && ipu.stages.size() > 2u) return build_from_order(ctx);
    if (ipu.stages.size() > (plan.training ? 2u : 1u))
      throw InputError(ctx.scenario.model.file, "/ops", "pipeline.one-stage-per-ipu",
                       "the " + name + " schedule runs one forward stage per IPU, but IPU " + std::to_string(ipu.id) +
                           " holds several (stages that return to an IPU need popart or tf-grouped" +
                           (order == Order::OneFOneB ? std::string(", or training for 1f1b)") : std::string(")")));
  }
  const std::int64_t m = ctx.depth();
  ProgramBuilder b(ctx, name, ctx.recompute());
  auto forward = [&](const PlanStage& fwd, std::int64_t mb) {
    b.receive(fwd.ipu, ctx.copies_into(fwd.id, false));
    b.host_input(fwd, mb);
    b.compute(fwd, mb, Pass::Forward);
    b.host_output(fwd, mb);
    b.send(fwd.ipu, ctx.copies_from(fwd.id, false));
  };
  auto backward = [&](int s, std::int64_t mb) {
    const PlanStage& bwd = plan.stages[2 * L - s];
    b.receive(plan.stages[s].ipu, ctx.copies_into(bwd.id, true));
    b.compute(bwd, mb, Pass::Backward);
    b.send(plan.stages[s].ipu, ctx.copies_from(bwd.id, true));
  };
  b.repeat("batches", ctx.batches(), m, [&] {
    std::map<std::string, int> loops;  // one loop per phase name, shared by the stages
    for (int s = 0; s < p; ++s)
      for (const Phase& phase : phases(order, s, p, m, plan.training)) {
        const auto found = loops.find(phase.name);
        const int id = b.repeat(phase.name, phase.times, 1, [&] {
          if (phase.forward >= 0) forward(plan.stages[s], phase.forward);
          if (phase.backward >= 0) backward(s, phase.backward);
        }, found == loops.end() ? -1 : found->second);
        loops.emplace(phase.name, id);
      }
    if (plan.training) b.weight_updates(/*all_at_once=*/true);
    else b.sync_all(ctx.sync_seconds);
  });
  // In flight per stage: GPipe holds every micro-batch; 1F1B at most p-s.
  return b.finish(ctx.batches() * m, 0, stash_depths(name, p, m, plan.training));
}

Schedule build_gpipe(const ScheduleContext& ctx) { return build_async(ctx, Order::GPipe); }
Schedule build_1f1b(const ScheduleContext& ctx) { return build_async(ctx, Order::OneFOneB); }

// One forward stage per IPU (training 1F1B also runs several on an IPU, from its order, but the
// planner's evaluator times one per IPU).
bool one_stage_per_ipu(int, bool ipu_holds_two_stages, std::int64_t, bool) { return !ipu_holds_two_stages; }

} // namespace

// GPU-framework schedules no IPU framework offers: what-if, their weight updates all at once.
const ScheduleInfo& gpipe_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"gpipe", "GPipe: all forwards then all backwards, asynchronous (a stage starts when its input arrives)",
                   &build_gpipe, ""};
    s.stash_depth = [](int, int, std::int64_t depth) { return static_cast<int>(std::min<std::int64_t>(depth, INT32_MAX)); };
    s.accepts = &one_stage_per_ipu;
    s.step_model = StepModel::AllForwardsFirst;
    s.follows_weight_update_setting = false;
    return s;
  }();
  return info;
}

const ScheduleInfo& one_f_one_b_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"1f1b", "1F1B (PipeDream-Flush): warm-up forwards, then one forward one backward, asynchronous",
                   &build_1f1b, ""};
    s.stash_depth = [](int stage, int N, std::int64_t depth) {
      return static_cast<int>(std::min<std::int64_t>(N - stage, depth));
    };
    s.accepts = &one_stage_per_ipu;
    s.step_model = StepModel::OneForwardOneBackward;
    s.follows_weight_update_setting = false;
    s.order = &one_f_one_b_order();  // training with stages sharing an IPU (build_async)
    return s;
  }();
  return info;
}

} // namespace ipusim
