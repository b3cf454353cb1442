// ipusim run SCENARIO, or ipusim run MODEL --config CONFIG: simulate and compare sharded
// with pipelined execution.
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "sim/cli/commands.hpp"
#include "sim/generation/generation_output.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/csv.hpp"
#include "sim/output/output_file.hpp"
#include "sim/output/json_report.hpp"
#include "sim/output/schedule_table.hpp"
#include "sim/output/table.hpp"
#include "sim/output/trace.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/simulate/schedule_runs.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::cli {

bool simulate_in_process = false;

namespace {

struct RunOptions {
  std::string input, config, mode, output, trace, from, schedules;
  std::vector<std::string> sets;
  bool json = false, csv = false, force = false, fail_on_oom = false, exact_full = false;
  bool schedules_given = false;  // --schedules, even with an empty value (refused, not ignored)
};

// The flag's value is one of mode_choices() (CLI11 checks it).
std::vector<Mode> modes_for(const Scenario& sc, const std::string& flag) {
  return flag.empty() ? sc.execution.modes : modes_named(flag).value();
}

// `run --from RUN.json`: the scenario (or model and config) a run document names, with its
// --set flags and modes, refused when the model or config no longer hashes as recorded.
struct Rerun {
  Scenario scenario;
  std::vector<Mode> modes;
  std::vector<std::string> sets;
  std::string schedules;  // a document of --schedules: the schedules it asked for, "a,b,c"
  std::string model_file, config_file;  // without a scenario file
};

Rerun rerun_of(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  const auto text = [&](const char* key) -> std::string {
    if (!doc.is_object() || !doc.contains(key) || !doc.at(key).is_string())
      throw InputError(path, std::string("/") + key, "run.from-incomplete",
                       std::string("a run document to rerun needs \"") + key +
                           "\" (written by ipusim run --json since issue 23)");
    return doc.at(key).get<std::string>();
  };
  Rerun r;
  if (doc.contains("overrides") && doc.at("overrides").is_array())
    for (const auto& s : doc.at("overrides"))
      if (s.is_string()) r.sets.push_back(s.get<std::string>());
  const std::string scenario_file = text("scenarioFile");
  if (scenario_file == "command line") r.model_file = text("modelFile"), r.config_file = text("configFile");
  r.scenario = scenario_file == "command line" ? scenario_of_model(r.model_file, r.config_file, parse_overrides(r.sets))
                                               : load_scenario(scenario_file, parse_overrides(r.sets));
  for (const char* key : {"modelHash", "configHash"}) {
    const std::string& now = key[0] == 'm' ? r.scenario.model_hash : r.scenario.config_hash;
    if (text(key) != now)
      throw InputError(path, std::string("/") + key, "run.from-changed",
                       std::string("the ") + (key[0] == 'm' ? "model" : "config") + " is no longer the one this run "
                       "used (recorded " + text(key) + ", now " + now + "): its file changed since");
  }
  if (doc.contains("schedules") && doc.at("schedules").is_array())
    for (const auto& s : doc.at("schedules"))
      if (s.is_string()) r.schedules += (r.schedules.empty() ? "" : ",") + s.get<std::string>();
  if (!r.schedules.empty()) return r;
  if (doc.contains("runs") && doc.at("runs").is_array())
    for (const auto& run : doc.at("runs"))
      if (run.is_object() && run.contains("mode") && run.at("mode").is_string())
        r.modes.push_back(run.at("mode") == "sharded" ? Mode::Sharded
                          : run.at("mode") == "phased" ? Mode::Phased
                                                       : Mode::Pipelined);
  if (r.modes.empty()) throw InputError(path, "/runs", "run.from-incomplete", "the run document lists no runs");
  return r;
}

// `run --schedules`: simulates each schedule, then prints the document (--json, --csv) or the
// table; refusals are rows, and only all of them refused is an error.
int write_schedule_runs(const RunOptions& o, const std::string& schedules, const Scenario& base,
                        const std::function<Scenario(const std::string&)>& scenario_of,
                        const std::vector<std::string>& sets) {
  SimulateOptions options;
  options.exact_full = o.exact_full;
  options.keep_log = false;
  options.notes = &std::cerr;
  ScheduleRuns runs = simulate_schedules(parse_schedule_list(schedules), scenario_of, options);
  if (runs.ran.empty()) {
    for (const ScheduleRefusal& f : runs.refused)
      std::cerr << "ipusim: " << f.schedule << " refused [" << f.rule << "]: " << f.message << "\n";
    throw InputError(base.file, base.execution_pointer("schedule"), "run.no-schedule-ran",
                     "every schedule asked for (--schedules " + schedules + ") was refused");
  }
  for (ScheduleRun& r : runs.ran)
    for (ModeRun& run : r.simulation.runs)
      if (!run.metrics.memory.fits) run.metrics.memory.fixes = memory_fixes(r.scenario, run.metrics.mode);
  nlohmann::json document = schedules_json(base, runs);
  add_provenance(document, {sets, &command_line});
  const std::string text = o.json  ? document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                           : o.csv ? render_run_csv(document)
                                   : render_schedule_table(document);
  write_output(o.output.empty() ? "-" : o.output, text, o.force);
  if (o.fail_on_oom)
    for (const ScheduleRun& r : runs.ran)
      if (!r.simulation.runs.front().metrics.memory.fits) {
        std::cerr << "ipusim: out of memory under " << r.scenario.execution.schedule << "\n";
        return kExitOutOfMemory;
      }
  return kExitOk;
}

// A generation scenario: its own figures (sim/generation), as a table or a JSON document.
int run_generation(const RunOptions& o, const Scenario& sc, const std::vector<Mode>& modes,
                   const std::vector<std::string>& command_line) {
  if (!o.trace.empty() || o.csv)
    throw InputError("command line", o.csv ? "--csv" : "--trace", "cli.conflict",
                     "a generation scenario prints its table or --json; --csv and --trace are for stepping runs");
  const GenerationReport report = simulate_generation(sc, modes, &std::cerr);
  std::string text = render_generation_table(sc, report);
  if (o.json) {
    nlohmann::json document{{"generation", generation_json(sc, report)}};
    add_provenance(document, {o.sets, &command_line});
    text = document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  write_output(o.output.empty() ? "-" : o.output, text, o.force);
  return kExitOk;
}

// The simulation's memory is left to the process's exit when this process runs one command:
// freeing it touches every page of the schedule again, each a copy-on-write fault since the
// simulation was forked (6 % of a Bow Pod256 run). A sweep's point process runs many points and
// frees each.
void leave_to_exit(Simulation&& sim) {
  static Simulation* left = nullptr;  // reachable to the end: not a leak
  if (simulate_in_process) return;
  delete left;
  left = new Simulation(std::move(sim));
}

// The command line's conflicts, refused before anything is simulated or written.
void check_run_options(const RunOptions& o) {
  // Refuse before simulating, so that one file is not written while the other is refused.
  for (const std::string& path : {o.output, o.trace})
    if (!path.empty()) check_output(path, o.force);
  if (!o.trace.empty() && !o.output.empty()) {
    std::error_code ignored;
    if (o.trace == o.output ||
        std::filesystem::weakly_canonical(o.trace, ignored) == std::filesystem::weakly_canonical(o.output, ignored))
      throw InputError(o.trace, "/", "output.same-file", "--trace and --output name the same file");
  }
  if (!o.from.empty() && (!o.input.empty() || !o.config.empty() || !o.sets.empty()))
    throw InputError("command line", "--from", "cli.conflict",
                     "--from reruns a run document as it was: give no scenario, --config or --set with it");
  if (o.from.empty() && o.input.empty())
    throw InputError("command line", "scenario", "cli.missing-argument", "give a scenario (or --from RUN.json)");
  if (o.schedules_given && (!o.trace.empty() || !o.from.empty() || o.mode == "sharded"))
    throw InputError("command line", "--schedules", "cli.conflict",
                     "--schedules runs the pipelined mode once per schedule: give no --trace (trace one schedule with "
                     "--set execution.schedule=NAME), --from or --mode sharded with it");
}

// Simulates the scenario's modes, writes the trace and the run's output; the exit code.
int simulate_and_write(const RunOptions& o, const Scenario& sc, const std::vector<Mode>& modes,
                       const std::vector<std::string>& sets) {
  SimulateOptions options;
  options.keep_log = !o.trace.empty();
  options.exact_full = o.exact_full;
  options.in_process = simulate_in_process;
  options.notes = &std::cerr;
  Simulation sim = simulate(sc, modes, options);
  // What would make a run that does not fit fit: the memory model tries each setting.
  for (ModeRun& run : sim.runs)
    if (!run.metrics.memory.fits) run.metrics.memory.fixes = memory_fixes(sc, run.metrics.mode);
  if (!o.trace.empty()) write_output(o.trace, [&](std::ostream& out) { write_trace(out, sc, sim); }, o.force);
  const nlohmann::json document = run_document(sc, sim, {sets, &command_line});
  const std::string text = o.json  ? document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                           : o.csv ? render_run_csv(document)
                                   : render_table(sc, sim);
  write_output(o.output.empty() ? "-" : o.output, text, o.force);
  int code = kExitOk;
  if (o.fail_on_oom)
    for (const ModeRun& run : sim.runs)
      if (!run.metrics.memory.fits) {
        std::cerr << "ipusim: out of memory in the " << mode_name(run.metrics.mode) << " run\n";
        code = kExitOutOfMemory;
        break;
      }
  leave_to_exit(std::move(sim));
  return code;
}

int run(const RunOptions& o) {
  check_run_options(o);
  std::optional<Rerun> rerun;
  if (!o.from.empty()) rerun = rerun_of(o.from);
  // The scenario as the command line (or the rerun document) gives it, with `overrides`.
  const auto load = [&](const std::vector<Override>& overrides) {
    if (rerun)
      return rerun->model_file.empty() ? load_scenario(rerun->scenario.file, overrides)
                                       : scenario_of_model(rerun->model_file, rerun->config_file, overrides);
    return o.config.empty() ? load_scenario(o.input, overrides) : scenario_of_model(o.input, o.config, overrides);
  };
  if (o.schedules_given || (rerun && !rerun->schedules.empty())) {
    // The scenario is loaded once as given, so that input bad under any schedule is reported
    // as such; then once per schedule, as `--set execution.schedule=NAME` would, from the
    // documents parsed the first time.
    remember_parsed_files();
    const std::vector<std::string> sets = rerun ? rerun->sets : o.sets;
    const auto scenario_of = [&](const std::string& schedule) {
      std::vector<Override> overrides = parse_overrides(sets);
      overrides.push_back(parse_override("execution.schedule=" + schedule));
      return load(overrides);
    };
    const Scenario base = rerun ? rerun->scenario : load(parse_overrides(o.sets));
    return write_schedule_runs(o, rerun ? rerun->schedules : o.schedules, base, scenario_of, sets);
  }
  const Scenario sc = rerun ? rerun->scenario : load(parse_overrides(o.sets));
  if (sc.generation) return run_generation(o, sc, rerun ? rerun->modes : modes_for(sc, o.mode), command_line);
  return simulate_and_write(o, sc, rerun ? rerun->modes : modes_for(sc, o.mode), rerun ? rerun->sets : o.sets);
}

} // namespace

Command add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Simulate a scenario (or a model on a config) and compare sharded with "
                                        "pipelined execution");
  cmd->add_option("scenario", o->input,
                  "Scenario file (scenarios/*.json); with --config, a model file (models/*.json or .onnx)");
  cmd->add_option("--from", o->from,
                  "Rerun a run document (run --json): its scenario, --set flags and modes, refused if its model or "
                  "config changed since; same figures");
  cmd->add_option("--config", o->config,
                  "Run the model INPUT on this IPU system (configs/*.json) without a scenario file: every "
                  "execution setting at its default (docs/formats.md), changed with --set execution.x=...");
  cmd->add_option("--mode", o->mode, "Run one mode only, or both (default: the scenario's mode, else both)")
      ->check(CLI::IsMember(mode_choices()));
  cmd->add_option("--set", o->sets,
                  "Override a field: path=value (execution.microBatchSize=8, config.ipu.clockHz=1.85e9, "
                  "model.ops.0.flops=1e9); repeatable")
      ->allow_extra_args(false);
  auto* json = cmd->add_flag("--json", o->json, "Print one JSON document instead of the table");
  cmd->add_flag("--csv", o->csv,
                "Print CSV instead of the table: one row per mode, a column per figure of the JSON, per-IPU "
                "columns (docs/formats.md)")
      ->excludes(json);
  cmd->add_option("-o,--output", o->output,
                  "Write to this file (atomically; a device or FIFO is written through; - is standard output) "
                  "instead of standard output");
  cmd->add_option("--trace", o->trace,
                  "Also write a Chrome trace-event timeline (JSON) to this file (- is standard output), for "
                  "ui.perfetto.dev or chrome://tracing (docs/timelines.md)");
  auto* schedules = cmd->add_option("--schedules", o->schedules,
                  "Run the pipelined mode under each of these schedules (all, or names separated by commas: ipusim "
                  "list) and print one table; a refused schedule is a row with its rule id (docs/schedules.md)");
  cmd->add_flag("--force", o->force, "Overwrite the --output and --trace files if they exist");
  cmd->add_flag("--exact-full", o->exact_full,
                "Simulate every cycle instead of repeating the steady state's period, and every transfer of the gradient "
                "collectives (same figures, slower)");
  cmd->add_flag("--fail-on-oom", o->fail_on_oom,
                "Exit with code 5 when a run does not fit in memory (the verdict is always reported)");
  return [o, schedules] {
    o->schedules_given = schedules->count() > 0;
    return run(*o);
  };
}

} // namespace ipusim::cli
