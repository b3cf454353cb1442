#pragma once
// `ipusim run --json`: one JSON document with the scenario, the plan and a run per mode.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

nlohmann::json plan_json(const Scenario& scenario, const Plan& plan);
nlohmann::json memory_json(const MemoryReport& memory, bool placed = false);
nlohmann::json run_json(const RunMetrics& run);
// An IPU's idle seconds by cause ({"fill_flush_s": ..., ...}), as in runs[].ipus[].idle.
nlohmann::json idle_json(const IdleBreakdown& idle);
// `plan_document`: plan_json(scenario, simulation.plan) when the caller kept it from an
// earlier run of the same plan (the Python API), lent: moved into the document's "plan",
// where the caller takes it back (BERT-Large's is 32 KB of op names, too much to copy per
// call); none: made here.
nlohmann::json report_json(const Scenario& scenario, const Simulation& simulation,
                           nlohmann::json* plan_document = nullptr);

// What reruns a document (`run --from`): the --set flags as given, the command line (none from
// Python or a sweep's point), and the version that wrote it.
struct Provenance {
  std::vector<std::string> overrides;
  const std::vector<std::string>* command_line = nullptr;
};
void add_provenance(nlohmann::json& document, const Provenance& provenance);
// The run document (`run --json`, Python's run, a sweep point's record): report_json and its provenance.
nlohmann::json run_document(const Scenario& scenario, const Simulation& simulation, const Provenance& provenance,
                            nlohmann::json* plan_document = nullptr);

} // namespace ipusim
