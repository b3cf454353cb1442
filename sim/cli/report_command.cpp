// ipusim report INPUTS... -o DIR: a self-contained HTML report (and a Markdown twin
// with SVG figure files) from run documents, sweep output folders and traces.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/io/input_error.hpp"
#include "sim/report/notes.hpp"
#include "sim/report/report.hpp"

namespace ipusim::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string output, title = "ipusim report", notes;
  bool force = false;
};

int run(const ReportOptions& o) {
  if (o.output == "-")
    throw InputError("command line", "--output", "cli.bad-value",
                     "a report is a folder (report.html, report.md, figures/); name one");
  // The notes are read first: a bad notes file is named before any input is parsed.
  const std::string notes = o.notes.empty() ? "" : report::read_notes(o.notes).markdown;
  std::vector<report::Input> inputs;
  for (const std::string& path : o.inputs) inputs.push_back(report::load_input(path));
  const report::Document document = report::build_report(inputs, o.title, notes);
  report::write_report(document, o.output, o.force);
  std::cout << "wrote " << o.output << "/report.html, " << o.output << "/report.md and " << document.figures.size()
            << " figure(s) in " << o.output << "/figures\n";
  return kExitOk;
}

} // namespace

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report", "Build a self-contained HTML report (and Markdown with SVG figures) from run JSON documents "
                "(run --json), sweep output folders and trace files (run --trace); the kind is detected by content");
  cmd->add_option("inputs", o->inputs, "Run documents, sweep folders and trace files, in the order to show them")
      ->required();
  cmd->add_option("-o,--output", o->output, "Report folder: DIR/report.html, DIR/report.md, DIR/figures/*.svg")
      ->required();
  cmd->add_flag("--force", o->force, "Overwrite an existing DIR/report.html");
  cmd->add_option("--title", o->title, "Title of the report")->capture_default_str();
  cmd->add_option("--notes", o->notes,
                  "A Markdown file of your own text, added after the contents (verbatim in report.md, "
                  "escaped and simply rendered in report.html)");
  return [o] { return run(*o); };
}

} // namespace ipusim::cli
