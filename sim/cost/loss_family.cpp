// Losses (popnn). A loss reads a [rows x classes] input and labels. SoftmaxCrossEntropy
// runs a softmax, then picks each row's label probability; its gradient is the
// probabilities minus the one-hot labels. NllLoss picks and logs the label probabilities;
// its gradient is a zeroed input-sized tensor with one value per row. L1Loss and MSELoss
// are element-wise with a reduction.
#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

namespace {

OpCost per_row(const TileContext& ctx, double rows) {
  OpCost c = vector_pass(ctx, VectorOp::Log, DType::Float32, rows);
  c += vector_pass(ctx, VectorOp::Neg, DType::Float32, rows);
  return c;
}

} // namespace

OpCost loss_family(const TileContext& ctx, const OpWork& w) {
  const Operand& x = w.inputs.at(0);
  const double n = x.elements();
  const double rows = n / static_cast<double>(x.dim(1));
  const DType dtype = x.dtype;
  OpCost c;
  const bool forward = w.pass == Pass::Forward;
  if (!forward && !x.needs_gradient) return c;
  if (w.op_type == "SoftmaxCrossEntropy") {
    if (forward) {
      c += reduction(ctx, n, rows, dtype);
      c += vector_pass(ctx, VectorOp::Sub, dtype, n, rows * 4 / ctx.tiles);
      c += vector_pass(ctx, VectorOp::Exp, dtype, n);
      c += reduction(ctx, n, rows, dtype);
      c += per_row(ctx, rows);
    } else {
      c += vector_pass(ctx, VectorOp::Mul, dtype, n, rows * 4 / ctx.tiles);
      c += vector_pass(ctx, VectorOp::Sub, dtype, n);
    }
    return c;
  }
  if (w.op_type == "NllLoss") {
    if (forward) return per_row(ctx, rows);
    c += vector_pass(ctx, VectorOp::Zero, dtype, n);
    c += vector_pass(ctx, VectorOp::Div, DType::Float32, rows);
    return c;
  }
  // L1Loss, MSELoss: the difference, its magnitude or square, and the sum.
  if (forward) {
    c += vector_pass(ctx, VectorOp::Sub, dtype, n);
    c += vector_pass(ctx, w.op_type == "L1Loss" ? VectorOp::Abs : VectorOp::Square, dtype, n);
    c += reduction(ctx, n, w.outputs.at(0).elements(), dtype);
    return c;
  }
  c += vector_pass(ctx, VectorOp::Sub, dtype, n);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  return c;
}

} // namespace ipusim
