#pragma once
// Reads an ONNX model (PopART-annotated or not) into the same Model as a JSON model file:
// nodes become ops, float initializers weights, the other graph inputs host inputs, and
// the graph outputs anchors. docs/formats.md ("ONNX models") gives every rule.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/io/model.hpp"

namespace ipusim {

struct OnnxImportOptions {
  // The size of a static leading batch dimension in the file. Unset: a symbolic leading
  // dimension shared by every graph input is the batch; without one, shapes are per sample.
  std::optional<std::int64_t> batch_size;
  // The precision the model runs in: every float tensor becomes this type (an export keeps
  // PyTorch's fp32 weights whatever precision the IPU runs). Unset: as the file has them.
  std::optional<DType> float_dtype;
};

bool is_onnx_path(const std::string& path);
Model load_onnx_model(const std::string& path, const OnnxImportOptions& options = {});

// libonnx's shape inference runs in a forked child (a crash there is an input error, not
// a crash of ipusim: onnx_shape_folding.hpp). The fuzz targets infer in their own process,
// so that libFuzzer sees libonnx's coverage and its crashes (each one a check to add
// before inference, onnx_structure_check.cpp).
void infer_onnx_shapes_in_process(bool in_process);

} // namespace ipusim
