#pragma once
// `ipusim annotate`: places an ONNX model's nodes on IPUs and pipeline stages the way
// Graphcore's examples place layers, writing PopART's __ipu_number / __pipeline_stage, or, for
// phased execution, in execution phases (__execution_phase, one per layer).
// Layers are found as repeated blocks of names (docs/formats.md, "Annotating an ONNX model").
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/onnx_model_loader.hpp"

namespace ipusim {

struct AnnotateOptions {
  std::vector<std::int64_t> layers_per_ipu;  // detected layers on IPU 0, 1, ...
  bool heads_on_last = true;                 // else back on IPU 0 in a new final stage
  std::vector<std::string> split_at;         // node-name prefixes starting IPU 1, 2, ... (instead of layers)
  int phased_stages = 0;  // > 0 (1 or 2): a phase per detected layer, phase p on IPU p % phased_stages
  OnnxImportOptions import;                  // for a .json output
};

struct Annotation {
  std::vector<std::string> layers;  // the detected layers, in order (empty with split_at)
  std::vector<int> ipu_of_node;     // by ONNX node index
  std::vector<int> stage_of_node;
  std::vector<int> phase_of_node;   // phased only
  std::string output;               // the annotated model: ONNX bytes, or JSON text for a .json output
};

Annotation annotate_onnx_model(const std::string& input, const std::string& output_path, const AnnotateOptions& options);

} // namespace ipusim
