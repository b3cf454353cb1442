// ipusim validation [LIST]: simulate every published result's configuration and compare.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "sim/base/forked.hpp"
#include "sim/base/heap.hpp"
#include "sim/cli/commands.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/input_error.hpp"
#include "sim/output/output_file.hpp"
#include "sim/validation/published.hpp"

namespace ipusim::cli {

namespace {

constexpr const char* kPublishedList = "scenarios/validation/published.json";

struct ValidationOptions {
  std::string list;  // empty: the repository's (published_list_path)
  std::vector<std::string> only;
  std::vector<std::string> sets;
  bool json = false, markdown = false, decompose = false;
  std::string output;
  bool force = false;
};

// The repository's list, found from the working directory or from the program (build/ipusim
// in the repository, or any folder below it), so `validation` works from anywhere in a checkout.
std::string published_list_path() {
  if (std::filesystem::is_regular_file(kPublishedList)) return kPublishedList;
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (std::filesystem::path dir = program.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path())
      if (std::filesystem::is_regular_file(dir / kPublishedList)) return (dir / kPublishedList).string();
  throw InputError(kPublishedList, "", "file.missing",
                   "the published-results list is neither below the working directory nor beside the ipusim "
                   "program (" + program.string() + "); name it: ipusim validation PATH/" + kPublishedList);
}

// A row's figures across the pipe from a worker (its entry is the next the parent expects).
template <class Wire, class Row> void row_fields(Wire& w, Row& row) {
  w(row.predicted);
  w(row.error);
  w(row.step_time_s);
  w(row.fits);
  w(row.failure);
  w(row.bad_input);
}

void send_row(ByteWriter& out, const ValidationRow& row) {
  out.record('R');
  Writing w{out};
  row_fields(w, row);
  w(row.split.has_value());
  if (row.split) w(*row.split);
}

ValidationRow receive_row(ByteReader& in, const PublishedResult& entry) {
  ValidationRow row;
  row.entry = &entry;
  Reading r{in};
  row_fields(r, row);
  bool split = false;
  r(split);
  if (split) r(row.split.emplace());
  return row;
}

// The entries' simulations run one after another in a worker process forked from here, which
// starts SimGrid's engine once and sets its clock back between runs (sim/engine/engine.hpp),
// instead of a process per simulation. A worker whose engine cannot run again (a failed
// simulation) or that has grown too much (ProcessGrowth) stops, and the next entries go to a
// new one; an entry whose worker died is failed.
ValidationReport run_in_workers(const PublishedList& list, const std::vector<std::string>& only,
                                const std::vector<Override>& overrides, bool decompose) {
  const std::vector<const PublishedResult*> entries = selected_entries(list, only);
  std::vector<ValidationRow> rows;
  while (rows.size() < entries.size()) {
    const std::size_t first = rows.size();
    try {
      run_forked(
          [&](ByteWriter& out) {
            prepare_engine_for_forks();
            SimulateOptions options;
            options.in_process = true;
            ProcessGrowth growth;
            for (std::size_t i = first; i < entries.size(); ++i) {
              send_row(out, evaluate_entry(*entries[i], overrides, decompose, options));
              if (!engine_can_simulate_again() || !growth.settle()) break;
            }
            out.record('E');
          },
          [&](ByteReader& in) {
            while (in.tag() == 'R') rows.push_back(receive_row(in, *entries[rows.size()]));
          },
          "the validation's simulation process");
    } catch (const ChildProcessError& e) {
      if (rows.size() < entries.size()) {
        ValidationRow failed;
        failed.entry = entries[rows.size()];
        failed.failure = e.what();
        rows.push_back(failed);
      }
    }
  }
  return summarise_validation(list, only, std::move(rows));
}

} // namespace

Command add_validation_command(CLI::App& app) {
  auto o = std::make_shared<ValidationOptions>();
  auto* cmd = app.add_subcommand(
      "validation", "Simulate each published result's configuration and compare with the published throughput");
  cmd->add_option("list", o->list, "Published-results list (default: the repository's scenarios/validation/published.json, found from the working directory or the program)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--only", o->only, "Only these entry ids; repeatable")->allow_extra_args(false);
  cmd->add_option("--set", o->sets, "Override a field of every entry's scenario: path=value; repeatable")
      ->allow_extra_args(false);
  cmd->add_flag("--json", o->json, "One JSON document instead of the table");
  cmd->add_flag("--markdown", o->markdown, "Markdown tables (docs/validation.md) instead of the table");
  cmd->add_flag("--decompose", o->decompose,
                "Also split each step into its per-micro-batch and per-step parts (a second run per entry at twice "
                "the micro-batches) and give the per-micro-batch time the published figure implies");
  cmd->add_option("-o,--output", o->output, "Write to this file (atomically) instead of standard output");
  cmd->add_flag("--force", o->force, "Replace --output if it exists");
  return [o] {
    if (!o->output.empty()) check_output(o->output, o->force);  // before the table's minutes of work
    const PublishedList list = load_published_list(o->list.empty() ? published_list_path() : o->list);
    const ValidationReport report = run_in_workers(list, o->only, parse_overrides(o->sets), o->decompose);
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
