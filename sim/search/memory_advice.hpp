#pragma once
// What would make a configuration that does not fit in memory fit: each setting a user can
// change (recomputation, a smaller micro-batch, optimizer state off chip, replicated tensor
// sharding, a lower availableMemoryProportion, the embedding alone on IPU 0, more IPUs per
// pipeline) tried by the memory model on the scenario, with what it frees on the IPU that
// overflows most and what it costs in step time (the schedule's evaluator). Ranked: those that
// fit first, cheapest first; then those that do not, by the memory they free.
#include <cstddef>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/memory/memory.hpp"

namespace ipusim {

// Empty when `scenario` fits in `mode`.
std::vector<MemoryFix> memory_fixes(const Scenario& scenario, Mode mode);


} // namespace ipusim
