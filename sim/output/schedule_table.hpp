#pragma once
// `ipusim run --schedules`: the run document with one pipelined run per schedule that ran
// and the refusals of the others, and the table that puts them side by side
// (docs/formats.md, "Schedules side by side").
#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulate/schedule_runs.hpp"

namespace ipusim {

// The document of `run --json` for the first schedule that ran, with every schedule's run in
// "runs", "schedules" (as asked), "schedulesRefused" and, for a schedule whose plan is not
// the first's (TensorFlow keeps annotated stages), its plan in "schedulePlans". `base` is
// the scenario as given: the document's execution is its own. Needs one run at least.
nlohmann::json schedules_json(const Scenario& base, const ScheduleRuns& runs);

// One row per schedule in the order asked: step time, throughput, bubble, stash and memory
// per virtual IPU, the memory verdict; a refused schedule's row gives its rule id and reason.
// Then each out-of-memory verdict and one sentence on which schedule wins.
std::string render_schedule_table(const nlohmann::json& document);

} // namespace ipusim
