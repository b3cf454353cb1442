#pragma once
// The evaluators of the TensorFlow and GPU-style schedules (evaluator.hpp dispatches to them).
#include "sim/search/evaluator.hpp"

namespace ipusim {

// StepModel::TensorFlowSteps: the schedule's lockstep steps, each run costed once: per step
// the slowest IPU's streams and compute, the sync, the copies the step produced.
StepEstimate estimate_lockstep_step(const Execution& execution, const Plan& plan, RouteTable& routes);

// StepModel::AllForwardsFirst and OneForwardOneBackward: each IPU's tasks in order, a task
// starting once its IPU is free and its input copy has landed; sends do not wait. Then the
// weight update (every IPU at once) or a sync.
StepEstimate estimate_async_step(const Execution& execution, const Plan& plan, RouteTable& routes);

} // namespace ipusim
