#pragma once
// The "Why" paragraph under `ipusim run`'s table: how the modes compare, where each
// mode's IPU time goes (idle time by cause), the IPU and stage that pace the step, and
// which changes address the largest losses. docs/step-time.md lists the rules.
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

std::string explain_runs(const Scenario& scenario, const Simulation& simulation);

// Whether a run's physical IPUs differ from its virtual ones (replicas, or a placement):
// then every output names both. A physical IPU is "IPU 5 (replica 1, vIPU 1)", else
// "IPU 5"; the plan and the memory report count one pipeline's virtual IPUs ("vIPU 1").
bool ipus_placed(const RunMetrics& run);
// "IPU 3", placed "IPU 3 (replica 1, vIPU 0)"; with tensor parallelism over groups of
// `group` IPUs the group the engine's IPU stands for, "IPUs 16-31 (replica 0, vIPU 1)".
std::string physical_ipu_name(const IpuMetrics& ipu, bool placed, int group = 1);
std::string virtual_ipu_name(int virtual_ipu, bool placed);

} // namespace ipusim
