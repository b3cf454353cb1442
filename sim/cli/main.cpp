// ipusim: simulate sharded and pipelined execution of annotated models on IPU systems.
// Exit codes: 0 success, 2 bad input (files, flags, rules), 3 internal fault.
#include <CLI/CLI.hpp>

#include <iostream>

#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/atomic_file.hpp"
#include "sim/output/json_report.hpp"
#include "sim/output/table.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"

namespace {

using namespace ipusim;

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

std::vector<Override> parse_overrides(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const auto& s : sets) out.push_back(parse_override(s));
  return out;
}

std::vector<Mode> modes_for(const Scenario& sc, const std::string& flag) {
  if (flag.empty()) return sc.execution.modes;
  if (flag == "both") return {Mode::Sharded, Mode::Pipelined};
  if (flag == "sharded") return {Mode::Sharded};
  return {Mode::Pipelined};
}

void emit(const std::string& text, const std::string& output, bool force) {
  if (output.empty()) std::cout << text << std::flush;
  else write_file_atomically(output, text, force);
}

int run_command(const std::string& scenario_path, const std::vector<std::string>& sets, const std::string& mode,
                bool json, const std::string& output, bool force) {
  const Scenario sc = load_scenario(scenario_path, parse_overrides(sets));
  const Simulation sim = simulate(sc, modes_for(sc, mode));
  emit(json ? report_json(sc, sim).dump(2) + "\n" : render_table(sc, sim), output, force);
  return 0;
}

// Checks a model, config or scenario (told apart by their keys) without simulating.
int validate_command(const std::string& path, const std::vector<std::string>& sets) {
  const Json doc = read_json_file(path);
  if (doc.is_object() && doc.contains("ops")) {
    const Model m = load_model(path);
    const ModelGraph g = build_graph(m);
    std::cout << path << ": valid model, " << m.ops.size() << " ops, " << m.tensors.size() << " tensors, "
              << g.stage_count << " stage(s)\n";
  } else if (doc.is_object() && doc.contains("ipu")) {
    const HardwareConfig hw = load_hardware(path);
    compute_routes(hw);
    std::cout << path << ": valid config, " << hw.name << ", " << hw.ipu_count << " IPU(s), " << hw.links.size()
              << " IPU-Link(s)\n";
  } else {
    const Scenario sc = load_scenario(path, parse_overrides(sets));
    const ModelGraph g = build_graph(sc.model);
    const Plan plan = make_plan(sc, g);
    compute_routes(sc.hardware);
    for (Mode m : sc.execution.modes) make_schedule(m, sc, plan);
    std::cout << path << ": valid scenario, " << plan.stage_count() << " stage(s) on " << plan.ipus.size()
              << " IPU(s)\n";
  }
  return 0;
}

int list_command() {
  std::cout << "Pipeline schedules (scenario \"execution.schedule\"):\n";
  for (const auto& s : schedules()) std::cout << "  " << s.name << ": " << s.description << "\n";
  std::cout << "Cost models (scenario \"execution.costModel\"):\n";
  for (const auto& c : cost_models()) std::cout << "  " << c.name << ": " << c.description << "\n";
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"ipusim: simulate sharded and pipelined execution of PopART-annotated models on Graphcore IPU "
               "systems.\nExit codes: 0 success, 2 bad input, 3 internal fault."};
  app.require_subcommand(1);

  std::string scenario, mode, output, validate_path;
  std::vector<std::string> sets;
  bool json = false, force = false;

  auto* run = app.add_subcommand("run", "Simulate a scenario and compare sharded with pipelined execution");
  run->add_option("scenario", scenario, "Scenario file (scenarios/*.json)")->required()->check(CLI::ExistingFile);
  run->add_option("--mode", mode, "Run one mode only, or both (default: the scenario's mode, else both)")
      ->check(CLI::IsMember({"sharded", "pipelined", "both"}));
  run->add_option("--set", sets, "Override a field: path=value (execution.microBatchSize=8, config.ipuCount=8, "
                                 "model.ops.0.flops=1e9); repeatable");
  run->add_flag("--json", json, "Print one JSON document instead of the table");
  run->add_option("-o,--output", output, "Write to this file (atomically) instead of standard output");
  run->add_flag("--force", force, "Overwrite the --output file if it exists");

  auto* validate = app.add_subcommand("validate", "Check a model, config or scenario file without simulating");
  validate->add_option("file", validate_path, "Model, config or scenario file")->required()->check(CLI::ExistingFile);
  validate->add_option("--set", sets, "Override a scenario field first: path=value; repeatable");

  auto* list = app.add_subcommand("list", "List the pipeline schedules and cost models ipusim knows");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }

  try {
    if (run->parsed()) return run_command(scenario, sets, mode, json, output, force);
    if (validate->parsed()) return validate_command(validate_path, sets);
    if (list->parsed()) return list_command();
  } catch (const InputError& e) {
    std::cerr << "ipusim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const EngineError& e) {
    std::cerr << "ipusim: internal fault: " << e.what() << "\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "ipusim: internal fault: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitInternal;
}
