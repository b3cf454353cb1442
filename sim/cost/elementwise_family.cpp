// Element-wise ops on the tiles' vector units: popops unary and binary vertices, popnn
// non-linearities, casts and dropout. An op with n inputs combines them in n-1 passes; a
// broadcast operand (a bias, a mask) is exchanged to every tile first. The backward pass
// runs each input's gradient (a reduction over the broadcast dimensions for a broadcast
// operand) and accumulates weight gradients.
#include <algorithm>
#include <map>

#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

double operand_exchange_bytes(const TileContext& ctx, const OpWork& w, double output_elements, DType dtype) {
  const double on_tile = elements_per_tile(ctx, output_elements, dtype);
  double bytes = 0;
  for (const Operand& in : w.inputs) {
    const double share = std::min(in.elements(), on_tile) * static_cast<double>(dtype_bytes(in.dtype));
    if (in.elements() < output_elements || in.rearranged) bytes += share;
  }
  return bytes;
}

OpCost accumulate_weight_gradients(const TileContext& ctx, const OpWork& w) {
  OpCost c;
  if (!w.accumulates_weight_gradients) return c;
  for (const Operand& in : w.inputs)
    if (in.kind == TensorKind::Weight) c += vector_pass(ctx, VectorOp::Add, in.dtype, in.elements());
  c.weight_gradient_cycles = c.cycles();  // accumulating weight gradients is W's work
  return c;
}

namespace {

const std::map<std::string, VectorOp>& unary_forward() {
  static const std::map<std::string, VectorOp> table{
      {"Relu", VectorOp::Relu},       {"Neg", VectorOp::Neg},       {"Sqrt", VectorOp::Sqrt},
      {"Exp", VectorOp::Exp},         {"Tanh", VectorOp::Tanh},     {"Sigmoid", VectorOp::Sigmoid},
      {"Gelu", VectorOp::Gelu},       {"Scale", VectorOp::Mul},     {"Cast", VectorOp::Cast},
      {"Abs", VectorOp::Abs},         {"Log", VectorOp::Log},       {"Reciprocal", VectorOp::Inverse},
      {"Erf", VectorOp::GeluErf},
  };
  return table;
}

// The gradient of a unary op, as the pass that computes it.
const std::map<std::string, VectorOp>& unary_backward() {
  static const std::map<std::string, VectorOp> table{
      {"Relu", VectorOp::ReluGrad}, {"Neg", VectorOp::Neg},         {"Sqrt", VectorOp::Div},
      {"Exp", VectorOp::Mul},       {"Tanh", VectorOp::TanhGrad},   {"Sigmoid", VectorOp::SigmoidGrad},
      {"Gelu", VectorOp::GeluGrad}, {"Scale", VectorOp::Mul},       {"Cast", VectorOp::Cast},
      {"Abs", VectorOp::Mul},       {"Log", VectorOp::Div},         {"Reciprocal", VectorOp::Mul},
      {"Erf", VectorOp::GeluErf},
  };
  return table;
}

const std::map<std::string, VectorOp>& binary_ops() {
  static const std::map<std::string, VectorOp> table{
      {"Add", VectorOp::Add}, {"Sub", VectorOp::Sub}, {"Mul", VectorOp::Mul},
      {"Div", VectorOp::Div}, {"Max", VectorOp::Max}, {"Min", VectorOp::Max}, {"Sum", VectorOp::Add}};
  return table;
}

// The gradient reaching input `in` of a binary op: nothing to compute for Add, a negation
// for Sub's second input, products (and a quotient) otherwise; then a reduction over the
// dimensions it was broadcast along.
OpCost binary_input_gradient(const TileContext& ctx, const std::string& type, std::size_t index, const Operand& in,
                             double n, DType dtype) {
  OpCost c;
  const bool broadcast = in.elements() < n;
  if (type == "Mul" || type == "Max" || type == "Min") c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  if (type == "Div") {
    c += vector_pass(ctx, VectorOp::Div, dtype, n);
    if (index > 0) c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  }
  if (type == "Sub" && index > 0 && !broadcast) c += vector_pass(ctx, VectorOp::Neg, dtype, n);
  if (broadcast) c += reduction(ctx, n, in.elements(), dtype);
  return c;
}

} // namespace

OpCost elementwise_family(const TileContext& ctx, const OpWork& w) {
  const Operand& out = w.outputs.at(0);
  const double n = out.elements();
  const DType dtype = out.dtype;
  const double exchange = operand_exchange_bytes(ctx, w, n, dtype);
  OpCost c;
  if (w.op_type == "Identity") return c;  // a view in Poplar, inplaced by PopART
  if (w.pass == Pass::Forward) {
    if (auto it = binary_ops().find(w.op_type); it != binary_ops().end()) {
      // One pass per operand after the first; an operand that is a compile-time constant (a
      // rotary table, an epsilon, an exported model's scale) is not listed, yet x op c is a pass.
      const std::size_t passes = w.inputs.size() < 2 ? 1 : w.inputs.size() - 1;
      for (std::size_t i = 0; i < passes; ++i) c += vector_pass(ctx, it->second, dtype, n, i == 0 ? exchange : 0);
    } else if (auto u = unary_forward().find(w.op_type); u != unary_forward().end()) {
      c += vector_pass(ctx, u->second, dtype, n, exchange);
    } else if (w.op_type == "Dropout") {
      c += vector_pass(ctx, VectorOp::BernoulliMask, dtype, n, exchange);
      c += vector_pass(ctx, VectorOp::Mul, dtype, n);
    }
    return c;
  }
  if (auto it = binary_ops().find(w.op_type); it != binary_ops().end()) {
    for (std::size_t i = 0; i < w.inputs.size(); ++i)
      if (w.inputs[i].needs_gradient) {
        OpCost g = binary_input_gradient(ctx, w.op_type, i, w.inputs[i], n, dtype);
        // The gradient of a weight operand (a bias, a scale) is W's work.
        if (w.inputs[i].kind == TensorKind::Weight) g.weight_gradient_cycles = g.cycles();
        c += g;
      }
  } else if (!w.inputs.empty() && w.inputs[0].needs_gradient) {
    if (auto u = unary_backward().find(w.op_type); u != unary_backward().end()) {
      c += vector_pass(ctx, u->second, dtype, n);
    } else if (w.op_type == "Dropout") {
      // The mask is regenerated from the forward's seed, then applied to the gradient.
      c += vector_pass(ctx, VectorOp::BernoulliMask, dtype, n);
      c += vector_pass(ctx, VectorOp::Mul, dtype, n);
    }
  }
  c += accumulate_weight_gradients(ctx, w);
  return c;
}

} // namespace ipusim
