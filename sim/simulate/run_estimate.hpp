#pragma once
// What a run will cost before it starts: its programs are counted (not built), and
// memory and time follow from the counts with per-item sizes of this build, so an input
// too large for the machine is refused at once (scenario.too-large) instead of running
// out of memory late. The estimate is an upper bound of the peak memory of the ipusim
// process plus its simulation process (docs/reliability.md measures it).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// The executable, its libraries and SimGrid's engine, measured at about 30 MiB per process:
// what any ipusim process holds before its own data.
inline constexpr double kProcessBaseBytes = 64.0 * (1 << 20);

struct RunEstimate {
  std::uint64_t steps = 0, transfers = 0;  // every mode's programs together
  double peak_bytes = 0;                   // ipusim + the simulation process, at their largest
  double seconds = 0;                      // wall time of the simulations
  std::string grows_with_micro_batches;    // the first schedule whose simulation does (RunAhead), or empty
};

// Refuses (InputError scenario.too-large, pointing at the field that makes the run large)
// when the run would need more memory than the machine has: check_run_size, then the modes'
// schedules built and estimate_schedules.
RunEstimate estimate_run(const Scenario& scenario, const Plan& plan, const std::vector<Mode>& modes, bool trace);
// The refusals made before any schedule is built: a step of more micro-batches than can be
// simulated, a transfer larger than the engine counts.
void check_run_size(const Scenario& scenario, const Plan& plan);
// The estimate of schedules already built, one per mode in the same order (a run builds them
// once, for this and the simulation).
RunEstimate estimate_schedules(const Scenario& scenario, const Plan& plan, const std::vector<Mode>& modes,
                               const std::vector<Schedule>& schedules, bool trace);

// "about 45 MiB and 0.2 s"
std::string describe_estimate(const RunEstimate& estimate);

// GPipe's forwards, and 1F1B's in inference, post their copies without waiting for the next
// stage (lockstep schedules never run ahead: both fields stay 0). Over `schedule`'s chains of
// copies:
struct RunAhead {
  // Where a copy takes its route longer than the stages up to its sender take a micro-batch, the
  // copies queue for the route (sim/engine/copy_arrivals.hpp) and their sender, done with its
  // loop, holds them until it moves on: at most G x (1 - pace / copy) for the copy that backs up
  // most.
  double backed_up_copies = 0;
  // Where a stage or copy after the first stage of a chain is slower than it, the faster ones run
  // ahead of the slower ones at another rate and no period common to all IPUs repeats until the
  // faster ones are done: the engine's steady state cannot skip the loop while it runs, and the
  // run's cost grows with its micro-batches, as the estimate's does (docs/benchmark.md, "Every
  // schedule at G = 10^6").
  bool grows_with_micro_batches = false;
};
RunAhead run_ahead(const Scenario& scenario, const Plan& plan, Mode mode, const Schedule& schedule);

// The bytes a run may use: 3/4 of physical memory, or of the address-space limit when lower.
double memory_budget_bytes();

} // namespace ipusim
