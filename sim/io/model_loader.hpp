#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/io/model.hpp"

namespace ipusim {

// Reads and checks the file's shape (types, keys, sizes); graph rules live in sim/graph.
Model load_model(const std::string& path);
Model model_from_json(const nlohmann::json& document, const std::string& origin);

} // namespace ipusim
