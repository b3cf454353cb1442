#include "sim/cost/op_work.hpp"

#include <algorithm>
#include <map>
#include <variant>

#include "sim/io/input_error.hpp"
#include "sim/io/tensor_parallel.hpp"

namespace ipusim {

namespace {

// FLOPs per output element of ops whose cost is proportional to their output. Estimates
// of the arithmetic per element: 1 for one operation, 4 for a transcendental (Sigmoid,
// Tanh, Erf), more for the composite ops. Shape ops that only relabel memory cost 0.
const std::map<std::string, double>& per_element_flops() {
  static const std::map<std::string, double> table{
      {"Add", 1},        {"Sub", 1},        {"Mul", 1},       {"Div", 1},         {"Pow", 1},
      {"Max", 1},        {"Min", 1},        {"Where", 1},     {"Equal", 1},       {"Less", 1},
      {"Greater", 1},    {"Not", 1},        {"And", 1},       {"Or", 1},          {"Relu", 1},
      {"Neg", 1},        {"Abs", 1},        {"Reciprocal", 1}, {"Scale", 1},      {"Sqrt", 1},
      {"Exp", 1},        {"Log", 1},        {"Cast", 1},      {"Identity", 1},    {"LeakyRelu", 2},
      {"Clip", 2},       {"Dropout", 2},    {"Sigmoid", 4},   {"Tanh", 4},        {"Erf", 4},
      {"Gelu", 8},       {"Softmax", 5},    {"LogSoftmax", 5}, {"LayerNorm", 8},  {"LayerNormalization", 8},
      {"GroupNorm", 8},  {"InstanceNormalization", 8},        {"BatchNormalization", 4},
      {"Gather", 1},     {"Transpose", 1},  {"Concat", 1},    {"Slice", 1},       {"Split", 1},
      {"Expand", 1},     {"Tile", 1},       {"Pad", 1},       {"Reshape", 0},     {"Flatten", 0},
      {"Squeeze", 0},    {"Unsqueeze", 0}};
  return table;
}

// FLOPs per element of the first input, for reductions and losses.
const std::map<std::string, double>& per_input_element_flops() {
  static const std::map<std::string, double> table{
      {"ReduceSum", 1},          {"ReduceMean", 1},        {"ReduceMax", 1}, {"ReduceMin", 1},
      {"ReduceSumSquare", 2},    {"ReduceL2", 2},          {"ArgMax", 1},    {"GlobalAveragePool", 1},
      {"GlobalMaxPool", 1},      {"SoftmaxCrossEntropy", 6}, {"SoftmaxCrossEntropyLoss", 6},
      {"NllLoss", 1},            {"NegativeLogLikelihoodLoss", 1}, {"L1Loss", 2}, {"MSELoss", 3}};
  return table;
}

double output_elements(const Model& m, const Op& op) {
  double n = 0;
  for (const auto& t : op.outputs) n += static_cast<double>(m.tensor(t).elements());
  return n;
}

double bytes_read(const Model& m, const Op& op, std::int64_t micro_batch_size) {
  double b = 0;
  for (const auto& t : op.inputs) b += m.tensor(t).bytes_per_micro_batch(micro_batch_size);
  return b;
}

double bytes_written(const Model& m, const Op& op, std::int64_t micro_batch_size) {
  double b = 0;
  for (const auto& t : op.outputs) b += m.tensor(t).bytes_per_micro_batch(micro_batch_size);
  return b;
}

[[noreturn]] void cannot_derive(const Model& m, const Op& op, const std::string& why) {
  const bool onnx = m.ops_pointer != "/ops";
  throw InputError(m.file, m.op_pointer(op), "op.flops-underivable",
                   "cannot derive the FLOPs of op \"" + op.name + "\" (type " + op.type + "): " + why +
                       "; give \"flops\" (forward FLOPs per sample)" +
                       (onnx ? " to the op in the model's JSON conversion (ipusim convert MODEL.onnx -o MODEL.json)" : ""));
}

std::int64_t int_attribute(const Op& op, const std::string& name, std::int64_t fallback) {
  const auto it = op.attributes.find(name);
  if (it == op.attributes.end()) return fallback;
  if (const auto* v = std::get_if<std::int64_t>(&it->second)) return *v;
  return fallback;
}

// Window elements of a pool: the product of its kernel_shape, 3 x 3 when it has none.
double pool_window(const Op& op) {
  const auto it = op.attributes.find("kernel_shape");
  if (it != op.attributes.end())
    if (const auto* k = std::get_if<std::vector<std::int64_t>>(&it->second)) {
      double n = 1;
      for (auto d : *k) n *= static_cast<double>(d);
      return n;
    }
  return 9;
}

} // namespace

double derived_flops_per_sample(const Model& m, const Op& op) {
  // Tensor-parallel collectives move data over IPU-Links; they compute nothing (sim/plan/tensor_parallel_cost.hpp).
  if (is_tensor_parallel_collective(op.type)) return 0;
  // Every op type whose work ipusim derives reads at least one operand (the cost families
  // size their work by it); an op that lists none has lost its inputs.
  if (op.inputs.empty()) cannot_derive(m, op, "it has no input");
  const double out = output_elements(m, op);
  if (op.type == "Gemm" || op.type == "MatMul") {
    if (op.inputs.size() < 2) cannot_derive(m, op, "it needs two inputs");
    const auto& a = m.tensor(op.inputs[0]).shape;
    if (a.empty()) cannot_derive(m, op, "its first input has no dimensions");
    // The contracted dimension: A's last, or with Gemm's transA its second-last (A is [K, M]).
    const bool transposed = op.type == "Gemm" && int_attribute(op, "transA", 0) != 0 && a.size() >= 2;
    const double k = static_cast<double>(transposed ? a[a.size() - 2] : a.back());
    return 2.0 * out * k + (op.inputs.size() > 2 ? out : 0.0);
  }
  if (op.type == "Conv") {
    if (op.inputs.size() < 2) cannot_derive(m, op, "it needs an input and a weight");
    const auto& w = m.tensor(op.inputs[1]).shape;  // [Cout, Cin/group, k...]
    if (w.size() < 2) cannot_derive(m, op, "its weight needs shape [Cout, Cin/group, kernel...]");
    double fan_in = 1;
    for (std::size_t i = 1; i < w.size(); ++i) fan_in *= static_cast<double>(w[i]);
    return 2.0 * out * fan_in + (op.inputs.size() > 2 ? out : 0.0);
  }
  if (op.type == "MaxPool" || op.type == "AveragePool") return pool_window(op) * out;
  if (auto it = per_element_flops().find(op.type); it != per_element_flops().end()) {
    // An n-input elementwise op combines n operands with n-1 operations per element.
    const bool combining = op.type == "Add" || op.type == "Sub" || op.type == "Mul" || op.type == "Div";
    const double operations = combining && op.inputs.size() > 2 ? static_cast<double>(op.inputs.size() - 1) : 1.0;
    return it->second * out * operations;
  }
  if (auto it = per_input_element_flops().find(op.type); it != per_input_element_flops().end()) {
    return it->second * static_cast<double>(m.tensor(op.inputs[0]).elements());
  }
  cannot_derive(m, op, "the op type is not one ipusim knows");
}

double Operand::elements() const {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  return n;
}

std::int64_t Operand::dim(int from_end) const {
  const auto rank = static_cast<int>(shape.size());
  return from_end >= 1 && from_end <= rank ? shape[static_cast<std::size_t>(rank - from_end)] : 1;
}

TensorFacts tensor_facts(const Model& m) {
  // Views keep their input's layout (Poplar reshapes and slices in place); a Transpose
  // permutes it. Fixed points, so the order of the ops in the file does not matter.
  static const std::set<std::string> views{"Reshape", "Flatten", "Identity", "Squeeze", "Unsqueeze"};
  TensorFacts f;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) f.need_gradient.insert(name);
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Op& op : m.ops) {
      bool rearranges = op.type == "Transpose", differentiable = false;
      for (const auto& t : op.inputs) {
        rearranges = rearranges || (views.count(op.type) && f.rearranged.count(t));
        differentiable = differentiable || f.need_gradient.count(t);
      }
      for (const auto& t : op.outputs) {
        if (rearranges) changed = f.rearranged.insert(t).second || changed;
        if (differentiable) changed = f.need_gradient.insert(t).second || changed;
      }
    }
  }
  return f;
}

namespace {

Operand operand_of(const Model& m, const std::string& name, std::int64_t micro_batch_size, const TensorFacts& facts) {
  const Tensor& t = m.tensor(name);
  Operand o;
  o.name = name;
  o.dtype = t.dtype;
  o.kind = t.kind;
  o.rearranged = facts.rearranged.count(name) > 0;
  o.needs_gradient = facts.need_gradient.count(name) > 0;
  if (t.kind != TensorKind::Weight) o.shape.push_back(micro_batch_size);
  o.shape.insert(o.shape.end(), t.shape.begin(), t.shape.end());
  return o;
}

} // namespace

OpWork forward_work(const Model& m, const Op& op, std::int64_t micro_batch_size, const TensorFacts& facts) {
  const double mbs = static_cast<double>(micro_batch_size);
  OpWork w;
  w.op_type = op.type;
  w.dtype = m.tensor(op.outputs.front()).dtype;
  w.declared_flops = op.flops.has_value();
  w.flops = (op.flops ? *op.flops : derived_flops_per_sample(m, op)) * mbs;
  double parallel = 0;
  for (const auto& t : op.outputs) parallel += m.tensor(t).bytes_per_micro_batch(micro_batch_size) /
                                               static_cast<double>(dtype_bytes(m.tensor(t).dtype));
  // A reduction or loss splits over its input, not its (tiny) output.
  if (per_input_element_flops().count(op.type) && !op.inputs.empty())
    parallel = std::max(parallel, m.tensor(op.inputs[0]).bytes_per_micro_batch(micro_batch_size) /
                                      static_cast<double>(dtype_bytes(m.tensor(op.inputs[0]).dtype)));
  w.parallel_elements = parallel;
  w.input_bytes = bytes_read(m, op, micro_batch_size);
  w.attributes = op.attributes;
  for (const auto& t : op.inputs) w.inputs.push_back(operand_of(m, t, micro_batch_size, facts));
  for (const auto& t : op.outputs) w.outputs.push_back(operand_of(m, t, micro_batch_size, facts));
  return w;
}

OpWork backward_work(const Model& m, const Op& op, std::int64_t micro_batch_size, const TensorFacts& facts) {
  OpWork w = forward_work(m, op, micro_batch_size, facts);
  w.pass = Pass::Backward;
  w.declared_flops = op.backward_flops.has_value() || op.flops.has_value();
  w.flops = op.backward_flops ? *op.backward_flops * static_cast<double>(micro_batch_size) : 2.0 * w.flops;
  w.input_bytes += bytes_written(m, op, micro_batch_size);  // the gradients of its outputs
  return w;
}

int optimizer_state_tensors(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::Sgd: return 0;
  case Optimizer::Momentum:
  case Optimizer::Lars: return 1;
  case Optimizer::Adam:
  case Optimizer::Lamb: return 2;
  }
  return 0;
}

OpWork weight_update_work(double weight_elements, double weight_bytes, DType dtype, Optimizer optimizer,
                          DType state_dtype, double weight_tensors) {
  double flops_per_weight = 2;
  switch (optimizer) {
  case Optimizer::Sgd: flops_per_weight = 2; break;
  case Optimizer::Momentum: flops_per_weight = 4; break;
  case Optimizer::Adam: flops_per_weight = 12; break;
  case Optimizer::Lamb: flops_per_weight = 16; break;
  case Optimizer::Lars: flops_per_weight = 8; break;
  }
  OpWork w;
  w.op_type = "WeightUpdate";
  w.pass = Pass::Update;
  w.dtype = dtype;
  w.optimizer = optimizer;
  w.state_dtype = state_dtype;
  w.weight_tensors = weight_tensors;
  w.outputs.push_back({"weights", {static_cast<std::int64_t>(weight_elements)}, dtype, TensorKind::Weight, false, true});
  w.flops = flops_per_weight * weight_elements;
  w.parallel_elements = weight_elements;
  w.input_bytes = 2.0 * weight_bytes + optimizer_state_tensors(optimizer) * weight_elements *
                                           static_cast<double>(dtype_bytes(state_dtype));
  return w;
}

} // namespace ipusim
