// ipusim validation [LIST]: simulate every published result's configuration and compare.
#include <algorithm>
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/output/output_file.hpp"
#include "sim/validation/published.hpp"

namespace ipusim::cli {

namespace {

struct ValidationOptions {
  std::string list = "scenarios/validation/published.json";
  std::vector<std::string> only;
  std::vector<std::string> sets;
  bool json = false, markdown = false;
  std::string output;
  bool force = false;
};

} // namespace

Command add_validation_command(CLI::App& app) {
  auto o = std::make_shared<ValidationOptions>();
  auto* cmd = app.add_subcommand(
      "validation", "Simulate each published result's configuration and compare with the published throughput");
  cmd->add_option("list", o->list, "Published-results list (default: scenarios/validation/published.json, from the repository root)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--only", o->only, "Only these entry ids; repeatable")->allow_extra_args(false);
  cmd->add_option("--set", o->sets, "Override a field of every entry's scenario: path=value; repeatable")
      ->allow_extra_args(false);
  cmd->add_flag("--json", o->json, "One JSON document instead of the table");
  cmd->add_flag("--markdown", o->markdown, "Markdown tables (docs/validation.md) instead of the table");
  cmd->add_option("-o,--output", o->output, "Write to this file (atomically) instead of standard output");
  cmd->add_flag("--force", o->force, "Replace --output if it exists");
  return [o] {
    const PublishedList list = load_published_list(o->list);
    const ValidationReport report = run_validation(list, o->only, parse_overrides(o->sets));
    const std::string text = o->json       ? render_validation_json(list, report)
                             : o->markdown ? render_validation_markdown(list, report)
                                           : render_validation_table(list, report);
    if (o->output.empty()) std::cout << text;
    else write_output(o->output, text, o->force);
    int status = kExitOk;
    for (const ValidationRow& row : report.rows)
      if (!row.failure.empty()) status = std::max(status, row.bad_input ? kExitBadInput : kExitInternal);
    return status;
  };
}

} // namespace ipusim::cli
