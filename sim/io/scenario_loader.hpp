#pragma once
#include <string>
#include <vector>

#include "sim/io/overrides.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

// Loads the scenario and the model and config it names (paths relative to the
// scenario file), applying overrides first so every check sees the values run.
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
// The same from a document; "model" and "config" may be paths or inline objects.
Scenario scenario_from_json(nlohmann::json document, const std::string& origin,
                            const std::vector<Override>& overrides = {});
// `run MODEL --config CONFIG` and `plan MODEL --config CONFIG`: a scenario without a file (its
// origin "command line"), every execution setting at its default but batchesPerStep 64
// (docs/formats.md, "Without a scenario file").
Scenario scenario_of_model(const std::string& model, const std::string& config, const std::vector<Override>& overrides);
// `s`, loaded from the scenario `document` with some overrides, with `execution_overrides`
// (each under "execution.") applied on top: what load_scenario gives with both lists, without
// reading or checking the model and config again (a sweep's points that change only the
// execution). An error is the one load_scenario would raise, not relabelled as --set's.
void reload_execution(Scenario& s, nlohmann::json document, const std::vector<Override>& execution_overrides);
Execution execution_from_json(const nlohmann::json& execution, const std::string& origin);
// Makes `s.model` and `s.hardware` what one IPU of a group of execution.tensorParallel runs and
// sees, from `s.unsharded` (set from them first when absent); with tensorParallel 1 restores them.
// Loading applies it; a caller that changes tensorParallel or the unsharded model calls it again.
void apply_tensor_parallel(Scenario& s);

} // namespace ipusim
