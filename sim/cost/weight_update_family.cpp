// The optimizer step over one IPU's weights (PopART's VarUpdate ops, popops element-wise
// vertices over the optimizer state). Passes per element, in the state's dtype:
//   SGD       w -= lr g                                            1 scaled add
//   momentum  v = m v + g; w -= lr v                               2 scaled adds
//   Adam      m, v = a m + b g, a' v + b' g^2; u = m / (sqrt(v) + eps); w -= lr u
//             -> 2 scaled adds, a square, a square root, an add, a divide, a scaled add
//   LAMB      Adam's u plus weight decay, then per tensor ||w|| and ||u|| (two reductions
//             of squares) and w -= lr (||w|| / ||u||) u
//   LARS      per tensor ||w|| and ||g|| (two reductions of squares), g + wd w scaled by
//             the trust ratio, then momentum (Graphcore's MLPerf ResNet lars_optimizer.py:
//             norms, trust ratio, grad + weight_decay * var, apply_momentum)
// and, with gradient accumulation, the accumulators are zeroed for the next step. Each
// tensor's update is its own sequence of compute sets, so syncs scale with the tensors.
#include <cmath>
#include <vector>

#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

OpCost weight_update_family(const TileContext& ctx, const OpWork& w) {
  const Operand& weights = w.outputs.at(0);
  const double n = weights.elements();
  const double tensors = std::max(1.0, w.weight_tensors);
  const DType state = w.optimizer == Optimizer::Sgd ? weights.dtype : w.state_dtype;
  std::vector<VectorOp> passes;
  switch (w.optimizer) {
  case Optimizer::Sgd: passes = {VectorOp::Add}; break;
  case Optimizer::Momentum: passes = {VectorOp::Add, VectorOp::Add}; break;
  case Optimizer::Adam:
    passes = {VectorOp::Add, VectorOp::Square, VectorOp::Add, VectorOp::Sqrt, VectorOp::Add, VectorOp::Div,
              VectorOp::Add};
    break;
  case Optimizer::Lamb:
    passes = {VectorOp::Add, VectorOp::Square, VectorOp::Add, VectorOp::Sqrt, VectorOp::Add,
              VectorOp::Div, VectorOp::Add, VectorOp::Square, VectorOp::Square, VectorOp::Mul, VectorOp::Add};
    break;
  case Optimizer::Lars:
    passes = {VectorOp::Square, VectorOp::Square, VectorOp::Add, VectorOp::Mul, VectorOp::Add, VectorOp::Add};
    break;
  }
  OpCost c;
  for (VectorOp op : passes) c += vector_pass(ctx, op, state, n);
  double compute_sets = static_cast<double>(passes.size());
  if (w.optimizer == Optimizer::Lamb || w.optimizer == Optimizer::Lars) {
    c += reduction(ctx, n, tensors, state);
    c += reduction(ctx, n, tensors, state);
    compute_sets += 2;
  }
  if (w.accumulates_weight_gradients) {
    c += vector_pass(ctx, VectorOp::Zero, weights.dtype, n);
    compute_sets += 1;
  }
  // The passes above ran once over all the IPU's weights; PopART runs them tensor by tensor.
  c.sync_cycles += (tensors - 1) * compute_sets * ctx.arch.compute_set_sync_cycles;
  return c;
}

} // namespace ipusim
