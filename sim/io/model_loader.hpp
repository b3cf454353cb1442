#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/io/model.hpp"
#include "sim/io/onnx_model_loader.hpp"

namespace ipusim {

// Reads and checks the file's shape (types, keys, sizes); graph rules live in sim/graph.
// A .onnx file is imported (sim/io/onnx_model_loader.hpp), anything else read as JSON.
Model load_model(const std::string& path, const OnnxImportOptions& onnx = {});
// Says what the import assumed or changed (Model::warnings), one "ipusim: warning:" line each.
void say_import_warnings(const Model& model, std::ostream& out);
Model model_from_json(const nlohmann::json& document, const std::string& origin);

} // namespace ipusim
