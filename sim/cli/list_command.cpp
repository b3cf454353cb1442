// ipusim list: the pipeline schedules and cost models known by name.
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim::cli {

Command add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List the pipeline schedules and cost models ipusim knows");
  return [] {
    std::cout << "Schedules (scenario \"execution.schedule\"; \"sharded\" and \"phased\" are those modes' own):\n";
    for (const auto& s : schedules())
      std::cout << "  " << s.name << ": " << s.description << " ["
                << (s.run_by.empty() ? "what-if: no IPU framework runs it" : "run by " + s.run_by) << "]\n";
    std::cout << "Cost models (scenario \"execution.costModel\"):\n";
    for (const auto& c : cost_models()) std::cout << "  " << c.name << ": " << c.description << "\n";
    return kExitOk;
  };
}

} // namespace ipusim::cli
