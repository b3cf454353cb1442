#pragma once
// `ipusim run --json`: one JSON document with the scenario, the plan and a run per mode.
#include <nlohmann/json.hpp>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

nlohmann::json plan_json(const Scenario& scenario, const Plan& plan);
nlohmann::json memory_json(const MemoryReport& memory, bool placed = false);
nlohmann::json run_json(const RunMetrics& run);
// An IPU's idle seconds by cause ({"fill_flush_s": ..., ...}), as in runs[].ipus[].idle.
nlohmann::json idle_json(const IdleBreakdown& idle);
// `plan_document`: plan_json(scenario, simulation.plan) when the caller kept it from an
// earlier run of the same plan (the Python API); none: made here.
nlohmann::json report_json(const Scenario& scenario, const Simulation& simulation,
                           const nlohmann::json* plan_document = nullptr);

} // namespace ipusim
