// Softmax and normalisations (popnn): row statistics by reductions, then element-wise
// passes that broadcast them back over the rows. LayerNorm and GroupNorm normalise over
// the last dimension of each token; BatchNormalization over everything but the channel
// (training statistics; at inference the running statistics make it a scale and a shift).
#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

namespace {

// Bytes of per-row statistics each tile needs to broadcast them over its elements.
double statistics_bytes(const TileContext& ctx, double n, double rows, DType dtype) {
  return std::min(rows, elements_per_tile(ctx, n, dtype)) * 4.0;
}

OpCost softmax(const TileContext& ctx, double n, double rows, DType dtype, Pass pass) {
  OpCost c;
  const double stats = statistics_bytes(ctx, n, rows, dtype);
  if (pass == Pass::Forward) {
    c += reduction(ctx, n, rows, dtype);  // the row maximum, for stability
    c += vector_pass(ctx, VectorOp::Sub, dtype, n, stats);
    c += vector_pass(ctx, VectorOp::Exp, dtype, n);
    c += reduction(ctx, n, rows, dtype);
    c += vector_pass(ctx, VectorOp::Inverse, DType::Float32, rows);
    c += vector_pass(ctx, VectorOp::Mul, dtype, n, stats);
    return c;
  }
  // dx = y * (dy - sum(dy * y))
  c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  c += reduction(ctx, n, rows, dtype);
  c += vector_pass(ctx, VectorOp::Sub, dtype, n, stats);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  return c;
}

// `groups`: the number of independent statistics (rows for LayerNorm, channels for BatchNorm).
OpCost normalise(const TileContext& ctx, double n, double groups, DType dtype, Pass pass, bool training,
                 double affine_elements) {
  OpCost c;
  const double stats = statistics_bytes(ctx, n, groups, dtype);
  if (pass == Pass::Forward) {
    if (training) {
      c += reduction(ctx, n, groups, dtype);  // sum
      c += vector_pass(ctx, VectorOp::Square, dtype, n);
      c += reduction(ctx, n, groups, dtype);  // sum of squares
      // mean, variance and 1/sqrt(variance + eps) per group, in float
      c += vector_pass(ctx, VectorOp::Mul, DType::Float32, groups);
      c += vector_pass(ctx, VectorOp::Sub, DType::Float32, groups);
      c += vector_pass(ctx, VectorOp::Rsqrt, DType::Float32, groups);
      c += vector_pass(ctx, VectorOp::Sub, dtype, n, stats);
    }
    c += vector_pass(ctx, VectorOp::Mul, dtype, n, stats);
    c += vector_pass(ctx, VectorOp::Mul, dtype, n, statistics_bytes(ctx, n, affine_elements, dtype));
    c += vector_pass(ctx, VectorOp::Add, dtype, n);
    return c;
  }
  // The normalised input is rebuilt, then dx = invstd * (g - mean(g) - xhat * mean(g * xhat))
  // with g = dy * gamma; the affine parameters' gradients reduce over the groups.
  c += vector_pass(ctx, VectorOp::Sub, dtype, n, stats);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n, stats);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  c += reduction(ctx, n, groups, dtype);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n);
  c += reduction(ctx, n, groups, dtype);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n, stats);
  c += vector_pass(ctx, VectorOp::Sub, dtype, n);
  c += vector_pass(ctx, VectorOp::Mul, dtype, n, stats);
  if (affine_elements > 0) {
    c += vector_pass(ctx, VectorOp::Mul, dtype, n);
    c += reduction(ctx, n, affine_elements, dtype);
    c += reduction(ctx, n, affine_elements, dtype);
  }
  return c;
}

} // namespace

OpCost normalisation_family(const TileContext& ctx, const OpWork& w) {
  const Operand& x = w.inputs.at(0);
  const double n = x.elements();
  const DType dtype = w.dtype;
  OpCost c;
  if (w.pass == Pass::Backward && !x.needs_gradient && w.op_type == "Softmax") return c;
  if (w.op_type == "Softmax") return softmax(ctx, n, n / static_cast<double>(x.dim(1)), dtype, w.pass);
  double affine = 0;
  for (std::size_t i = 1; i < w.inputs.size() && i < 3; ++i) affine = std::max(affine, w.inputs[i].elements());
  if (w.op_type == "BatchNormalization") {
    const double channels = static_cast<double>(x.shape.size() > 1 ? x.shape[1] : 1);
    c = normalise(ctx, n, channels, dtype, w.pass, w.training, channels);
  } else {
    c = normalise(ctx, n, n / static_cast<double>(x.dim(1)), dtype, w.pass, true, affine);
  }
  if (w.pass == Pass::Backward) c += accumulate_weight_gradients(ctx, w);
  return c;
}

} // namespace ipusim
