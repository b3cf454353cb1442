// TensorFlow-for-IPU pipeline schedules. TF keeps the loss stage's forward and backward
// apart, so training has 2N stage tasks for N forward stages. Grouped and Interleaved
// run in lockstep steps (compute, sync, the copies the step produced):
// - Grouped (TF's default): N forward-only steps of ramp-up, then backward and forward
//   steps alternate; in a step every stage runs the same pass.
// - Interleaved: stage s runs forward on steps t with t-s even and backward otherwise,
//   so forward and backward stages alternate on each IPU.
// - Sequential: one stage at a time, like sharding.
// A stage runs a micro-batch in a step when its input was produced in an earlier step.
// Depth rules and FIFO depths from docs/reference/popart-semantics.md.
#include <algorithm>
#include <optional>

#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

enum class Flavour { Grouped, Interleaved };

using Task = LockstepTask;
using Segment = LockstepRun;

bool same_shifted(const std::vector<Task>& later, const std::vector<Task>& earlier, std::int64_t shift) {
  if (later.size() != earlier.size()) return false;
  for (std::size_t i = 0; i < later.size(); ++i)
    if (later[i].stage != earlier[i].stage || later[i].backward != earlier[i].backward ||
        later[i].micro_batch != earlier[i].micro_batch + shift)
      return false;
  return true;
}

std::vector<Task> shifted(std::vector<Task> step, std::int64_t shift) {
  for (Task& t : step) t.micro_batch += shift;
  return step;
}

// Folds a stream of steps into segments: whenever the last P steps (P = 1 or 2) repeat the
// P before them one micro-batch further, they start a run that lasts as long as the steps
// keep repeating. The steady state of a deep pipeline becomes one segment.
class StepFolder {
public:
  void add(std::vector<Task> step) {
    if (run_) {
      if (same_shifted(step, run_->body[phase_], run_->times)) {
        if (++phase_ == run_->body.size()) {
          ++run_->times;
          phase_ = 0;
        }
        return;
      }
      end_run();
    }
    pending_.push_back(std::move(step));
    for (std::size_t P : {std::size_t{1}, std::size_t{2}}) {
      const std::size_t n = pending_.size();
      if (n < 2 * P) continue;
      bool repeats = true;
      for (std::size_t k = 0; k < P && repeats; ++k) repeats = same_shifted(pending_[n - P + k], pending_[n - 2 * P + k], 1);
      if (!repeats) continue;
      for (std::size_t k = 0; k + 2 * P < n; ++k) segments_.push_back({{std::move(pending_[k])}, 1});
      run_ = Segment{{pending_.begin() + static_cast<std::ptrdiff_t>(n - 2 * P),
                      pending_.begin() + static_cast<std::ptrdiff_t>(n - P)},
                     2};
      phase_ = 0;
      pending_.clear();
      return;
    }
    // Only the last 2P-1 steps can still start a run.
    while (pending_.size() > 3) {
      segments_.push_back({{std::move(pending_.front())}, 1});
      pending_.erase(pending_.begin());
    }
  }

  // The run's period when a whole one has just been matched (0 otherwise), its steps, and
  // `periods` more of it taken as matched (lockstep_tasks skips ahead).
  std::size_t completed_period() const { return run_ && phase_ == 0 ? run_->body.size() : 0; }
  const std::vector<std::vector<Task>>& run_body() const { return run_->body; }
  void extend_run(std::int64_t periods) { run_->times += periods; }

  std::vector<Segment> finish() {
    if (run_) end_run();
    for (auto& step : pending_) segments_.push_back({{std::move(step)}, 1});
    pending_.clear();
    return std::move(segments_);
  }

private:
  // The steps of the run's unfinished last time go back to the pending ones.
  void end_run() {
    for (std::size_t k = 0; k < phase_; ++k) pending_.push_back(shifted(run_->body[k], run_->times));
    segments_.push_back(std::move(*run_));
    run_.reset();
    phase_ = 0;
  }

  std::vector<Segment> segments_;
  std::vector<std::vector<Task>> pending_;
  std::optional<Segment> run_;
  std::size_t phase_ = 0;  // steps of the run's current time matched so far
};

// Whether every stage task (each forward, and each backward in training) runs exactly once in
// `period`: then a period moves every counter of lockstep_tasks on by one.
bool every_task_once(const std::vector<std::vector<Task>>& period, int N, bool training) {
  std::vector<char> seen(static_cast<std::size_t>(2 * N), 0);
  std::size_t tasks = 0;
  for (const auto& step : period)
    for (const Task& task : step) {
      char& once = seen[static_cast<std::size_t>(2 * task.stage + (task.backward ? 1 : 0))];
      if (once) return false;
      once = 1;
      ++tasks;
    }
  return tasks == static_cast<std::size_t>(training ? 2 * N : N);
}

// In the steady state each period repeats the last one a micro-batch further: when it moves
// every counter on by one, what decides a step (the counters' differences, the step's parity)
// is the same in the next periods until a counter nears m, so those periods are taken as
// matched at once, leaving two before the end to be stepped through. Returns the steps
// skipped (a multiple of 2: the parity of the step number decides each stage's pass); without
// it the steps were O(G), 3 s for G = 4 x 10^6 in an out-of-memory run's advice.
std::int64_t steady_periods_to_skip(StepFolder& folder, int N, std::int64_t m, bool training,
                                    std::vector<std::int64_t>& next_f, std::vector<std::int64_t>& next_b) {
  const auto P = static_cast<std::int64_t>(folder.completed_period());
  if (P == 0 || !every_task_once(folder.run_body(), N, training)) return 0;
  std::int64_t room = m;
  for (int s = 0; s < N; ++s) {
    room = std::min(room, m - next_f[static_cast<std::size_t>(s)]);
    if (training) room = std::min(room, m - next_b[static_cast<std::size_t>(s)]);
  }
  std::int64_t periods = room - 2;
  if (P % 2 == 1 && periods % 2 != 0) --periods;
  if (periods <= 0) return 0;
  for (int s = 0; s < N; ++s) {
    next_f[static_cast<std::size_t>(s)] += periods;
    if (training) next_b[static_cast<std::size_t>(s)] += periods;
  }
  folder.extend_run(periods);
  return periods * P;
}

// The steps of one batch: which stage runs which micro-batch in which pass. A stage runs
// a micro-batch when its input was produced in an earlier step, which the counters of
// the previous steps tell: stage s-1 has produced micro-batch i iff next_f[s-1] > i.
std::vector<Segment> lockstep_tasks(Flavour flavour, int N, std::int64_t m, bool training) {
  std::vector<std::int64_t> next_f(N, 0), next_b(N, 0);
  StepFolder folder;
  for (std::int64_t t = 0; next_b[0] < (training ? m : 0) || next_f[N - 1] < m; ++t) {
    std::vector<Task> step;
    for (int s = 0; s < N; ++s) {
      bool forward = true;
      if (training && flavour == Flavour::Grouped) forward = t < N || (t - N) % 2 == 1;
      if (training && flavour == Flavour::Interleaved) forward = (t - s) % 2 == 0;
      if (forward) {
        const std::int64_t i = next_f[s];
        if (i < m && (s == 0 || next_f[s - 1] > i)) step.push_back({s, i, false});
      } else {
        const std::int64_t i = next_b[s];
        const std::int64_t ready = s == N - 1 ? next_f[s] : next_b[s + 1];
        if (i < m && ready > i) step.push_back({s, i, true});
      }
    }
    for (const Task& task : step) ++(task.backward ? next_b : next_f)[task.stage];
    if (!step.empty()) folder.add(std::move(step));
    t += steady_periods_to_skip(folder, N, m, training, next_f, next_b);
  }
  return folder.finish();
}

// TensorFlow's Sequential schedule: each stage's forward, then each backward, one step each.
std::vector<std::vector<Task>> sequential_steps(int N, bool training) {
  std::vector<std::vector<Task>> steps;
  for (int s = 0; s < N; ++s) steps.push_back({{s, 0, false}});
  if (training)
    for (int s = N - 1; s >= 0; --s) steps.push_back({{s, 0, true}});
  return steps;
}

// Lays out tasks step by step: per IPU its streams and compute, then one sync and the copies the step produced.
void emit_steps(const ScheduleContext& ctx, ProgramBuilder& b, const std::vector<std::vector<Task>>& steps) {
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
        if (!t->backward) b.host_input(plan.stages[t->stage], t->micro_batch);
      for (const Task* t : mine) {
        const std::int64_t mb = t->micro_batch;
        if (!t->backward) b.compute(plan.stages[t->stage], mb, Pass::Forward);
        else if (t->stage == L) b.compute(plan.stages[L], mb, Pass::Backward);
        else b.compute(plan.stages[2 * L - t->stage], mb);
      }
      for (const Task* t : mine)
        if (!t->backward) b.host_output(plan.stages[t->stage], t->micro_batch);
    }
    for (const Task& t : step)
      for (const PlanCopy* c : ctx.copies_from(t.backward ? 2 * L - t.stage : t.stage, t.backward))
        produced.push_back(c);
    if (produced.empty()) b.sync_all(ctx.sync_seconds);
    else b.exchange(produced);
  }
}

// Depth and placement rules (docs/reference/popart-semantics.md): Grouped needs a depth that is a
// multiple of, and at least, 2N in training (N in inference); Interleaved a multiple of N, and in
// training one forward stage per IPU; Sequential anything.
void check_flavour(Flavour flavour, const Plan& plan, std::int64_t depth, const std::string& file,
                   const std::string& depth_pointer, const std::string& model_file) {
  const int N = plan.forward_stage_count;
  const bool training = plan.training;
  const std::string G = training ? "gradient accumulation" : "batchesPerStep";
  if (flavour == Flavour::Grouped) {
    const std::int64_t unit = training ? 2 * N : N;
    if (depth < unit || depth % unit != 0)
      throw InputError(file, depth_pointer, "pipeline.depth",
                       "TensorFlow's Grouped schedule needs the " + G + " to be a multiple of, and at least, " +
                           (training ? "2N = " : "N = ") + std::to_string(unit) + " (N = " + std::to_string(N) +
                           " forward stages); got " + std::to_string(depth));
    return;
  }
  if (depth % N != 0)
    throw InputError(file, depth_pointer, "pipeline.depth",
                     "TensorFlow's Interleaved schedule needs the " + G + " to be a multiple of N = " +
                         std::to_string(N) + " forward stages; got " + std::to_string(depth));
  if (training)
    for (const PlanIpu& ipu : plan.ipus)
      if (ipu.stages.size() > 2)
        throw InputError(model_file, "/ops", "pipeline.interleaved-shared-ipu",
                         "TensorFlow's Interleaved schedule cannot map several forward stages to one IPU when "
                         "training; IPU " + std::to_string(ipu.id) + " holds " +
                             std::to_string((ipu.stages.size() + 1) / 2) + " (use tf-grouped or popart)");
}

std::string name_of(Flavour flavour) { return flavour == Flavour::Grouped ? "tf-grouped" : "tf-interleaved"; }

Schedule build_lockstep(const ScheduleContext& ctx, Flavour flavour) {
  check_pipelinable(ctx, /*one_ipu_allowed=*/true);
  const Plan& plan = ctx.plan;
  const Scenario& sc = ctx.scenario;
  const int N = plan.forward_stage_count;
  const std::int64_t depth = ctx.depth();
  const bool training = plan.training;
  check_flavour(flavour, plan, depth, sc.file,
                sc.execution_pointer(training ? "gradientAccumulation" : "batchesPerStep"), sc.model.file);
  const std::vector<Segment> segments = lockstep_tasks(flavour, N, depth, training);
  std::int64_t steps = 0;
  for (const Segment& segment : segments) steps += static_cast<std::int64_t>(segment.body.size()) * segment.times;
  ProgramBuilder b(ctx, name_of(flavour), ctx.recompute());
  b.repeat("batches", ctx.batches(), depth, [&] {
    for (const Segment& segment : segments) {
      if (segment.times == 1) emit_steps(ctx, b, segment.body);
      else b.repeat("steady steps", segment.times, 1, [&] { emit_steps(ctx, b, segment.body); });
    }
    if (training) b.weight_updates();
  });
  // FIFO depth: Grouped 2 x (last forward stage - stage), Interleaved 1 x.
  return b.finish(ctx.batches() * depth, static_cast<int>(steps), stash_depths(name_of(flavour), N, depth, training));
}

Schedule build_tf_grouped(const ScheduleContext& ctx) { return build_lockstep(ctx, Flavour::Grouped); }
Schedule build_tf_interleaved(const ScheduleContext& ctx) { return build_lockstep(ctx, Flavour::Interleaved); }

Schedule build_tf_sequential(const ScheduleContext& ctx) {
  check_pipelinable(ctx, /*one_ipu_allowed=*/true);
  const Plan& plan = ctx.plan;
  const int N = plan.forward_stage_count;
  const std::int64_t depth = ctx.depth();
  ProgramBuilder b(ctx, "tf-sequential", ctx.recompute());
  const std::vector<std::vector<Task>> one_at_a_time = sequential_steps(N, plan.training);
  b.repeat("batches", ctx.batches(), depth, [&] {
    b.repeat("micro-batches", depth, 1, [&] { emit_steps(ctx, b, one_at_a_time); });
    if (plan.training) b.weight_updates();
  });
  // No FIFOs; one micro-batch's activations wait from its forward to its backward.
  Schedule schedule = b.finish(ctx.batches() * depth, 0, stash_depths("tf-sequential", N, depth, plan.training));
  schedule.one_stage_at_a_time = true;
  return schedule;
}

} // namespace

std::vector<LockstepRun> tf_lockstep_runs(const std::string& schedule, int N, std::int64_t depth, bool training) {
  if (schedule == "tf-grouped") return lockstep_tasks(Flavour::Grouped, N, depth, training);
  if (schedule == "tf-interleaved") return lockstep_tasks(Flavour::Interleaved, N, depth, training);
  return {{sequential_steps(N, training), depth}};
}

void check_tensorflow_pipeline(const std::string& schedule, const Plan& plan, std::int64_t depth,
                               const std::string& file, const std::string& depth_pointer,
                               const std::string& model_file) {
  if (schedule == "tf-grouped") check_flavour(Flavour::Grouped, plan, depth, file, depth_pointer, model_file);
  if (schedule == "tf-interleaved") check_flavour(Flavour::Interleaved, plan, depth, file, depth_pointer, model_file);
}

const ScheduleInfo& tf_grouped_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"tf-grouped", "TensorFlow Grouped (TF default): lockstep steps, all forward or all backward at a time",
                   &build_tf_grouped, "TensorFlow for IPU (PipelineSchedule.Grouped)"};
    s.stash_depth = [](int stage, int N, std::int64_t) { return 2 * (N - 1 - stage); };
    s.accepts = [](int P, bool, std::int64_t depth, bool training) {
      const int unit = training ? 2 * P : P;
      return depth >= unit && depth % unit == 0;
    };
    s.step_model = StepModel::TensorFlowSteps;
    s.annotated_stages = AnnotatedStages::Kept;
    s.split_bound = SplitBound::PassesApart;
    return s;
  }();
  return info;
}

const ScheduleInfo& tf_interleaved_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"tf-interleaved", "TensorFlow Interleaved: lockstep, each IPU alternates forward and backward steps",
                   &build_tf_interleaved, "TensorFlow for IPU (PipelineSchedule.Interleaved)"};
    s.stash_depth = [](int stage, int N, std::int64_t) { return N - 1 - stage; };
    s.accepts = [](int P, bool ipu_holds_two_stages, std::int64_t depth, bool training) {
      return depth % P == 0 && !(training && ipu_holds_two_stages);
    };
    s.step_model = StepModel::TensorFlowSteps;
    s.annotated_stages = AnnotatedStages::Kept;
    return s;
  }();
  return info;
}

const ScheduleInfo& tf_sequential_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"tf-sequential", "TensorFlow Sequential: one stage at a time, like sharding", &build_tf_sequential,
                   "TensorFlow for IPU (PipelineSchedule.Sequential)"};
    s.stash_depth = [](int stage, int N, std::int64_t) { return stage + 1 < N ? 1 : 0; };
    s.accepts = [](int, bool, std::int64_t, bool) { return true; };
    s.step_model = StepModel::TensorFlowSteps;
    s.annotated_stages = AnnotatedStages::Kept;
    s.split_bound = SplitBound::EveryIpu;
    return s;
  }();
  return info;
}

} // namespace ipusim
