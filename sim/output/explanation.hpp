#pragma once
// The "Why" paragraph under `ipusim run`'s table: how the modes compare, where each
// mode's IPU time goes (idle time by cause), the IPU and stage that pace the step, and
// which changes address the largest losses. docs/step-time.md lists the rules.
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

std::string explain_runs(const Scenario& scenario, const Simulation& simulation);

} // namespace ipusim
