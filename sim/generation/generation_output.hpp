#pragma once
// A generation's figures as `run` prints them: a table, or the JSON document's "generation".
#include <string>

#include <nlohmann/json.hpp>

#include "sim/generation/generation.hpp"

namespace ipusim {

std::string render_generation_table(const Scenario& scenario, const GenerationReport& report);
nlohmann::json generation_json(const Scenario& scenario, const GenerationReport& report);

} // namespace ipusim
