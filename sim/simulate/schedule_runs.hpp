#pragma once
// `ipusim run --schedules`: one scenario simulated under several pipeline schedules, side by
// side. A schedule the plan breaks is refused (its rule id and reason kept) instead of
// ending the others.
#include <functional>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

struct ScheduleRefusal {
  std::string schedule;
  std::string file, pointer, rule, message;  // the InputError that refused it
};

struct ScheduleRun {
  Scenario scenario;  // as run: execution.schedule is this run's schedule
  Simulation simulation;  // one pipelined run
};

struct ScheduleRuns {
  std::vector<std::string> asked;  // in the order given
  std::vector<ScheduleRun> ran;    // in that order
  std::vector<ScheduleRefusal> refused;
};

// Every pipeline schedule `ipusim list` offers ("sharded" is a mode, not one), in its order.
std::vector<std::string> pipeline_schedule_names();

// "all" or "a,b,c": the schedules asked for, each known (scenario.unknown-schedule otherwise,
// pointing at --schedules), each once.
std::vector<std::string> parse_schedule_list(const std::string& flag);

// Simulates the pipelined mode of `scenario_of(name)` for each name. An InputError raised
// while loading, planning, scheduling or simulating one schedule refuses that schedule only
// (the caller loads the scenario once without a schedule first, so that input bad whatever
// the schedule is reported as usual).
ScheduleRuns simulate_schedules(const std::vector<std::string>& names,
                                const std::function<Scenario(const std::string&)>& scenario_of,
                                const SimulateOptions& options);

} // namespace ipusim
