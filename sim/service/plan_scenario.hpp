#pragma once
// `ipusim plan` as a call both front ends make (sim/cli/plan_command.cpp, sim/python/module.cpp):
// search the configurations of a scenario's model on its system, confirm the best with the engine,
// set the what-if schedules' best against them, show the fronts, compare with the scenario as
// given, and write the best with --write (docs/planner.md).
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/service/plan_options.hpp"

namespace ipusim::service {

// A plan's status: the exit code of `ipusim plan` (docs/formats.md, "Exit codes").
constexpr int kPlanFits = 0;   // a configuration fits (or the layers were only explained)
constexpr int kPlanNoFit = 5;  // no configuration fits in memory

struct PlanResult {
  int status = kPlanFits;
  nlohmann::json document;  // plan --json's (options.json), its "text" the report; else null
  // Why nothing fits and what would, when the pipelined search found nothing: a line for standard
  // error, after the report (a phased plan says it in its report instead).
  std::string no_fit;
};

// Runs the plan. The report is written to `report` as it is made, each part flushed (the engine
// confirms candidates for minutes on large models: a terminal shows each as it comes), unless
// options.json keeps it for the document. The search's progress (without options.quiet), notes
// and the model's import warnings go to standard error. Bad input throws InputError.
PlanResult plan_scenario(const PlanOptions& options, std::ostream& report);

} // namespace ipusim::service
