#pragma once
// The JSON a plan writes: the `execution` section that runs a candidate (in plan --json's
// candidates and in the scenario --write writes) and plan --json's document (docs/planner.md).
#include <string>

#include <nlohmann/json.hpp>

#include "sim/service/plan_output.hpp"

namespace ipusim::service {

// The `execution` section that runs a candidate: `base` (the scenario's own) with the searched
// fields set to the candidate's scenario's `e`.
nlohmann::json planned_execution(nlohmann::json base, const Execution& e, bool training);

// plan --json's document: what the search did, the confirmed candidates best first (none when
// `confirmed` is null: nothing fits), the what-if schedules' best (null when none was searched or
// none fits), and the text report.
nlohmann::json plan_document(const Scenario& scenario, const PlanSearch& search, Objective objective,
                             const ConfirmedPlans* confirmed, const ConfirmedPlans& what_if, const std::string& text);

} // namespace ipusim::service
