// GPU-style asynchronous schedules: no lockstep; each IPU runs its list of stage tasks
// in order, a task starting as soon as its input copy has arrived, its output copies
// sent without waiting. One forward stage per IPU, as in the GPU literature.
// - GPipe (Huang et al. 2019): all forwards, then all backwards.
// - 1F1B / PipeDream-Flush (Narayanan et al. 2021): stage s runs min(p-s-1, m) warm-up
//   forwards, then alternates one forward and one backward, then drains its backwards.
#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

enum class Order { GPipe, OneFOneB };

struct Task {
  std::int64_t micro_batch;
  bool backward;
};

std::vector<Task> task_order(Order order, int s, int p, std::int64_t m, bool training) {
  std::vector<Task> tasks;
  if (!training || order == Order::GPipe) {
    for (std::int64_t i = 0; i < m; ++i) tasks.push_back({i, false});
    if (training)
      for (std::int64_t i = 0; i < m; ++i) tasks.push_back({i, true});
    return tasks;
  }
  const std::int64_t warmup = std::min<std::int64_t>(p - s - 1, m);
  for (std::int64_t i = 0; i < warmup; ++i) tasks.push_back({i, false});
  for (std::int64_t i = 0; i < m - warmup; ++i) {
    tasks.push_back({warmup + i, false});
    tasks.push_back({i, true});
  }
  for (std::int64_t i = m - warmup; i < m; ++i) tasks.push_back({i, true});
  return tasks;
}

Schedule build_async(const ScheduleContext& ctx, Order order) {
  check_pipelinable(ctx);
  const Plan& plan = ctx.plan;
  const int p = plan.forward_stage_count;
  const int L = plan.loss_stage;
  const std::string name = order == Order::GPipe ? "gpipe" : "1f1b";
  for (const PlanIpu& ipu : plan.ipus)
    if (ipu.stages.size() > (plan.training ? 2u : 1u))
      throw InputError(ctx.scenario.model.file, "/ops", "pipeline.one-stage-per-ipu",
                       "the " + name + " schedule runs one forward stage per IPU, but IPU " + std::to_string(ipu.id) +
                           " holds several (stages that return to an IPU need popart or tf-grouped)");
  const std::int64_t m = ctx.depth();
  ProgramBuilder b(ctx, name, ctx.recompute());
  for (std::int64_t batch = 0; batch < ctx.batches(); ++batch) {
    for (int s = 0; s < p; ++s) {
      const PlanStage& fwd = plan.stages[s];
      for (const Task& t : task_order(order, s, p, m, plan.training)) {
        const std::int64_t mb = batch * m + t.micro_batch;
        if (!t.backward) {
          b.receive(fwd.ipu, ctx.copies_into(s, false));
          b.host_input(fwd, mb);
          b.compute(fwd, mb, Work::ForwardOnly);
          b.host_output(fwd, mb);
          b.send(fwd.ipu, ctx.copies_from(s, false));
        } else {
          const PlanStage& bwd = plan.stages[2 * L - s];
          b.receive(fwd.ipu, ctx.copies_into(bwd.id, true));
          b.compute(bwd, mb, s == L ? Work::BackwardOnly : Work::All);
          b.send(fwd.ipu, ctx.copies_from(bwd.id, true));
        }
      }
    }
    if (plan.training) b.weight_updates(/*all_at_once=*/true);
    else b.sync_all(ctx.sync_seconds);
  }
  // In flight per stage: GPipe holds every micro-batch; 1F1B at most p-s.
  std::vector<int> stash(static_cast<std::size_t>(p), 0);
  if (plan.training)
    for (int s = 0; s < p; ++s)
      stash[s] = static_cast<int>(order == Order::GPipe ? m : std::min<std::int64_t>(p - s, m));
  return b.finish(ctx.batches() * m, 0, stash);
}

} // namespace

Schedule build_gpipe(const ScheduleContext& ctx) { return build_async(ctx, Order::GPipe); }
Schedule build_1f1b(const ScheduleContext& ctx) { return build_async(ctx, Order::OneFOneB); }

} // namespace ipusim
