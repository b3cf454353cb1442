#pragma once
// One op's pass (forward, or its gradient) as the plan and the planner's cost tables time it:
// the IPU's cost model for the compute, plus what the cost model does not see. A collective
// the tensor-parallel transform inserted is exchange only (tensor_parallel_cost.hpp); a
// BatchNormalization with distributed statistics adds their all-reduce (distributed_norm_cost.hpp).
// Both depend on the op and the system, not on the cost model's options, so they are timed
// once per op and added to each cost model's compute.
#include "sim/cost/cost_model.hpp"
#include "sim/io/hardware.hpp"
#include "sim/io/model.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

struct OpCommunication {
  bool replaces_compute = false;  // a tensor-parallel collective: its exchange is the whole pass
  OpCost forward, backward;       // that collective's passes, or the statistics' all-reduces
};

OpCommunication op_communication(const HardwareConfig& hardware, const Model& model, const Op& op,
                                 const Execution& execution, std::int64_t micro_batch_size);

// The pass's cost: `work` on `cost_model` plus the op's communication in that pass.
OpCost op_pass_cost(const OpCommunication& communication, const CostModel& cost_model, const OpWork& work,
                    bool backward);

} // namespace ipusim
