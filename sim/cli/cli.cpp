// The command line: every subcommand registered on one CLI11 app, errors turned into exit codes.
// Exit codes: 0 success, 2 bad input (files, flags, rules), 3 internal fault, 4 and 6 from
// sweeps, 5 out of memory with --fail-on-oom.
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/input_error.hpp"

namespace {

// A command-line parse error as an InputError: the file is the command line, the place
// the option or argument at fault (CLI11 names it first in most messages), the rule by kind.
ipusim::InputError command_line_error(const CLI::ParseError& e, const std::string& command) {
  using Codes = CLI::ExitCodes;
  const auto code = static_cast<Codes>(e.get_exit_code());
  std::string rule = "cli.bad-value";
  if (code == Codes::RequiredError) rule = "cli.missing-argument";
  else if (code == Codes::ExtrasError) rule = "cli.unknown-argument";
  else if (code == Codes::ExcludesError || code == Codes::RequiresError) rule = "cli.conflict";
  const std::string message = e.what();
  std::string where = command;
  const auto colon = message.find(": ");
  const auto is_word = [](const std::string& s) { return !s.empty() && s.find(' ') == std::string::npos; };
  if (code == Codes::ExtrasError && colon != std::string::npos) {
    where = message.substr(colon + 2);
    where = where.substr(0, where.find(' '));
  } else if (code == Codes::RequiredError && message.find(" is required") != std::string::npos &&
             is_word(message.substr(0, message.find(" is required")))) {
    where = message.substr(0, message.find(" is required"));
  } else if (colon != std::string::npos && is_word(message.substr(0, colon))) {
    where = message.substr(0, colon);
  } else if (const auto dash = message.find(" --"); dash != std::string::npos) {
    where = message.substr(dash + 1);
    where = where.substr(0, where.find_first_of(" ,=:"));
  }
  return ipusim::InputError("command line", where, rule,
                            message + " (ipusim " + (command == "ipusim" ? "" : command + " ") + "--help lists the options)");
}

// "--set a 8": the usual slip behind an unexpected argument; the hint shows the form.
std::string set_hint(int argc, char** argv) {
  for (int i = 1; i + 2 < argc; ++i) {
    const std::string flag = argv[i], path = argv[i + 1], value = argv[i + 2];
    if (flag == "--set" && path.find('=') == std::string::npos && !value.empty() && value[0] != '-')
      return " (--set takes one argument, path=value: --set " + path + "=" + value + ")";
  }
  return "";
}

} // namespace

namespace ipusim::cli {

std::vector<std::string> command_line;

int run_cli(int argc, char** argv) {
  command_line.assign(argv, argv + argc);
  CLI::App app{"ipusim: simulate sharded and pipelined execution of PopART-annotated models on Graphcore IPU "
               "systems.\nExit codes: 0 success, 2 bad input, 3 internal fault, 4 some sweep points failed, 5 out "
               "of memory (run --fail-on-oom), 6 sweep points still missing."};
  app.set_version_flag("--version", std::string("ipusim ") + IPUSIM_VERSION);
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
    add(&add_describe_command);
    add(&add_sweep_command);
    add(&add_report_command);
    add(&add_costs_command);
    add(&add_validation_command);
    add(&add_convert_command);
    add(&add_annotate_command);
    add(&add_plan_command);
    add(&add_compare_command);
    return list;
  }();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string command = "ipusim";
    for (const auto& [sub, ignored] : commands)
      if (sub->parsed()) command = sub->get_name();
    const ipusim::InputError error = command_line_error(e, command);
    std::string hint;
    if (error.rule() == "cli.unknown-argument") hint = set_hint(argc, argv);
    std::cerr << "ipusim: error: "
              << (hint.empty() ? error : ipusim::InputError(error.file(), error.pointer(), error.rule(), error.message() + hint))
                     .what()
              << "\n";
    return kExitBadInput;
  }
  try {
    for (const auto& [sub, command] : commands)
      if (sub->parsed()) return command();
  } catch (const ipusim::InputError& e) {
    std::cerr << "ipusim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "ipusim: internal fault: " << ipusim::printable(e.what()) << "\n";
    return kExitInternal;
  }
  return kExitInternal;
}

} // namespace ipusim::cli
