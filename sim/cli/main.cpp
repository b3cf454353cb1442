// ipusim: simulate sharded and pipelined execution of annotated models on IPU systems.
// Exit codes: 0 success, 2 bad input (files, flags, rules), 3 internal fault.
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/input_error.hpp"

namespace ipusim::cli {

int run_cli(int argc, char** argv) {
  CLI::App app{"ipusim: simulate sharded and pipelined execution of PopART-annotated models on Graphcore IPU "
               "systems.\nExit codes: 0 success, 2 bad input, 3 internal fault."};
  app.require_subcommand(1);
  const std::vector<std::pair<CLI::App*, Command>> commands = [&] {
    std::vector<std::pair<CLI::App*, Command>> list;
    auto add = [&](Command (*register_command)(CLI::App&)) {
      Command c = register_command(app);
      list.emplace_back(app.get_subcommands({}).back(), std::move(c));
    };
    add(&add_run_command);
    add(&add_validate_command);
    add(&add_list_command);
    add(&add_sweep_command);
    add(&add_report_command);
    add(&add_costs_command);
    return list;
  }();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  try {
    for (const auto& [sub, command] : commands)
      if (sub->parsed()) return command();
  } catch (const ipusim::InputError& e) {
    std::cerr << "ipusim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "ipusim: internal fault: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitInternal;
}

} // namespace ipusim::cli

int main(int argc, char** argv) { return ipusim::cli::run_cli(argc, argv); }
