#pragma once
// `ipusim plan` of a scenario in the phased mode (docs/phased.md): the phased mode's own
// settings searched on the system the scenario names, every candidate run by the engine.
#include <ostream>

#include "sim/io/scenario.hpp"

namespace ipusim::service {

// Prints the ranked candidates and returns the plan's status: kPlanFits when one fits, else
// kPlanNoFit (plan_scenario.hpp).
int plan_phased(const Scenario& scenario, int top, std::ostream& out);

} // namespace ipusim::service
