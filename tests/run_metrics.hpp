#pragma once
// The metrics of one mode's run in a simulation, for tests that check a mode's figures.
#include <catch2/catch.hpp>

#include "sim/simulate/simulation.hpp"

namespace ipusim::test {

inline const RunMetrics& run_of(const Simulation& sim, Mode mode) {
  for (const auto& r : sim.runs)
    if (r.metrics.mode == mode) return r.metrics;
  FAIL("no run for the mode");
  throw;
}

} // namespace ipusim::test
