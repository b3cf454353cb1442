#pragma once
// `ipusim costs`: where a stage's time goes, op type by op type (or op by op): count,
// forward and backward time per micro-batch split into compute, on-chip exchange and
// syncs, and the largest temporaries. Reads the plan only.
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"

namespace ipusim {

// `stage` < 0: every forward stage. `per_op`: one row per op instead of per op type.
std::string render_cost_table(const Scenario& scenario, const Plan& plan, int stage, bool per_op);

} // namespace ipusim
