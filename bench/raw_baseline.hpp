#pragma once
// The fair raw-SimGrid baseline: a run's own schedule, every program expanded into plain
// operations up front (execs, sync sleeps, barriers, host streams, Streaming Memory
// transfers, copies), run on the same platform with the same settings by actors that do
// nothing but make the same SimGrid calls as ipusim's engine (permanent receivers, sends
// reaped as they finish). No events, metrics, program cursor or steady state: what is
// left is SimGrid's own cost for the work, which ipusim's full simulation is compared with.
#include <cstdint>

#include "sim/io/hardware.hpp"
#include "sim/schedule/program.hpp"

namespace bench {

struct RawResult {
  std::uint64_t activities = 0;  // counted as ipusim counts them
  double end_time = 0;           // simulated, to check it is the same work
};

// SimGrid: one simulation per process. Call it in a fresh (forked) process.
RawResult run_raw(const ipusim::Schedule& schedule, const ipusim::HardwareConfig& hardware);

} // namespace bench
