#pragma once
// The planner's fast evaluator: the step time of PopART's lockstep schedule computed from a
// plan's stage times, copies, syncs, host streams and weight update in closed form, cycle by
// cycle (docs/planner.md), without building per-IPU programs or running SimGrid. It equals the
// engine to rounding when no two transfers share a link at once; where they would (host links
// of one IPU-Gateway, Streaming Memory of one M2000, links of two copies), it says so and
// gives an approximation; the engine's figure is then the one to trust.
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"

namespace ipusim {

struct StepEstimate {
  double step_seconds = 0;
  double cycle_seconds = 0;     // one main-phase cycle (every stage busy), training or inference
  double latency_seconds = 0;   // a micro-batch's way through: S main-phase cycles
  double update_seconds = 0;    // the weight-update phase per batch (all-reduce included)
  bool exact = true;            // false: contention modelled approximately (see `inexact_reason`)
  std::string inexact_reason;
};

// PopART's schedule ("popart") as build_popart lays it out. Throws InputError as build_popart
// does when the pipeline is too shallow (G or batchesPerStep < S).
StepEstimate estimate_popart_step(const Scenario& scenario, const Plan& plan);

} // namespace ipusim
