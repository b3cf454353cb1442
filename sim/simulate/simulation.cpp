#include "sim/simulate/simulation.hpp"

#include <ostream>

#include "sim/plan/routes.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {
// Runs larger or longer than this are announced before they start.
constexpr double kNoteBytes = 1024.0 * 1024 * 1024;
constexpr double kNoteSeconds = 60;
} // namespace

Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes, bool trace, std::ostream* notes) {
  Simulation sim;
  sim.graph = build_graph(scenario.model);
  sim.plan = make_plan(scenario, sim.graph);
  check_connected(scenario.hardware);  // a disconnected system is bad input, reported before simulating
  sim.estimate = estimate_run(scenario, sim.plan, modes, trace);
  if (notes != nullptr && (sim.estimate.peak_bytes > kNoteBytes || sim.estimate.seconds > kNoteSeconds))
    *notes << "ipusim: note: this run needs " << describe_estimate(sim.estimate) << "\n" << std::flush;
  std::vector<Schedule> schedules;
  for (Mode mode : modes) schedules.push_back(make_schedule(mode, scenario, sim.plan));
  for (std::size_t i = 0; i < modes.size(); ++i) {
    ModeRun run;
    run.log = run_engine(schedules[i], scenario.hardware);
    run.metrics = compute_metrics(modes[i], schedules[i], run.log, scenario.execution);
    run.metrics.memory = estimate_memory(scenario, sim.plan, schedules[i].stash_depth, schedules[i].recompute);
    run.schedule = std::move(schedules[i]);
    sim.runs.push_back(std::move(run));
  }
  return sim;
}

} // namespace ipusim
