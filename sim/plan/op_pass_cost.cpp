#include "sim/plan/op_pass_cost.hpp"

#include "sim/io/tensor_parallel.hpp"
#include "sim/plan/distributed_norm_cost.hpp"
#include "sim/plan/tensor_parallel_cost.hpp"

namespace ipusim {

OpCommunication op_communication(const HardwareConfig& hw, const Model& m, const Op& op, const Execution& ex,
                                 std::int64_t micro_batch_size) {
  OpCommunication c;
  c.replaces_compute = is_tensor_parallel_collective(op.type);
  if (c.replaces_compute) {
    c.forward = tensor_parallel_collective_cost(hw, m, op, false, micro_batch_size);
    if (ex.training) c.backward = tensor_parallel_collective_cost(hw, m, op, true, micro_batch_size);
    return c;
  }
  c.forward = distributed_norm_cost(hw, m, op, ex, false);
  c.backward = distributed_norm_cost(hw, m, op, ex, true);
  return c;
}

OpCost op_pass_cost(const OpCommunication& communication, const CostModel& cost_model, const OpWork& work,
                    bool backward) {
  const OpCost& exchange = backward ? communication.backward : communication.forward;
  if (communication.replaces_compute) return exchange;
  OpCost c = cost_model.cost(work);
  c += exchange;
  return c;
}

} // namespace ipusim
