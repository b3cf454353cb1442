#include "sim/plan/distributed_norm_cost.hpp"

#include "sim/plan/tensor_parallel_cost.hpp"

namespace ipusim {

double distributed_norm_bytes(const Model& model, const Op& op, const Execution& ex, bool backward) {
  if (ex.distributed_batch_norm_replicas < 2 || !ex.training || op.type != "BatchNormalization") return 0;
  const Tensor& x = model.tensor(op.inputs.at(0));
  // Per-sample shape [C, ...]: the statistics are per channel.
  const double channels = x.shape.empty() ? 1.0 : static_cast<double>(x.shape.front());
  constexpr double kFloat = 4;  // poplibs' partials: the power and both deltas are float
  const double mean_bytes = backward ? kFloat : static_cast<double>(dtype_bytes(x.dtype));
  return channels * (mean_bytes + kFloat);
}

OpCost distributed_norm_cost(const HardwareConfig& hw, const Model& model, const Op& op, const Execution& ex,
                             bool backward) {
  OpCost c;
  const double bytes = distributed_norm_bytes(model, op, ex, backward);
  if (bytes <= 0) return c;
  const int group = static_cast<int>(ex.distributed_batch_norm_replicas);
  c.exchange_cycles = group_all_reduce_seconds(hw, 0, group, bytes) * hw.ipu.clock_hz;
  return c;
}

} // namespace ipusim
