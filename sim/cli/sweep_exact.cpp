// `ipusim sweep --fast`: a point answered by the planner's exact evaluators (sim/search)
// in the sweep's own process, without a simulation, when every mode it runs has one that is
// exact for it (no two transfers sharing a link or a memory at once: docs/planner.md).
#include "sim/cli/sweep_exact.hpp"

#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/output/explanation.hpp"
#include "sim/output/json_report.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::cli {

namespace {

// `modes` is one of mode_choices() (checked by the sweep's loader or the CLI).
std::vector<Mode> modes_of(const Scenario& sc, const std::string& modes) {
  return modes.empty() ? sc.execution.modes : modes_named(modes).value();
}

// The figures the evaluator gives for one mode, as `run --json` names them; nullopt when it
// has none for this mode or is not exact here.
std::optional<nlohmann::json> exact_run(Mode mode, const Scenario& sc, const Plan& plan, double& step_seconds) {
  const Execution& ex = sc.execution;
  if (mode == Mode::Phased || (mode == Mode::Pipelined && !has_evaluator(ex.schedule))) return std::nullopt;
  RouteTable routes(sc.hardware);
  const StepEstimate e =
      mode == Mode::Sharded ? estimate_sharded_step(ex, plan, routes) : estimate_step(ex, plan, routes);
  if (!e.exact() || !(e.step_seconds > 0)) return std::nullopt;
  const Schedule schedule = make_schedule(mode, sc, plan);
  // What the run's metrics know before it simulates: samples, micro-batches, replicas.
  RunMetrics r = MetricsAccumulator(mode, schedule, ex).finish(RunSummary{});
  r.memory = estimate_memory(sc, plan, schedule.stash_depth, schedule.recompute, schedule.mirrors,
                             schedule.stash_at_once);
  if (!r.memory.fits) r.memory.fixes = memory_fixes(sc, mode);
  step_seconds = e.step_seconds;
  const double throughput = static_cast<double>(r.samples) / e.step_seconds;
  return nlohmann::json{{"mode", mode_name(mode)},
                        {"schedule", r.schedule},
                        {"stepTimeSeconds", e.step_seconds},
                        {"throughputSamplesPerSecond", throughput},
                        {"throughputSequencesPerSecond", throughput * ex.sequences_per_sample},
                        {"microBatchesPerStep", r.micro_batches},
                        {"samplesPerStep", r.samples},
                        {"replicas", r.replicas},
                        {"memory", memory_json(r.memory, ipus_placed(r))}};
}

// The report of one point whose scenario is loaded (the body of exact_point_report).
std::optional<nlohmann::json> report_of(const Scenario& sc, const ModelGraph& graph, const std::string& modes,
                                        const std::vector<Override>& overrides) {
  Simulation sim;  // what `run` knows before it simulates; no runs
  // A run that would print a warning is left to the engine, which records it.
  if (missing_loss_warning(sc, graph)) return std::nullopt;
  const std::vector<Mode> run_modes = modes_of(sc, modes);
  sim.plan = make_plan(sc, graph, run_modes);
  check_connected(sc.hardware);
  sim.estimate = estimate_run(sc, sim.plan, run_modes, false);
  nlohmann::json runs = nlohmann::json::array();
  double sharded = 0, pipelined = 0;
  for (Mode mode : run_modes) {
    auto run = exact_run(mode, sc, sim.plan, mode == Mode::Sharded ? sharded : pipelined);
    if (!run) return std::nullopt;
    runs.push_back(std::move(*run));
  }
  // The scenario's part of `run --json`'s document (files, hashes, execution, plan), as the engine's run gives it.
  std::vector<std::string> sets;  // as the point's `run --set` flags give them (run --from reruns it)
  for (const Override& o : overrides) sets.push_back(o.path + "=" + o.value.dump());
  nlohmann::json report = run_document(sc, sim, {std::move(sets)});
  report["runs"] = std::move(runs);
  if (sharded > 0 && pipelined > 0) report["speedupPipelinedOverSharded"] = sharded / pipelined;
  return report;
}

bool under_execution(const Override& o) { return o.path.rfind("execution.", 0) == 0; }

} // namespace

std::optional<nlohmann::json> exact_point_report(const std::string& scenario_file, const std::string& modes,
                                                 const std::vector<Override>& overrides) {
  try {
    const Scenario sc = load_scenario(scenario_file, overrides);
    return report_of(sc, build_graph(sc.model), modes, overrides);
  } catch (const InputError&) {
    return std::nullopt;  // bad input at this point: the engine's run records the error as `run` prints it
  }
}

struct ExactPointEvaluator::Loaded {
  std::string scenario_file;
  std::vector<Override> others;  // the overrides it was loaded with: none under execution.
  nlohmann::json document;       // its scenario document, before any execution override
  Scenario scenario;             // its execution replaced at each point
  ModelGraph graph;              // its model's
};

ExactPointEvaluator::ExactPointEvaluator() = default;
ExactPointEvaluator::~ExactPointEvaluator() = default;

template <class F>
auto ExactPointEvaluator::with_point(const std::string& scenario_file, const std::vector<Override>& overrides, F&& use)
    -> decltype(use(std::declval<const Scenario&>(), std::declval<const ModelGraph&>())) {
  // Overrides apply in order: split them only when no later one could undo an earlier one's
  // place (a whole "execution" replaced after an execution.X set).
  for (const Override& o : overrides)
    if (o.path == "execution") {
      const Scenario sc = load_scenario(scenario_file, overrides);
      return use(sc, build_graph(sc.model));
    }
  std::vector<Override> others, execution;
  for (const Override& o : overrides) (under_execution(o) ? execution : others).push_back(o);
  if (!loaded_ || loaded_->scenario_file != scenario_file || loaded_->others != others) {
    loaded_.reset();
    Scenario sc = load_scenario(scenario_file, others);
    nlohmann::json document = sc.scenario_document;
    ModelGraph graph = build_graph(sc.model);
    loaded_ = std::make_unique<Loaded>(
        Loaded{scenario_file, std::move(others), std::move(document), std::move(sc), std::move(graph)});
  }
  reload_execution(loaded_->scenario, loaded_->document, execution);
  // A tensor-parallel scenario is resharded by every reload: its graph with it.
  if (loaded_->scenario.unsharded) loaded_->graph = build_graph(loaded_->scenario.model);
  return use(loaded_->scenario, loaded_->graph);
}

std::optional<nlohmann::json> ExactPointEvaluator::operator()(const std::string& scenario_file, const std::string& modes,
                                                              const std::vector<Override>& overrides) {
  try {
    return with_point(scenario_file, overrides, [&](const Scenario& sc, const ModelGraph& graph) {
      return report_of(sc, graph, modes, overrides);
    });
  } catch (const InputError&) {
    return std::nullopt;  // as exact_point_report: the engine's run records the error
  }
}

double ExactPointEvaluator::estimated_seconds(const std::string& scenario_file, const std::string& modes,
                                              const std::vector<Override>& overrides) {
  try {
    return with_point(scenario_file, overrides, [&](const Scenario& sc, const ModelGraph& graph) {
      const std::vector<Mode> run_modes = modes_of(sc, modes);
      return estimate_run(sc, make_plan(sc, graph, run_modes), run_modes, false).seconds;
    });
  } catch (const InputError&) {
    return 0;  // a bad point fails at once in its run
  }
}

} // namespace ipusim::cli
