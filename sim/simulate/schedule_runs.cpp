#include "sim/simulate/schedule_runs.hpp"

#include <algorithm>

#include "sim/io/aliases.hpp"
#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

std::vector<std::string> pipeline_schedule_names() {
  std::vector<std::string> out;
  for (const ScheduleInfo& s : schedules())
    if (s.pipeline) out.push_back(s.name);
  return out;
}

std::vector<std::string> parse_schedule_list(const std::string& flag) {
  const std::vector<std::string> known = pipeline_schedule_names();
  if (flag == "all") return known;
  std::vector<std::string> out;
  std::string known_text;
  for (const std::string& k : known) known_text += (known_text.empty() ? "" : ", ") + k;
  std::size_t begin = 0;
  while (begin <= flag.size()) {
    const std::size_t end = std::min(flag.find(',', begin), flag.size());
    const std::string name = flag.substr(begin, end - begin);
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw InputError("command line", "--schedules", "scenario.unknown-schedule",
                       (name.empty() ? std::string("an empty schedule name")
                                     : "unknown pipeline schedule \"" + name + "\"" + did_you_mean(name, known)) +
                           " (give all, or names separated by commas: " + known_text + ")");
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    begin = end + 1;
  }
  return out;
}

ScheduleRuns simulate_schedules(const std::vector<std::string>& names,
                                const std::function<Scenario(const std::string&)>& scenario_of,
                                const SimulateOptions& options) {
  ScheduleRuns out;
  out.asked = names;
  for (const std::string& name : names) {
    try {
      Scenario scenario = scenario_of(name);
      Simulation sim = simulate(scenario, {Mode::Pipelined}, options);
      out.ran.push_back({std::move(scenario), std::move(sim)});
    } catch (const InputError& e) {
      out.refused.push_back({name, e.file(), e.pointer(), e.rule(), e.message()});
    }
  }
  return out;
}

} // namespace ipusim
