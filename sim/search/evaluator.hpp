#pragma once
// The planner's fast evaluators: the step time of a pipeline schedule computed from a plan's
// stage times, copies, syncs, host streams and weight update, without building per-IPU
// programs or running SimGrid (docs/planner.md). One per StepModel (schedule.hpp), the one a
// schedule's registry entry names:
// - PopartCycles: closed form over the fill, the identical main cycles (one computed, times
//   their count) and the flush;
// - TensorFlowSteps: the schedule's own lockstep steps (tf_lockstep_runs), each repeated run
//   costed once;
// - AllForwardsFirst, OneForwardOneBackward: each IPU's task list played in dependency order (a
//   task starts when its IPU is free and its input copy has landed).
// Each equals the engine to rounding when no two transfers share a link or a memory at once;
// where they would, it says so (`contention`) and gives an approximation: the engine's figure
// is then the one to trust.
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/search/transfer_timer.hpp"

namespace ipusim {

struct StepEstimate {
  double step_seconds = 0;
  double cycle_seconds = 0;     // the steady period per micro-batch (popart: one main cycle)
  double latency_seconds = 0;   // a micro-batch's way through the pipeline
  double update_seconds = 0;    // the weight-update phase per batch (all-reduce included)
  double fill_flush_seconds = 0;  // per batch, what the fill and the flush add to the steady cycles
  unsigned contention = kNoContention;
  bool exact() const { return contention == kNoContention; }
  std::string inexact_reason() const { return contention_reason(contention); }
};

// The schedules the planner can time (each has an evaluator), in the order it lists them.
const std::vector<std::string>& evaluated_schedules();
bool has_evaluator(const std::string& schedule);

// `execution.schedule`'s step for `plan`. The depth must be one the schedule accepts
// (InputError from the schedule's builder otherwise; the planner checks before asking).
StepEstimate estimate_step(const Execution& execution, const Plan& plan, RouteTable& routes);

// Sharded execution (sim/schedule/sharded.cpp), exact under the same condition.
StepEstimate estimate_sharded_step(const Execution& execution, const Plan& plan, RouteTable& routes);

// As run would: the scenario's schedule on its system. Throws InputError as build_popart
// does when the pipeline is too shallow (G or batchesPerStep < S).
StepEstimate estimate_step(const Scenario& scenario, const Plan& plan);

} // namespace ipusim
