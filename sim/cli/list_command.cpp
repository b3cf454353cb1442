// ipusim list: the pipeline schedules and cost models known by name; with --ranges, the range
// of every number an input file may hold (field_ranges(), as docs/formats.md shows it).
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/io/field_ranges.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim::cli {

Command add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the pipeline schedules and cost models ipusim knows");
  auto ranges = std::make_shared<bool>(false);
  cmd->add_flag("--ranges", *ranges,
                "Print instead the range of every number a model, config, scenario or sweep file may hold, with "
                "its unit, its rule id when out of range, and what the bounds stand for (a Markdown table: "
                "docs/formats.md, \"Physical ranges\")");
  return [ranges] {
    if (*ranges) {
      std::cout << field_ranges_markdown();
      return kExitOk;
    }
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
