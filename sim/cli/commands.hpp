#pragma once
// Each subcommand lives in its own file and registers itself on the app; the
// returned callback runs it once CLI11 has parsed the command line.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "sim/io/overrides.hpp"

namespace ipusim::cli {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;
constexpr int kExitOutOfMemory = 5;

using Command = std::function<int()>;

Command add_run_command(CLI::App& app);
Command add_validate_command(CLI::App& app);
Command add_list_command(CLI::App& app);
Command add_describe_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_costs_command(CLI::App& app);
Command add_validation_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_annotate_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_compare_command(CLI::App& app);

// The whole command line, as main() runs it; a sweep runs its points through it too.
int run_cli(int argc, char** argv);
// Set in a sweep's point process, which runs one command and exits: `run` simulates its
// modes in that process (SimulateOptions::in_process).
extern bool simulate_in_process;
// The command line as given (argv), recorded in run documents so that they can be rerun.
extern std::vector<std::string> command_line;

} // namespace ipusim::cli
