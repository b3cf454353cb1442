// ipusim plan SCENARIO: search the split of the model's layers over the IPUs, recomputation
// and G for PopART's pipeline; rank by the evaluator, confirm the best with the engine, and
// write the best as an annotated model and scenario (docs/planner.md).
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "sim/cli/commands.hpp"
#include "sim/cli/plan_checks.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/output_file.hpp"
#include "sim/output/units.hpp"
#include "sim/search/planner.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::cli {

namespace {

namespace fs = std::filesystem;

struct PlanOptions {
  std::string scenario, objective = "throughput", write;
  std::vector<std::string> sets;
  std::vector<std::int64_t> gradient_accumulation;
  int ipus = 0, top = 3, jobs = 1;
  bool force = false;
};

// Why `c` ranks below `best`: the figure of the objective, and what differs.
std::string loses_because(const Candidate& c, const Candidate& best, Objective objective) {
  std::ostringstream why;
  if (objective == Objective::Throughput)
    why << format_percent(1 - c.throughput / best.throughput) << " less throughput";
  else
    why << format_percent(c.estimate.latency_seconds / best.estimate.latency_seconds - 1) << " more latency";
  if (c.estimate.cycle_seconds > best.estimate.cycle_seconds)
    why << " (slowest stage: cycle " << format_seconds(c.estimate.cycle_seconds) << " vs "
        << format_seconds(best.estimate.cycle_seconds) << ")";
  else if (c.estimate.update_seconds > best.estimate.update_seconds)
    why << " (weight update " << format_seconds(c.estimate.update_seconds) << " vs "
        << format_seconds(best.estimate.update_seconds) << ")";
  return why.str();
}

// The written scenario names its model and config relative to itself.
std::string relative_to(const fs::path& file, const fs::path& folder) {
  return fs::absolute(file).lexically_normal().lexically_relative(fs::absolute(folder).lexically_normal()).string();
}

void write_best(const PlanOptions& o, const Scenario& base, const Scenario& best_sc, const Candidate& best) {
  const std::string model_path = o.write + ".model.json";
  const std::string scenario_path = o.write + ".scenario.json";
  check_output(model_path, o.force);
  check_output(scenario_path, o.force);
  const fs::path folder = fs::path(scenario_path).parent_path().empty() ? fs::path(".") : fs::path(scenario_path).parent_path();
  const std::string description = "written by ipusim plan from " + base.file + ": " + best.placement() +
                                  " (" + base.model.name + " re-annotated; the layers' ops are otherwise unchanged)";
  nlohmann::json doc = base.scenario_document;
  doc["name"] = base.name + "-planned";
  doc["description"] = description;
  doc["model"] = relative_to(model_path, folder);
  if (doc.contains("config") && doc["config"].is_string())
    doc["config"] = relative_to(fs::path(base.file).parent_path() / doc["config"].get<std::string>(), folder);
  auto& ex = doc["execution"];
  ex["mode"] = "pipelined";
  ex["schedule"] = "popart";
  ex["recomputation"] = best.recompute ? "pipeline" : "none";
  if (best_sc.execution.training) ex["gradientAccumulation"] = best.gradient_accumulation;
  write_output(model_path, model_to_json_text(best_sc.model, description), o.force);
  write_output(scenario_path, doc.dump(2) + "\n", o.force);
  std::cout << "wrote " << model_path << " and " << scenario_path << " (ipusim run " << scenario_path << ")\n";
}

// The scenario's own placement (the model as annotated, e.g. Graphcore's split), simulated
// as `run --mode pipelined` would with PopART's schedule, against the planner's best.
void compare_with_given(const Scenario& sc, const LayerStructure& layers, const RunMetrics& best, Objective objective) {
  if (!sc.model.ops.front().virtual_graph) return;
  Scenario given = sc;
  given.execution.schedule = "popart";
  given.execution.modes = {Mode::Pipelined};
  std::cout << "\ngiven: the model as annotated, " << describe_placement(sc.model, layers)
            << (sc.execution.recomputation == Recomputation::Pipeline ? ", recomputation" : ", no recomputation");
  if (sc.execution.training) std::cout << ", G=" << sc.execution.gradient_accumulation;
  std::cout << "\n" << std::flush;
  try {
    const RunMetrics m = simulate(given, {Mode::Pipelined}).runs.at(0).metrics;
    std::cout << "  engine:    step " << format_seconds(m.step_time_s) << ", "
              << format_rate(m.throughput_samples_per_s, "samples/s") << ", latency " << format_seconds(m.latency_s.mean)
              << " (mean)\n  memory:    " << (m.memory.fits ? "fits" : "does not fit") << "\n  #1 vs given: ";
    const double change = objective == Objective::Throughput
                              ? best.throughput_samples_per_s / m.throughput_samples_per_s - 1
                              : best.latency_s.mean / m.latency_s.mean - 1;
    std::cout << format_percent(std::abs(change)) << (change >= 0 ? " more " : " less ")
              << (objective == Objective::Throughput ? "throughput" : "mean latency") << " (engine figures)\n"
              << std::flush;
  } catch (const InputError& e) {
    std::cout << "  not runnable pipelined: " << e.what() << "\n" << std::flush;
  }
}

int plan(const PlanOptions& o) {
  if (!o.write.empty()) {
    check_write_prefix(o.write);
    check_output(o.write + ".model.json", o.force);
    check_output(o.write + ".scenario.json", o.force);
  }
  const Scenario sc = load_scenario(o.scenario, parse_overrides(o.sets));
  check_plan_inputs(sc, o.ipus, o.gradient_accumulation, &std::cerr);
  PlanSearchOptions options;
  options.ipus = o.ipus;
  options.objective = o.objective == "latency" ? Objective::Latency : Objective::Throughput;
  options.gradient_accumulation = o.gradient_accumulation;
  options.jobs = o.jobs;
  options.recheck = std::max(o.top, 1);
  const auto start = std::chrono::steady_clock::now();
  const PlanSearch search = search_plans(sc, options);
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "ipusim plan " << sc.file << ": " << search.layers.names.size()
            << (search.layers.by_ops ? " ops" : " layers") << ", " << search.evaluated << " candidates evaluated in "
            << format_fixed(search_s, 2) << " s; " << search.out_of_memory << " do not fit in memory, "
            << search.too_shallow << " too shallow for PopART (G < S), " << search.ranked.size() << " fit";
  if (search.refused > 0) std::cout << "; " << search.refused << " placements refused by PopART's rules, e.g. " << search.first_refusal;
  std::cout << "\n" << std::flush;  // the engine runs in forked children: nothing buffered may be inherited
  if (search.ranked.empty()) {
    std::cerr << "ipusim: no candidate fits in memory; try more IPUs (--ipus) or recomputation\n";
    return kExitOutOfMemory;
  }
  const std::size_t top = std::min<std::size_t>(static_cast<std::size_t>(std::max(o.top, 1)), search.ranked.size());
  const Candidate& best = search.ranked.front();
  Scenario best_sc;
  RunMetrics best_metrics;
  for (std::size_t i = 0; i < top; ++i) {
    const Candidate& c = search.ranked[i];
    const Scenario csc = candidate_scenario(sc, search.layers, c);
    const Simulation sim = simulate(csc, {Mode::Pipelined});
    const RunMetrics& m = sim.runs.at(0).metrics;
    const double gap = c.estimate.step_seconds / m.step_time_s - 1;
    std::cout << "\n#" << i + 1 << " " << c.placement() << "\n"
              << "  engine:    step " << format_seconds(m.step_time_s) << ", "
              << format_rate(m.throughput_samples_per_s, "samples/s") << ", latency "
              << format_seconds(m.latency_s.mean) << " (mean)\n"
              << "  evaluator: step " << format_seconds(c.estimate.step_seconds) << ", gap to engine "
              << std::showpos << std::scientific << std::setprecision(2) << gap << std::noshowpos
              << std::defaultfloat << std::setprecision(6)
              << (c.estimate.exact ? " (exact: no contention)" : " (approximate: " + c.estimate.inexact_reason + ")")
              << "\n"
              << "  memory:    fits; least headroom " << format_bytes(c.headroom_bytes) << " per tile on IPU"
              << c.tightest_ipu << "\n";
    if (i > 0) std::cout << "  loses to #1: " << loses_because(c, best, options.objective) << "\n";
    std::cout << std::flush;
    if (i == 0) best_sc = csc, best_metrics = m;
  }
  compare_with_given(sc, search.layers, best_metrics, options.objective);
  if (!o.write.empty()) write_best(o, sc, best_sc, best);
  return kExitOk;
}

} // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan", "Search the split of the model's layers over the IPUs, recomputation and "
                                         "G for PopART pipelining; confirm the best with the engine");
  cmd->add_option("scenario", o->scenario, "Scenario file (scenarios/*.json)")->required();
  cmd->add_option("--ipus", o->ipus, "IPUs per pipeline (default: as many as the model uses)")
      ->check(CLI::Range(2, 1024));
  cmd->add_option("--objective", o->objective, "Rank by throughput (default) or micro-batch latency")
      ->check(CLI::IsMember({"throughput", "latency"}));
  cmd->add_option("--top", o->top, "How many of the best to confirm with the engine and print (default 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("-j,--jobs", o->jobs, "Threads for the search when every plan is built (default 1)")->check(CLI::Range(1, 64));
  cmd->add_option("--gradient-accumulation", o->gradient_accumulation,
                  "Values of G to try (training; default the scenario's); repeatable or comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--set", o->sets, "Override a scenario field before planning: path=value; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--write", o->write,
                  "Write the best as PREFIX.model.json (annotated model) and PREFIX.scenario.json (for ipusim run)");
  cmd->add_flag("--force", o->force, "Overwrite the --write files if they exist");
  return [o] { return plan(*o); };
}

} // namespace ipusim::cli
