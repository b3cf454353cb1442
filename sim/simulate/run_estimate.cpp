#include "sim/simulate/run_estimate.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/engine/engine.hpp"
#include "sim/io/input_error.hpp"
#include "sim/base/units.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/program_cursor.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// Beyond this many program steps a run needs tens of GB whatever the machine: refused
// before counting them one by one (which would itself take minutes).
constexpr double kMaxSteps = 2e8;
// Per SimGrid actor (an IPU): its context stack as touched, its mailboxes and objects.
constexpr double kActorBytes = 256.0 * 1024;
// Per step: SimGrid's activities and barriers as run, in seconds (docs/benchmark.md measures
// 430,000 activities/s; half that, for slower machines and sanitizer builds).
constexpr double kSecondsPerStep = 1.0 / 200000;
// Per trace event: the slice record the streaming trace writer keeps for it.
constexpr double kTraceBytesPerEvent = 64;
// Per copy transfer (a send or a receive) of a schedule whose forwards run ahead of the next
// stage by any number of micro-batches: a micro-batch sent and not yet received keeps its
// open latency span and the attribution's queue entry, both copied into the steady-state
// detector's marks (measured 69 B per micro-batch, 17 B per transfer, on 1F1B inference
// between 2^18 and 2^20 micro-batches; counted at 32 B). SimGrid keeps nothing for it.
constexpr double kPendingTransferBytes = 32;
// Per copy queued for its route behind a slower copy (backed_up_copies): the sender's record of
// it, and SimGrid's transfer once it has started and its sender has not collected it (measured
// 2.1 KiB: the MLP under GPipe at micro-batch 64, 238 MiB at G = 400,000 with about 102,000
// backed up, 39 MiB at G = 20,000 with 5,100; counted at 3 KiB).
constexpr double kBackedUpCopyBytes = 3 * 1024;

std::string count_text(double n) {
  char text[32];
  std::snprintf(text, sizeof text, n < 1e15 ? "%.0f" : "%.3g", n);
  return text;
}

[[noreturn]] void too_large(const Scenario& sc, const std::string& what) {
  const Execution& ex = sc.execution;
  const char* field = ex.replicas > 1 && ex.replicas >= ex.gradient_accumulation && ex.replicas >= ex.batches_per_step
                          ? "replicas"
                          : (ex.training ? (ex.gradient_accumulation >= ex.batches_per_step ? "gradientAccumulation"
                                                                                            : "batchesPerStep")
                                         : "batchesPerStep");
  throw InputError(sc.file, sc.execution_pointer(field), "scenario.too-large",
                   what + "; simulate fewer micro-batches (step time grows linearly with them once the pipeline is full)");
}

} // namespace

double memory_budget_bytes() {
  double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    physical = std::min(physical, static_cast<double>(limit.rlim_cur));
  return 0.75 * physical;
}

void check_run_size(const Scenario& sc, const Plan& plan) {
  const Execution& ex = sc.execution;
  const double depth = static_cast<double>(ex.training ? ex.gradient_accumulation : ex.batches_per_step);
  const double batches = static_cast<double>(ex.training ? ex.batches_per_step : 1);
  const double micro_batches = depth * batches * static_cast<double>(ex.replicas);
  // Each micro-batch passes every stage once at least: a lower bound of the steps.
  const double least_steps = micro_batches * static_cast<double>(plan.stage_count());
  if (least_steps > kMaxSteps)
    too_large(sc, "a step of " + count_text(micro_batches) + " micro-batches (depth x batches x replicas) over " +
                      std::to_string(plan.stage_count()) + " stages is more than " + count_text(kMaxSteps) +
                      " program steps to simulate");

  // The engine moves whole bytes (64-bit counts): one transfer of more than 2^60 bytes
  // (an exabyte) is no real model, and would not fit its counter.
  double largest_transfer = 0;
  for (const PlanCopy& c : plan.copies) largest_transfer = std::max(largest_transfer, c.bytes);
  for (const PlanStage& st : plan.stages)
    largest_transfer = std::max({largest_transfer, st.host_input_bytes, st.host_output_bytes});
  for (const PlanIpu& ipu : plan.ipus) largest_transfer = std::max(largest_transfer, ipu.weight_bytes);
  if (largest_transfer > 0x1p60)
    throw InputError(sc.file, sc.execution_pointer("microBatchSize"), "scenario.too-large",
                     "a copy, host stream or gradient all-reduce of this run moves " + format_bytes(largest_transfer) +
                         " at once, more than the 2^60 bytes ipusim counts; use a smaller microBatchSize or model");
}

RunEstimate estimate_schedules(const Scenario& sc, const Plan& plan, const std::vector<Mode>& modes,
                               const std::vector<Schedule>& schedules, bool trace) {
  const Execution& ex = sc.execution;
  RunEstimate e;
  double largest_run = 0;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const Mode mode = modes[i];
    const Schedule& schedule = schedules.at(i);
    double steps = 0, transfers = 0, template_steps = 0;
    for (const Program& p : schedule.programs) {
      steps += static_cast<double>(executed_steps(p));
      transfers += static_cast<double>(executed_transfers(p));
      template_steps += static_cast<double>(p.steps.size());
    }
    e.steps += static_cast<std::uint64_t>(steps);
    e.transfers += static_cast<std::uint64_t>(transfers);
    const double programs = static_cast<double>(schedule.programs.size());
    // One simulation: the schedule (kept by ipusim and its simulation process), SimGrid's
    // actors and routes, the metrics' open latency spans. Without a trace nothing grows
    // with the steps; with one, every event and transfer record is shipped to ipusim and
    // kept there until the trace is written (streamed: one small record per slice).
    const double schedule_bytes = 2 * template_steps * (sizeof(Step) + sizeof(Transfer));
    const double engine = programs * kActorBytes + static_cast<double>(sc.hardware.links.size()) * 1024;
    const double log = trace ? 2 * steps * sizeof(Event) + 2 * transfers * (sizeof(TransferRecord) + 48) +
                                   steps * kTraceBytesPerEvent
                             : 0;
    // GPipe's forwards, and 1F1B's in inference, wait for nothing from the stages after them:
    // where a stage is faster than the next, its copies back up for the whole step, and the
    // engine's steady state never sets in (docs/benchmark.md, "Copies without mailboxes").
    const ScheduleInfo* info = find_schedule(schedule.name);
    const bool runs_ahead = mode == Mode::Pipelined && info != nullptr && info->forwards_run_ahead(ex.training);
    const RunAhead ahead = run_ahead(sc, plan, mode, schedule);
    const double backlog =
        runs_ahead ? transfers * kPendingTransferBytes + ahead.backed_up_copies * kBackedUpCopyBytes : 0;
    if (ahead.grows_with_micro_batches && e.grows_with_micro_batches.empty()) e.grows_with_micro_batches = schedule.name;
    largest_run = std::max(largest_run, 2 * schedule_bytes + engine + log + backlog);
    e.seconds += steps * kSecondsPerStep;
  }
  const double system = static_cast<double>(sc.hardware.ipu_count) * 64;
  e.peak_bytes = 2 * kProcessBaseBytes + largest_run + system;
  const double budget = memory_budget_bytes();
  if (e.peak_bytes > budget)
    too_large(sc, "the run would need about " + format_bytes(e.peak_bytes) + " of memory, more than the " +
                      format_bytes(budget) + " this machine can give it (" + count_text(static_cast<double>(e.steps)) +
                      " program steps)");
  return e;
}

namespace {

// A micro-batch's time on a stage of the chain of copies (forward or gradient) it paces.
double stage_pace(const PlanStage& stage, bool gradient) {
  if (!gradient) return stage.backward ? 0 : stage.forward_seconds;
  return stage.backward || stage.backward_seconds > 0 ? stage.backward_seconds + stage.recompute_seconds : 0;
}

// The chains of copies a schedule runs ahead on: forward, and under GPipe in training the
// gradient one too (its backwards run ahead as its forwards do); none for a lockstep schedule.
std::vector<bool> chains_run_ahead(const Scenario& sc, Mode mode, const Schedule& schedule) {
  const ScheduleInfo* info = find_schedule(schedule.name);
  if (mode != Mode::Pipelined || info == nullptr || !info->forwards_run_ahead(sc.execution.training)) return {};
  if (info->step_model == StepModel::AllForwardsFirst && sc.execution.training) return {false, true};
  return {false};
}

// Walks one chain of copies (forward or gradient) in order over `stages` (sorted by id): each
// copy backs up where its time on its route exceeds the slowest stage or copy before it, which
// paces it; the chain's loop cannot repeat while one after its first stage is slower than that.
void walk_chain(const Plan& plan, const std::vector<const PlanStage*>& stages, PathTable& routes, bool gradient,
                double micro_batches, RunAhead& result) {
  std::vector<const PlanCopy*> chain;
  for (const PlanCopy& copy : plan.copies)
    if (copy.gradient == gradient) chain.push_back(&copy);
  std::stable_sort(chain.begin(), chain.end(),
                   [](const PlanCopy* a, const PlanCopy* b) { return a->from_stage < b->from_stage; });
  double first = 0, slowest = 0;
  std::size_t next_stage = 0;
  auto take_stages_to = [&](int last_stage) {
    for (; next_stage < stages.size() && stages[next_stage]->id <= last_stage; ++next_stage) {
      const double pace = stage_pace(*stages[next_stage], gradient);
      if (first == 0) first = pace;
      slowest = std::max(slowest, pace);
    }
  };
  for (const PlanCopy* copy : chain) {
    take_stages_to(copy->from_stage);
    const double seconds = routes.path(copy->src_ipu, copy->dst_ipu).seconds(std::floor(copy->bytes));
    if (seconds > slowest)
      result.backed_up_copies = std::max(result.backed_up_copies, micro_batches * (1 - slowest / seconds));
    slowest = std::max(slowest, seconds);
  }
  if (!chain.empty()) take_stages_to(chain.back()->to_stage);
  if (slowest > first * (1 + 1e-9)) result.grows_with_micro_batches = true;
}

} // namespace

RunAhead run_ahead(const Scenario& sc, const Plan& plan, Mode mode, const Schedule& schedule) {
  RunAhead result;
  const std::vector<bool> chains = chains_run_ahead(sc, mode, schedule);
  if (chains.empty()) return result;
  std::vector<const PlanStage*> stages;
  for (const PlanStage& stage : plan.stages) stages.push_back(&stage);
  std::stable_sort(stages.begin(), stages.end(), [](const PlanStage* a, const PlanStage* b) { return a->id < b->id; });
  PathTable routes(sc.hardware);
  for (const bool gradient : chains)
    walk_chain(plan, stages, routes, gradient, static_cast<double>(schedule.micro_batches), result);
  return result;
}

RunEstimate estimate_run(const Scenario& sc, const Plan& plan, const std::vector<Mode>& modes, bool trace) {
  check_run_size(sc, plan);
  // Programs are compact (a template with repeats): built in time and memory O(stages + IPUs),
  // and counted without being expanded.
  std::vector<Schedule> schedules;
  for (Mode mode : modes) schedules.push_back(make_schedule(mode, sc, plan));
  return estimate_schedules(sc, plan, modes, schedules, trace);
}

std::string describe_estimate(const RunEstimate& e) {
  return "about " + format_bytes(e.peak_bytes) + " and " + format_seconds(e.seconds);
}

} // namespace ipusim
