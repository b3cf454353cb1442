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
nlohmann::json report_json(const Scenario& scenario, const Simulation& simulation);

} // namespace ipusim
