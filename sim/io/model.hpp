#pragma once
// An annotated model as read from models/*.json: tensors and ops, with PopART's
// virtualGraph / pipelineStage annotations kept exactly as the file gave them.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ipusim {

// Float8: PopART's FLOAT8 (one byte; Graphcore's MLPerf BERT stashes its checkpoints so).
enum class DType { Float16, Float32, Int32, Int64, Int8, Float8, Bool };
enum class TensorKind { Input, Weight, Activation };

std::optional<DType> parse_dtype(const std::string& name);
std::string dtype_name(DType dtype);
std::int64_t dtype_bytes(DType dtype);
std::string tensor_kind_name(TensorKind kind);
bool is_float_dtype(DType dtype);

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;  // per sample for inputs and activations
  DType dtype = DType::Float32;
  TensorKind kind = TensorKind::Activation;

  std::int64_t elements() const;
  // Bytes of one copy of the tensor: per sample for inputs/activations, whole for weights.
  std::int64_t bytes() const { return elements() * dtype_bytes(dtype); }
  // Bytes for one micro-batch: inputs and activations scale with it, weights do not.
  double bytes_per_micro_batch(std::int64_t micro_batch_size) const;
};

// An op attribute as ONNX carries it (kernel_shape, strides, pads, group, transA, axis, ...).
using AttributeValue =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<double>>;

struct Op {
  std::size_t index = 0;         // position in Model::ops (graphs index their per-op tables by it)
  std::size_t source_index = 0;  // position in the file: the "ops" array, or the ONNX node (error locations);
                                 // differs from index where the importer drops nodes (Constant, Shape)
  std::string name;
  std::string type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::optional<std::int64_t> virtual_graph;
  std::optional<std::int64_t> pipeline_stage;
  // PopART's third annotation (executionPhase, ONNX __execution_phase): the phase the op runs
  // in under VirtualGraphMode::ExecutionPhases. Read, checked and written back; the sharded and
  // pipelined modes do not use it, and say so (ModelGraph::phase_count).
  std::optional<std::int64_t> execution_phase;
  std::optional<double> flops;           // forward FLOPs per sample
  std::optional<double> backward_flops;  // backward FLOPs per sample
  std::map<std::string, AttributeValue> attributes;  // what the cost model may read beyond the shapes
};

struct Model {
  std::string file;
  std::string name;
  std::map<std::string, Tensor> tensors;
  std::vector<Op> ops;
  std::vector<std::string> anchors;  // tensors streamed to the host; empty = graph outputs
  std::string ops_pointer = "/ops";  // where ops live in the file: "/graph/node" for ONNX
  // What an import assumed or changed that the user should know (an ONNX file's merged
  // parameters, a static batch read as per-sample shape): said by every command reading it.
  std::vector<std::string> warnings;

  const Tensor& tensor(const std::string& tensor_name) const { return tensors.at(tensor_name); }
  // Every float16/float32 tensor becomes `dtype` (the precision the model runs in).
  void set_float_dtype(DType dtype);
  std::string op_pointer(const Op& op) const { return ops_pointer + "/" + std::to_string(op.source_index); }
  // Refuses an op that reads or writes a tensor `tensors` does not declare (tensor.unknown):
  // the graph checks it, and so does the tensor-parallel sharding that runs before the graph.
  void check_declared(const Op& op) const;
  // Virtual IPUs the annotations use: the highest virtualGraph plus one (1 unannotated).
  std::int64_t virtual_ipu_count() const {
    std::int64_t count = 1;
    for (const Op& op : ops) count = std::max(count, op.virtual_graph.value_or(0) + 1);
    return count;
  }
};

} // namespace ipusim
