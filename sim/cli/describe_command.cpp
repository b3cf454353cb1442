// ipusim describe: every field of a config or a scenario, from the table that declares them
// (sim/io/parameters.hpp): type with its range and unit, required, default, meaning. The
// field tables of docs/formats.md are this output.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/parameters.hpp"

namespace ipusim::cli {

namespace {

struct DescribeOptions {
  std::string format;   // "", "config" or "scenario"
  std::string section;  // a section's pointer ("/execution"); "" with a format: all of its sections
};

int describe(const DescribeOptions& o) {
  bool printed = false;
  for (const ParameterSection& s : parameter_sections()) {
    if (!o.format.empty() && format_name(s.format) != o.format) continue;
    if (!o.section.empty() && s.pointer != (o.section == "/" ? "" : o.section)) continue;
    std::cout << (o.section.empty() ? "## " + format_name(s.format) + " " + (s.pointer.empty() ? "/" : s.pointer) +
                                          " (" + s.title + ")\n\n"
                                    : std::string())
              << parameters_markdown(s) << (o.section.empty() ? "\n" : "");
    printed = true;
  }
  if (printed) return kExitOk;
  std::string known;
  for (const ParameterSection& s : parameter_sections())
    if (format_name(s.format) == o.format) known += (known.empty() ? "" : ", ") + (s.pointer.empty() ? "/" : s.pointer);
  throw InputError("arguments", o.section, "cli.bad-value",
                   "no section \"" + o.section + "\" in a " + o.format + " (known: " + known + ")");
}

} // namespace

Command add_describe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "describe", "Describe every field of a config or scenario file: type, range and unit, required, default, meaning "
                  "(Markdown tables, as docs/formats.md shows them)");
  auto o = std::make_shared<DescribeOptions>();
  cmd->add_option("format", o->format, "config or scenario (default: both)")->check(CLI::IsMember({"config", "scenario"}));
  cmd->add_option("section", o->section, "one section's pointer: / (the top level), /ipu, /execution, ... (default: all)")
      ->needs(cmd->get_option("format"));
  return [o] { return describe(*o); };
}

} // namespace ipusim::cli
