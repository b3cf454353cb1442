#pragma once
// The readable comparison `ipusim run` prints: the plan, one column per mode, and a
// few sentences on why (explanation.hpp).
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

std::string render_table(const Scenario& scenario, const Simulation& simulation);

} // namespace ipusim
