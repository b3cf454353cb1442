// Reductions and pooling. ReduceSum / ReduceMean / GlobalAveragePool reduce their input to
// their output (popops reduce); their gradient broadcasts the output's gradient back over
// the input. MaxPool / AveragePool run popnn's pooling vertices: 3 cycles per vector of
// channels per kernel position, 5 for max pooling's gradient (poolVertexCyclesPerVector).
#include <algorithm>
#include <cmath>
#include <variant>

#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

OpCost reduction_family(const TileContext& ctx, const OpWork& w) {
  const Operand& in = w.inputs.at(0);
  const Operand& out = w.outputs.at(0);
  const DType dtype = in.dtype;
  OpCost c;
  if (w.op_type == "MaxPool" || w.op_type == "AveragePool") {
    // The window is the op's kernel_shape (ONNX's attribute); without one, 3 x 3.
    double window = 9;
    if (auto it = w.attributes.find("kernel_shape"); it != w.attributes.end())
      if (const auto* k = std::get_if<std::vector<std::int64_t>>(&it->second)) {
        window = 1;
        for (auto d : *k) window *= static_cast<double>(d);
      }
    const bool max_grad = w.op_type == "MaxPool" && w.pass == Pass::Backward;
    if (w.pass == Pass::Backward && !in.needs_gradient) return c;
    const VertexRate rate{max_grad ? 5.0 : 3.0, static_cast<double>(ctx.arch.vector_width(dtype)), 30};
    const double positions = elements_per_tile(ctx, out.elements(), dtype) * window;
    return compute_set(ctx, multivertex_cycles(ctx, positions, rate),
                       elements_per_tile(ctx, in.elements(), dtype) * static_cast<double>(dtype_bytes(dtype)));
  }
  if (w.pass == Pass::Forward) {
    c += reduction(ctx, in.elements(), out.elements(), dtype);
    if (w.op_type != "ReduceSum") c += vector_pass(ctx, VectorOp::Mul, out.dtype, out.elements());
    return c;
  }
  if (in.needs_gradient)
    c += vector_pass(ctx, w.op_type == "ReduceSum" ? VectorOp::Copy : VectorOp::Mul, dtype, in.elements(),
                     std::min(out.elements(), elements_per_tile(ctx, in.elements(), dtype)) *
                         static_cast<double>(dtype_bytes(out.dtype)));
  return c;
}

} // namespace ipusim
