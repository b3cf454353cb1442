// TensorFlow-for-IPU pipeline schedules. TF keeps the loss stage's forward and backward
// apart, so training has 2N stage tasks for N forward stages. Grouped and Interleaved
// run in lockstep steps (compute, sync, the copies the step produced):
// - Grouped (TF's default): N forward-only steps of ramp-up, then backward and forward
//   steps alternate; in a step every stage runs the same pass.
// - Interleaved: stage s runs forward on steps t with t-s even and backward otherwise,
//   so forward and backward stages alternate on each IPU.
// - Sequential: one stage at a time, like sharding.
// A stage runs a micro-batch in a step when its input was produced in an earlier step.
// Depth rules and FIFO depths from popart-semantics.md.
#include <algorithm>

#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

enum class Flavour { Grouped, Interleaved };

struct Task {
  int stage;  // forward stage index
  std::int64_t micro_batch;
  bool backward;
};

// The steps of one batch: which stage runs which micro-batch in which pass.
std::vector<std::vector<Task>> lockstep_tasks(Flavour flavour, int N, std::int64_t m, bool training) {
  std::vector<std::int64_t> next_f(N, 0), next_b(N, 0);
  std::vector<std::vector<std::int64_t>> f_step(N, std::vector<std::int64_t>(m, -1)),
      b_step(N, std::vector<std::int64_t>(m, -1));
  std::vector<std::vector<Task>> steps;
  for (std::int64_t t = 0; next_b[0] < (training ? m : 0) || next_f[N - 1] < m; ++t) {
    std::vector<Task> step;
    for (int s = 0; s < N; ++s) {
      bool forward = true;
      if (training && flavour == Flavour::Grouped) forward = t < N || (t - N) % 2 == 1;
      if (training && flavour == Flavour::Interleaved) forward = (t - s) % 2 == 0;
      if (forward) {
        const std::int64_t i = next_f[s];
        if (i < m && (s == 0 || (f_step[s - 1][i] >= 0 && f_step[s - 1][i] < t))) step.push_back({s, i, false});
      } else {
        const std::int64_t i = next_b[s];
        const auto& ready = s == N - 1 ? f_step[s] : b_step[s + 1];
        if (i < m && ready[i] >= 0 && ready[i] < t) step.push_back({s, i, true});
      }
    }
    for (const Task& task : step) {
      if (task.backward) b_step[task.stage][next_b[task.stage]++] = t;
      else f_step[task.stage][next_f[task.stage]++] = t;
    }
    if (!step.empty()) steps.push_back(std::move(step));
  }
  return steps;
}

// Lays out tasks step by step: per IPU its streams and compute, then one sync and the copies the step produced.
void emit_steps(const ScheduleContext& ctx, ProgramBuilder& b, const std::vector<std::vector<Task>>& steps,
                std::int64_t first_micro_batch) {
  const Plan& plan = ctx.plan;
  const int L = plan.loss_stage;
  for (const auto& step : steps) {
    std::vector<const PlanCopy*> produced;
    for (const PlanIpu& ipu : plan.ipus) {
      std::vector<const Task*> mine;
      for (const Task& t : step)
        if (plan.stages[t.stage].ipu == ipu.id) mine.push_back(&t);
      std::sort(mine.begin(), mine.end(), [](const Task* a, const Task* c) { return a->stage < c->stage; });
      for (const Task* t : mine)
        if (!t->backward) b.host_input(plan.stages[t->stage], first_micro_batch + t->micro_batch);
      for (const Task* t : mine) {
        const std::int64_t mb = first_micro_batch + t->micro_batch;
        if (!t->backward) b.compute(plan.stages[t->stage], mb, Work::ForwardOnly);
        else if (t->stage == L) b.compute(plan.stages[L], mb, Work::BackwardOnly);
        else b.compute(plan.stages[2 * L - t->stage], mb);
      }
      for (const Task* t : mine)
        if (!t->backward) b.host_output(plan.stages[t->stage], first_micro_batch + t->micro_batch);
    }
    for (const Task& t : step)
      for (const PlanCopy* c : ctx.copies_from(t.backward ? 2 * L - t.stage : t.stage, t.backward))
        produced.push_back(c);
    if (produced.empty()) b.sync_all(ctx.sync_seconds);
    else b.exchange(produced);
  }
}

Schedule build_lockstep(const ScheduleContext& ctx, Flavour flavour) {
  check_pipelinable(ctx, /*one_ipu_allowed=*/true);
  const Plan& plan = ctx.plan;
  const int N = plan.forward_stage_count;
  const std::int64_t depth = ctx.depth();
  const bool training = plan.training;
  const std::string name = flavour == Flavour::Grouped ? "tf-grouped" : "tf-interleaved";
  const std::string G = training ? "gradient accumulation" : "batchesPerStep";
  if (flavour == Flavour::Grouped) {
    const std::int64_t unit = training ? 2 * N : N;
    if (depth < unit || depth % unit != 0)
      depth_error(ctx, "pipeline.depth",
                  "TensorFlow's Grouped schedule needs the " + G + " to be a multiple of, and at least, " +
                      (training ? "2N = " : "N = ") + std::to_string(unit) + " (N = " + std::to_string(N) +
                      " forward stages); got " + std::to_string(depth));
  } else {
    if (depth % N != 0)
      depth_error(ctx, "pipeline.depth",
                  "TensorFlow's Interleaved schedule needs the " + G + " to be a multiple of N = " +
                      std::to_string(N) + " forward stages; got " + std::to_string(depth));
    if (training)
      for (const PlanIpu& ipu : plan.ipus)
        if (ipu.stages.size() > 2)
          throw InputError(ctx.scenario.model.file, "/ops", "pipeline.interleaved-shared-ipu",
                           "TensorFlow's Interleaved schedule cannot map several forward stages to one IPU when "
                           "training; IPU " + std::to_string(ipu.id) + " holds " +
                               std::to_string((ipu.stages.size() + 1) / 2) + " (use tf-grouped or popart)");
  }
  const auto steps = lockstep_tasks(flavour, N, depth, training);
  ProgramBuilder b(ctx, name, ctx.recompute());
  for (std::int64_t batch = 0; batch < ctx.batches(); ++batch) {
    emit_steps(ctx, b, steps, batch * depth);
    if (training) b.weight_updates();
  }
  // FIFO depth: Grouped 2 x (last forward stage - stage), Interleaved 1 x.
  std::vector<int> fifo(static_cast<std::size_t>(N), 0);
  if (training)
    for (int s = 0; s < N; ++s) fifo[s] = (flavour == Flavour::Grouped ? 2 : 1) * (N - 1 - s);
  return b.finish(ctx.batches() * depth, static_cast<int>(steps.size()), fifo);
}

} // namespace

Schedule build_tf_grouped(const ScheduleContext& ctx) { return build_lockstep(ctx, Flavour::Grouped); }
Schedule build_tf_interleaved(const ScheduleContext& ctx) { return build_lockstep(ctx, Flavour::Interleaved); }

Schedule build_tf_sequential(const ScheduleContext& ctx) {
  check_pipelinable(ctx, /*one_ipu_allowed=*/true);
  const Plan& plan = ctx.plan;
  const int N = plan.forward_stage_count;
  const std::int64_t depth = ctx.depth();
  ProgramBuilder b(ctx, "tf-sequential", ctx.recompute());
  for (std::int64_t batch = 0; batch < ctx.batches(); ++batch) {
    for (std::int64_t i = 0; i < depth; ++i) {
      std::vector<std::vector<Task>> one_at_a_time;
      for (int s = 0; s < N; ++s) one_at_a_time.push_back({{s, i, false}});
      if (plan.training)
        for (int s = N - 1; s >= 0; --s) one_at_a_time.push_back({{s, i, true}});
      emit_steps(ctx, b, one_at_a_time, batch * depth);
    }
    if (plan.training) b.weight_updates();
  }
  // No FIFOs; one micro-batch's activations wait from its forward to its backward.
  std::vector<int> stash(static_cast<std::size_t>(N), 0);
  if (plan.training)
    for (int s = 0; s + 1 < N; ++s) stash[s] = 1;
  Schedule schedule = b.finish(ctx.batches() * depth, 0, stash);
  schedule.one_stage_at_a_time = true;
  return schedule;
}

} // namespace ipusim
