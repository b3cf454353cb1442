#pragma once
// One way through: scenario -> graph -> plan -> schedule -> engine -> metrics, for
// each requested mode.
#include <iosfwd>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"
#include "sim/simulate/run_estimate.hpp"

namespace ipusim {

struct ModeRun {
  Schedule schedule;
  RunLog log;  // events and transfers only when SimulateOptions::keep_log
  RunMetrics metrics;
};

// The model's graph is not kept: the plan holds what the outputs read of it, and a caller that
// runs one model many times lends its own (SimulateOptions::graph) rather than a copy per run.
struct Simulation {
  Plan plan;
  RunEstimate estimate;
  std::vector<ModeRun> runs;  // in the order of the modes asked for
};

struct SimulateOptions {
  // Keep every event and transfer (for a trace). Without it a run's memory does not grow
  // with its number of micro-batches: metrics are computed as the simulation goes.
  bool keep_log = true;
  // Simulate every iteration of every loop instead of skipping repeated periods, and every
  // transfer of the gradient collectives instead of replaying them apart (the figures are
  // the same; this is the check, and the baseline for benchmarks).
  bool exact_full = false;
  // This process simulates nothing else (a sweep's point): the modes run here rather than in
  // forked children, sparing a process each; all of them where the engine can simulate
  // again (engine_can_simulate_again), else the last. A failure of SimGrid itself then ends
  // this process instead of being reported.
  bool in_process = false;
  // Where a run estimated at over 1 GiB, or over a minute with exact_full, is announced
  // before it starts (none: not announced).
  std::ostream* notes = nullptr;
  // The graph of the scenario's model, when a caller that runs one model many times (the
  // Python API) has built it once; none: built here.
  const ModelGraph* graph = nullptr;
  // The plan make_plan gives for this scenario and these modes, when such a caller kept it from
  // an earlier run of the same scenario with the same execution; none: made here. Lent: moved
  // into Simulation::plan, where the caller takes it back (a copy per run cost a Python call
  // more than the plan's use); lost if simulate throws.
  Plan* plan = nullptr;
  // With `plan`: each mode's memory report (estimate_memory) from that earlier run, in the
  // order of the modes; none: estimated here.
  const std::vector<MemoryReport>* memory = nullptr;
};

// Checks everything before simulating anything, so bad input fails fast, and refuses a
// run too large for the machine (run_estimate.hpp).
Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes, const SimulateOptions& options = {});

} // namespace ipusim
