// MatMul, Gemm and Conv on the AMP units (amp_planner.hpp). Training runs three
// matmuls per op as poplibs' fully-connected passes do: the forward, the gradient of the
// input (dY . W^T, whose weights are laid out for the forward and must be rearranged) and
// the gradient of the weights (X^T . dY), plus the bias gradient (a reduction of dY) and
// the accumulation of the weight gradients.
#include <cmath>
#include <variant>

#include "sim/cost/amp_planner.hpp"
#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

namespace {

struct Dims {
  double groups = 1, rows = 1, inputs = 1, outputs = 1, kernel = 1;
};

Dims dims_of(const TileContext& ctx, const OpWork& w) {
  const Operand& a = w.inputs.at(0);
  const Operand& b = w.inputs.at(1);
  const Operand& y = w.outputs.at(0);
  Dims d;
  if (w.op_type == "Conv") {
    // x [batch, Cin, H, W], weight [Cout, Cin/group, k...], y [batch, Cout, Ho, Wo].
    const double cin = static_cast<double>(a.shape.size() > 1 ? a.shape[1] : 1);
    const double cin_per_group = static_cast<double>(b.shape.size() > 1 ? b.shape[1] : 1);
    const double cout = static_cast<double>(y.shape.size() > 1 ? y.shape[1] : 1);
    d.groups = std::max(1.0, std::round(cin / cin_per_group));
    d.rows = y.elements() / cout;
    d.inputs = cin_per_group;
    d.outputs = cout / d.groups;
    for (std::size_t i = 2; i < b.shape.size(); ++i) d.kernel *= static_cast<double>(b.shape[i]);
    // Few input channels waste the AMP's channel groups; poplibs folds the kernel's
    // innermost dimension into the channels instead ("expand dims").
    const double grain = ctx.arch.input_channels_per_group(a.dtype);
    if (d.inputs < grain && b.shape.size() > 2) {
      const double width = static_cast<double>(b.shape.back());
      d.inputs *= width;
      d.kernel /= width;
    }
    return d;
  }
  // Gemm's transA stores A as [K, M]: the contracted dimension is its second-last.
  bool transposed_a = false;
  if (auto it = w.attributes.find("transA"); it != w.attributes.end())
    if (const auto* v = std::get_if<std::int64_t>(&it->second)) transposed_a = *v != 0;
  d.inputs = static_cast<double>(a.dim(transposed_a ? 2 : 1));
  d.outputs = static_cast<double>(y.dim(1));
  if (a.kind == TensorKind::Weight || b.kind == TensorKind::Weight) {
    d.rows = y.elements() / d.outputs;  // every row of every sample shares the weights
  } else {
    d.rows = static_cast<double>(y.dim(2));
    d.groups = y.elements() / (d.rows * d.outputs);
  }
  return d;
}

OpCost planned(const TileContext& ctx, double groups, double rows, double inputs, double outputs, double kernel,
               DType dtype, bool lhs_in_place, bool rhs_in_place) {
  MatMulShape s;
  s.groups = groups;
  s.rows = rows;
  s.inputs = inputs;
  s.outputs = outputs;
  s.kernel_positions = kernel;
  s.dtype = dtype;
  s.output_dtype = dtype;
  s.lhs_in_place = lhs_in_place;
  s.rhs_in_place = rhs_in_place;
  return plan_matmul(ctx, s).cost;
}

// PopART's serializeMatMul (builder.setSerializeMatMul; transforms/serializematmuls.cpp): the
// matmul and its two gradients run as `factor` matmuls over one dimension cut in `factor`
// parts, each planned on its own (so its temporaries are 1/factor), and the partial results
// of a split contracted dimension are added in place.
struct Serialization {
  enum class Dim { None, InputChannels, ReducingDim, OutputChannels } dim = Dim::None;
  double factor = 1;
};

Serialization serialization_of(const OpWork& w) {
  Serialization s;
  const auto mode = w.attributes.find("__serialize_matmul_mode");
  const auto factor = w.attributes.find("__serialize_matmul_factor");
  if (mode == w.attributes.end() || factor == w.attributes.end()) return s;
  const auto* name = std::get_if<std::string>(&mode->second);
  const auto* f = std::get_if<std::int64_t>(&factor->second);
  if (!name || !f || *f < 2) return s;
  if (*name == "input_channels") s.dim = Serialization::Dim::InputChannels;
  else if (*name == "reducing_dim") s.dim = Serialization::Dim::ReducingDim;
  else if (*name == "output_channels") s.dim = Serialization::Dim::OutputChannels;
  else return s;
  s.factor = static_cast<double>(*f);
  return s;
}

} // namespace

OpCost matmul_family(const TileContext& ctx, const OpWork& w) {
  const Serialization serial = w.op_type == "Conv" ? Serialization{} : serialization_of(w);
  Dims d = dims_of(ctx, w);
  // One of the `factor` parts; the parts' costs are added below.
  using Dim = Serialization::Dim;
  if (serial.dim == Dim::InputChannels) d.rows /= serial.factor;
  if (serial.dim == Dim::ReducingDim) d.inputs /= serial.factor;
  if (serial.dim == Dim::OutputChannels) d.outputs /= serial.factor;
  const double parts = serial.factor;
  const Operand& a = w.inputs.at(0);
  const Operand& b = w.inputs.at(1);
  const DType dtype = a.dtype == DType::Float32 || b.dtype == DType::Float32 ? DType::Float32 : DType::Float16;
  const bool has_bias = w.inputs.size() > 2;
  const double out_elements = w.outputs.at(0).elements();
  OpCost c;
  // The in-place sums of a serialised contraction: parts-1 adds over the result.
  auto sums = [&](double elements) {
    return parts > 1 ? vector_pass(ctx, VectorOp::Add, DType::Float32, elements) * (parts - 1) : OpCost{};
  };
  if (w.pass == Pass::Forward) {
    c = planned(ctx, d.groups, d.rows, d.inputs, d.outputs, d.kernel, dtype, !a.rearranged,
                b.kind == TensorKind::Weight && !b.rearranged) *
        parts;
    if (serial.dim == Dim::ReducingDim) c += sums(out_elements);
    if (has_bias) c += vector_pass(ctx, VectorOp::Add, w.dtype, out_elements,
                                   operand_exchange_bytes(ctx, w, out_elements, w.dtype));
    return c;
  }
  // dX = dY . W^T: the forward's weights, transposed, are exchanged in full.
  if (a.needs_gradient) {
    c += planned(ctx, d.groups, d.rows, d.outputs * d.kernel, d.inputs, 1, dtype, true, false) * parts;
    if (serial.dim == Dim::OutputChannels) c += sums(a.elements());
  }
  // dW = X^T . dY: the rows become the contracted dimension. It, the bias gradient and the
  // accumulation are W; dX is B.
  OpCost wg;
  if (b.needs_gradient) {
    wg += planned(ctx, d.groups, d.inputs * d.kernel, d.rows, d.outputs, 1, dtype, false, true) * parts;
    if (serial.dim == Dim::InputChannels) wg += sums(b.elements());
  }
  if (has_bias && w.inputs[2].needs_gradient) wg += reduction(ctx, out_elements, w.inputs[2].elements(), w.dtype);
  wg += accumulate_weight_gradients(ctx, w);
  wg.weight_gradient_cycles = wg.cycles();
  c += wg;
  return c;
}

} // namespace ipusim
