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
Execution execution_from_json(const nlohmann::json& execution, const std::string& origin);

} // namespace ipusim
