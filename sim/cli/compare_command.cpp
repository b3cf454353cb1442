// ipusim compare A.json B.json ...: run documents side by side (sim/output/compare.hpp).
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/output/compare.hpp"
#include "sim/output/output_file.hpp"

namespace ipusim::cli {

namespace {

struct CompareOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
};

int run(const CompareOptions& o) {
  if (!o.output.empty()) check_output(o.output, o.force);
  std::vector<RunDocument> runs;
  for (const std::string& path : o.inputs) {
    RunDocument r{path, read_json_file(path)};
    check_run_document(r.document, path);
    for (RunDocument& one : split_by_schedule(r)) runs.push_back(std::move(one));
  }
  if (runs.size() < 2)
    throw InputError("command line", "inputs", "cli.missing-argument",
                     "compare needs two run documents, or one with several schedules (run --schedules --json)");
  write_output(o.output.empty() ? "-" : o.output, render_comparison(runs), o.force);
  return kExitOk;
}

} // namespace

Command add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare", "Compare run documents (run --json) figure by figure: each against the "
                                            "first, with differences, ratios and what changed");
  cmd->add_option("inputs", o->inputs,
                  "Two or more run documents, the first the baseline; a document of run --schedules counts as one "
                  "per schedule")
      ->required()
      ->expected(1, 26);
  cmd->add_option("-o,--output", o->output, "Write the comparison to this file instead of standard output");
  cmd->add_flag("--force", o->force, "Overwrite the --output file if it exists");
  return [o] { return run(*o); };
}

} // namespace ipusim::cli
