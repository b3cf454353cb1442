#pragma once
// One way through: scenario -> graph -> plan -> schedule -> engine -> metrics, for
// each requested mode.
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

struct ModeRun {
  Schedule schedule;
  RunLog log;
  RunMetrics metrics;
};

struct Simulation {
  ModelGraph graph;
  Plan plan;
  std::vector<ModeRun> runs;  // in the order of the modes asked for
};

// Checks everything before simulating anything, so bad input fails fast.
Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes);

} // namespace ipusim
