#pragma once
// A Model written back in ipusim's JSON model format (docs/formats.md), one tensor and
// one op per line, so an imported ONNX model can be read, edited and run as JSON.
#include <string>

#include "sim/io/model.hpp"

namespace ipusim {

// `description` goes into the file's "description".
std::string model_to_json_text(const Model& model, const std::string& description);

} // namespace ipusim
