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
  RunLog log;
  RunMetrics metrics;
};

struct Simulation {
  ModelGraph graph;
  Plan plan;
  RunEstimate estimate;
  std::vector<ModeRun> runs;  // in the order of the modes asked for
};

// Checks everything before simulating anything, so bad input fails fast, and refuses a
// run too large for the machine (run_estimate.hpp; `trace`: a trace will be written).
// A run estimated at over 1 GiB or a minute is announced on `notes` before it starts.
Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes, bool trace = false,
                    std::ostream* notes = nullptr);

} // namespace ipusim
