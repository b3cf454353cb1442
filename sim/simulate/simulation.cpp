#include "sim/simulate/simulation.hpp"

#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes) {
  Simulation sim;
  sim.graph = build_graph(scenario.model);
  sim.plan = make_plan(scenario, sim.graph);
  compute_routes(scenario.hardware);  // a disconnected system is bad input, reported before simulating
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
