// ipusim plan SCENARIO: search the configurations of the scenario's model on its system
// (pipeline width x replicas, split, micro-batch, G, schedule, recomputation, memory settings),
// rank them by the evaluators, confirm the best with the engine, say why each loses to the
// first, and write the best as an annotated model and scenario (docs/planner.md).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "sim/io/model_loader.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/plan_output.hpp"
#include "sim/cli/plan_phased.hpp"
#include "sim/cli/plan_checks.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/output_file.hpp"
#include "sim/base/units.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/search/planner.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::cli {

namespace {

namespace fs = std::filesystem;

// Searches larger than this are announced before they start (as run's are).
constexpr double kNoteSearchBytes = 1024.0 * 1024 * 1024;

struct PlanOptions {
  std::string scenario, config, objective = "throughput", write, global_batch, layer_free = "yes";
  std::vector<std::string> sets, schedules, recomputation, state, rts, weight_update, heads_on;
  std::vector<std::int64_t> micro_batches, gradient_accumulation;
  std::vector<int> ipus, replicas;
  std::vector<double> amps;
  int top = 3;
  double front_within = 5, time_limit = 0;
  bool force = false, explain_layers = false, quiet = false, json = false;
  std::string att_ffn = "yes";
  std::vector<int> tensor_parallel;
};

// "2048" or "1024-4096".
void parse_global_batch(const std::string& text, PlanRequest& r) {
  if (text.empty()) return;
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
    }
    if (s.empty() || used != s.size() || v < 1)
      throw InputError("--global-batch", "", "plan.global-batch",
                       "expected a global batch such as 2048, or bounds such as 1024-4096, got \"" + text + "\"");
    return static_cast<std::int64_t>(v);
  };
  const auto dash = text.find('-');
  if (dash == std::string::npos) {
    r.global_batch = number(text);
    return;
  }
  const std::int64_t lo = number(text.substr(0, dash)), hi = number(text.substr(dash + 1));
  if (lo > hi)
    throw InputError("--global-batch", "", "plan.global-batch", "the lower bound " + std::to_string(lo) +
                                                                   " exceeds the upper bound " + std::to_string(hi));
  r.global_batch_range = std::pair{lo, hi};
}

// The dimensions a --set fixes: the scenario fields it names.
std::vector<std::string> fields_of(const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  for (const auto& s : sets) out.push_back(s.substr(0, s.find('=')));
  return out;
}

// The written scenario names its model and config relative to itself.
std::string relative_to(const fs::path& file, const fs::path& folder) {
  return fs::absolute(file).lexically_normal().lexically_relative(fs::absolute(folder).lexically_normal()).string();
}

// The units `c`'s split counts in `model`: layers, or half layers.
LayerStructure units_of(const Model& model, const Candidate& c) {
  LayerStructure layers = detect_layers(model);
  if (c.split.units_per_layer == 2)
    if (auto halves = halve_layers(model, layers)) return std::move(*halves);
  return layers;
}

// The `execution` section that runs a candidate: `base` (the scenario's own) with the searched
// fields set to the candidate's scenario's `e`.
nlohmann::json planned_execution(nlohmann::json ex, const Execution& e, bool training) {
  ex["mode"] = "pipelined";
  ex["schedule"] = e.schedule;
  ex["recomputation"] = e.recomputation == Recomputation::Pipeline ? "pipeline" : "none";
  ex["microBatchSize"] = e.micro_batch_size;
  ex["replicas"] = e.replicas;
  ex.erase("placement");
  if (training) ex["gradientAccumulation"] = e.gradient_accumulation;
  else ex["batchesPerStep"] = e.batches_per_step;
  ex["availableMemoryProportion"] = e.available_memory_proportion;
  if (training) {
    auto& opt = ex["optimizer"];
    if (!opt.is_object()) opt = nlohmann::json::object();
    opt["type"] = optimizer_name(e.optimizer);
    opt["stateLocation"] = e.optimizer_state_off_chip ? "streaming-memory" : "on-chip";
    opt["replicatedTensorSharding"] = e.replicated_tensor_sharding;
    auto& wu = ex["accumulateOuterFragmentSettings"];
    if (!wu.is_object()) wu = nlohmann::json::object();
    wu["schedule"] = weight_update_schedule_name(e.weight_update_schedule);
    wu["excludedVirtualGraphs"] = e.weight_update_excluded_ipus;
  }
  // Under tensor parallelism the file holds the whole model, placed alike: run reshards it.
  ex["tensorParallel"] = e.tensor_parallel;
  return ex;
}

void write_best(const PlanOptions& o, std::ostream& out, const Scenario& base, const Scenario& best_sc,
                const Candidate& best) {
  const std::string model_path = o.write + ".model.json";
  const std::string scenario_path = o.write + ".scenario.json";
  check_output(model_path, o.force);
  check_output(scenario_path, o.force);
  const fs::path folder = fs::path(scenario_path).parent_path().empty() ? fs::path(".") : fs::path(scenario_path).parent_path();
  const bool training = base.execution.training;
  const std::string description = "written by ipusim plan from " + base.file + ": " + best.describe(training) + " (" +
                                  base.model.name + " re-annotated; the layers' ops are otherwise unchanged)";
  nlohmann::json doc = base.scenario_document;
  doc["name"] = base.name + "-planned";
  doc["description"] = description;
  doc["model"] = relative_to(model_path, folder);
  if (doc.contains("config") && doc["config"].is_string())
    doc["config"] = relative_to(fs::path(base.file).parent_path() / doc["config"].get<std::string>(), folder);
  doc["execution"] = planned_execution(doc["execution"], best_sc.execution, training);
  const Model written =
      best_sc.unsharded ? place_layers(best_sc.unsharded->model, units_of(best_sc.unsharded->model, best),
                                       best.split.layers_per_ipu, best.split.heads_on_last)
                        : best_sc.model;
  write_output(model_path, model_to_json_text(written, description), o.force);
  write_output(scenario_path, doc.dump(2) + "\n", o.force);
  out << "\nwrote " << model_path << " and " << scenario_path << " (ipusim run " << scenario_path << ")\n";
}

// plan --json: one confirmed candidate, its settings as the scenario's execution section that
// runs it, the evaluator's figures and the engine's.
nlohmann::json candidate_document(const Scenario& base, const Candidate& c, const RunMetrics& m, const Scenario& built) {
  const bool training = base.execution.training;
  nlohmann::json evaluator = {{"stepTimeSeconds", c.estimate.step_seconds},
                              {"throughputSamplesPerSecond", c.throughput},
                              {"latencySeconds", c.estimate.latency_seconds},
                              {"exact", c.estimate.exact()}};
  if (!c.estimate.exact()) evaluator["inexactBecause"] = c.estimate.inexact_reason();
  return {{"description", c.describe(training)},
          {"execution", planned_execution(base.scenario_document.value("execution", nlohmann::json::object()),
                                          built.execution, training)},
          {"layersPerIpu", c.split.layers_per_ipu},
          {"unitsPerLayer", c.split.units_per_layer},
          {"headsOn", c.split.heads_on_last ? "last" : "0"},
          {"globalBatch", c.global_batch},
          {"headroomBytesPerTile", c.headroom},
          {"evaluator", evaluator},
          {"engine",
           {{"stepTimeSeconds", m.step_time_s},
            {"throughputSamplesPerSecond", m.throughput_samples_per_s},
            {"latencyMeanSeconds", m.latency_s.mean},
            {"fits", m.memory.fits}}}};
}

nlohmann::json candidates_document(const Scenario& base, const ConfirmedPlans& plans) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < plans.candidates.size(); ++i)
    list.push_back(candidate_document(base, plans.candidates[i], plans.metrics[i], plans.scenarios[i]));
  return list;
}

// plan --json's document: what the search did, the confirmed candidates best first, the
// what-if schedules' best (null when none was searched or none fits), and the text report.
nlohmann::json plan_document(const Scenario& sc, const PlanSearch& search, Objective objective,
                             const ConfirmedPlans* confirmed, const ConfirmedPlans& what_if, const std::string& text) {
  nlohmann::json doc = {
      {"scenario", sc.file},
      {"objective", objective == Objective::Throughput ? "throughput" : "latency"},
      {"training", sc.execution.training},
      {"search",
       {{"seconds", search.seconds}, {"complete", search.complete}, {"candidatesTimed", search.counts.evaluated}}},
      {"fits", confirmed != nullptr},
      {"candidates", confirmed ? candidates_document(sc, *confirmed) : nlohmann::json::array()},
      {"whatIf", what_if.candidates.empty() ? nlohmann::json() : candidates_document(sc, what_if).at(0)},
      {"text", text}};
  return doc;
}

// Progress on standard error once a second, for searches longer than a second.
void print_progress(const SearchProgress& p, bool training) {
  std::cerr << "plan: " << format_fixed(p.elapsed_s, 1) << " s, " << p.settings_done << " of " << p.settings_total
            << " settings, " << p.evaluated << " candidates timed";
  if (p.best)
    std::cerr << ", best " << format_rate(p.best->throughput, "samples/s") << " (" << p.best->describe(training) << ")";
  // The settings left at the pace so far: not a bound (one setting may hold most of the work),
  // and only this pass's (the half-layer pass and other group sizes follow).
  if (p.settings_done > 0 && p.settings_done < p.settings_total)
    std::cerr << ", this pass ~" << format_fixed(p.eta_s, 0) << " s more at its pace so far";
  if (!p.current.empty()) std::cerr << "; searching " << p.current;
  std::cerr << "\n";
}

// A phased scenario: the phased mode's planner (plan_phased.cpp). The pipelined search's
// dimensions do not apply, and are refused rather than ignored.
int plan_phased_scenario(const PlanOptions& o, const Scenario& sc) {
  const std::vector<std::pair<const char*, bool>> pipelined_only = {
      {"--ipus", !o.ipus.empty()}, {"--replicas", !o.replicas.empty()}, {"--global-batch", !o.global_batch.empty()},
      {"--micro-batch", !o.micro_batches.empty()}, {"--gradient-accumulation", !o.gradient_accumulation.empty()},
      {"--schedule", !o.schedules.empty()}, {"--recomputation", !o.recomputation.empty()}, {"--state", !o.state.empty()},
      {"--rts", !o.rts.empty()}, {"--weight-update", !o.weight_update.empty()}, {"--heads-on", !o.heads_on.empty()},
      {"--amp", !o.amps.empty()}, {"--write", !o.write.empty()}, {"--time-limit", o.time_limit > 0},
      {"--explain-layers", o.explain_layers}, {"--objective", o.objective != "throughput"},
      {"--att-ffn", o.att_ffn != "yes"}, {"--tensor-parallel", !o.tensor_parallel.empty()}};
  for (const auto& [flag, given] : pipelined_only)
    if (given)
      throw InputError(flag, "", "cli.bad-value",
                       std::string(flag) + " belongs to the pipelined plan; a phased scenario's plan searches "
                       "executionPhaseSettings.stages, numIOTiles, the order and recomputation (docs/phased.md)");
  return plan_phased(sc, o.top, std::cout);
}

// One group size the search takes: the scenario resharded for it, its space (pipelines of
// groups) and the units it splits.
struct GroupSize {
  std::int64_t t = 1;
  Scenario scenario;
  PlanSpace space;
  LayerStructure units;
};

// --tensor-parallel's values; else the scenario's when --set fixes it; else 1, 2, 4, ... up to 16
// (Graphcore's largest groups) and half the system (a pipeline takes two groups), each that the
// model can be split by (the others are left out, as Megatron's rules refuse them).
std::vector<GroupSize> group_sizes(const PlanOptions& o, const Scenario& sc, const PlanRequest& request, int layers) {
  const bool asked = !o.tensor_parallel.empty();
  std::vector<std::int64_t> values(o.tensor_parallel.begin(), o.tensor_parallel.end());
  const auto fixed = request.fixed_fields;
  if (!asked && std::find(fixed.begin(), fixed.end(), "execution.tensorParallel") != fixed.end())
    values = {sc.execution.tensor_parallel};
  if (values.empty())
    for (std::int64_t t = 1; t <= 16 && 2 * t <= sc.hardware.ipu_count; t *= 2) values.push_back(t);
  if (std::find(values.begin(), values.end(), sc.execution.tensor_parallel) == values.end())
    values.push_back(sc.execution.tensor_parallel);  // the given configuration's, to compare with
  std::sort(values.begin(), values.end());
  std::vector<GroupSize> out;
  for (std::int64_t t : values) {
    GroupSize g;
    g.t = t;
    g.scenario = sc;
    g.scenario.execution.tensor_parallel = t;
    try {
      if (2 * t > sc.hardware.ipu_count)
        throw InputError("--tensor-parallel", "", "plan.tensor-parallel",
                         "groups of " + std::to_string(t) + " IPUs leave no pipeline of two groups on \"" +
                             sc.hardware.name + "\" (" + std::to_string(sc.hardware.ipu_count) + " IPUs); ask for groups of at most " +
                             std::to_string(sc.hardware.ipu_count / 2) + " IPUs");
      apply_tensor_parallel(g.scenario);
      g.space = make_plan_space(g.scenario, request, layers);
    } catch (const InputError&) {
      if (asked || t == sc.execution.tensor_parallel) throw;
      continue;  // a group size the model's axes or the system refuse
    }
    g.units = plan_units(g.scenario.model, g.space);
    out.push_back(std::move(g));
  }
  return out;
}

// Each group size searched in turn, each seeded with the answer so far so that it prunes against
// it (the answer is the best over all of them); `what_if`: the what-if schedules, searched apart
// from the frameworks' so that they never displace them (docs/planner.md): top 1, no front.
PlanSearch search_group_sizes(const std::vector<GroupSize>& sizes, PlanSearchOptions options, bool what_if) {
  if (what_if) options.top = 1, options.front_within = 0;
  PlanSearch answer;
  double spent = 0;
  std::vector<std::int64_t> skipped;
  bool halves_skipped = false;
  for (const GroupSize& g : sizes) {
    if (options.time_limit_s > 0 && spent >= options.time_limit_s && answer.counts.settings > 0) {
      skipped.push_back(g.t);
      continue;
    }
    PlanSpace space = g.space;
    if (what_if) space.schedules = space.what_if_schedules;
    space.what_if_schedules.clear();
    PlanSearchOptions these = options;
    if (options.time_limit_s > 0) these.time_limit_s = std::max(1e-3, options.time_limit_s - spent);
    for (const auto* list : {&answer.ranked, &answer.front, &answer.batch_front})
      these.seeds.insert(these.seeds.end(), list->begin(), list->end());
    PlanSearch search = search_plans(g.scenario, space, these);
    spent += search.seconds;
    const bool complete = answer.counts.settings == 0 ? search.complete : answer.complete && search.complete;
    SearchCounts total = answer.counts;
    total.settings += search.counts.settings, total.settings_ruled_out += search.counts.settings_ruled_out;
    total.settings_pruned += search.counts.settings_pruned, total.settings_infeasible += search.counts.settings_infeasible;
    total.partial_splits += search.counts.partial_splits, total.out_of_memory += search.counts.out_of_memory;
    total.refused += search.counts.refused, total.bounded += search.counts.bounded;
    total.evaluated += search.counts.evaluated;
    const double bound = std::max(answer.unexplored_bound, search.unexplored_bound);
    const bool polished = answer.polished && search.polished;
    const double whole = answer.whole_layer_seconds + search.whole_layer_seconds;
    search.seconds = spent;
    search.counts = total;
    search.complete = complete;
    search.unexplored_bound = bound;
    search.polished = polished;
    search.whole_layer_seconds = whole;
    halves_skipped = halves_skipped || search.halves_skipped;
    answer = std::move(search);
  }
  answer.halves_skipped = halves_skipped;
  answer.group_sizes_skipped = skipped;
  if (!skipped.empty()) answer.complete = false;
  return answer;
}

// Where --tensor-parallel (or a --set of it) narrowed the group sizes and nothing fits: the
// first other default size whose search finds a fitting configuration, as no_fit_message words it.
std::string other_group_sizes_fit(const PlanOptions& o, const Scenario& sc, PlanRequest request,
                                  const std::vector<GroupSize>& searched, const LayerStructure& layers) {
  PlanOptions every = o;
  every.tensor_parallel.clear();
  auto& fixed = request.fixed_fields;
  fixed.erase(std::remove(fixed.begin(), fixed.end(), "execution.tensorParallel"), fixed.end());
  std::vector<GroupSize> others;
  try {
    for (GroupSize& g : group_sizes(every, sc, request, static_cast<int>(layers.names.size())))
      if (std::none_of(searched.begin(), searched.end(), [&](const GroupSize& s) { return s.t == g.t; }))
        others.push_back(std::move(g));
  } catch (const InputError&) {
    return "";
  }
  PlanSearchOptions quick;
  quick.top = 1;
  quick.front_within = 0;
  quick.time_limit_s = 30;
  for (const GroupSize& g : others) {
    const PlanSearch s = search_group_sizes({g}, quick, false);
    if (!s.ranked.empty())
      return "\n  searching groups of " + std::to_string(g.t) + " IPUs (--tensor-parallel " + std::to_string(g.t) +
             ") finds one that fits: " + s.ranked.front().describe(sc.execution.training) + ", " +
             format_rate(s.ranked.front().throughput, "samples/s");
  }
  return "";
}

void print_group_sizes(std::ostream& out, const std::vector<GroupSize>& sizes) {
  if (sizes.size() == 1 && sizes.front().t == 1) return;
  out << "tensor parallel: groups of";
  for (const GroupSize& g : sizes) out << " " << g.t;
  out << " IPUs searched (the model resharded for each, Megatron's rules; docs/tensor-parallel.md), each seeded "
         "with the answer of the ones before; counts and time above are their sums\n";
}

// `plan --explain-layers`: the layers the planner finds, and where it would halve them.
int explain_plan_layers(const Model& model, const LayerStructure& layers) {
  std::cout << model.file << ": " << explain_layers(layers);
  if (const auto halves = halve_layers(model, layers))
    std::cout << "halves (--att-ffn yes): each layer cut where one activation crosses, e.g. "
              << halves->names.front() << " | " << halves->names[1] << "\n";
  else if (!layers.by_ops)
    std::cout << "halves: none (a layer has no cut with one activation crossing and a matmul on each side); "
                 "blocks hold whole layers\n";
  return kExitOk;
}

PlanRequest request_of(const PlanOptions& o) {
  PlanRequest request;
  request.ipus = o.ipus;
  request.replicas = o.replicas;
  parse_global_batch(o.global_batch, request);
  request.micro_batches = o.micro_batches;
  request.gradient_accumulation = o.gradient_accumulation;
  request.schedules = o.schedules;
  request.recomputation = o.recomputation;
  request.state_location = o.state;
  request.rts = o.rts;
  request.weight_update = o.weight_update;
  request.heads_on = o.heads_on;
  request.amps = o.amps;
  request.fixed_fields = fields_of(o.sets);
  request.layer_free_ipus = o.layer_free == "yes";
  request.half_layers = o.att_ffn == "yes";
  return request;
}

// Like run's estimate: a search too large for the machine is refused before it starts (the
// group sizes are searched one after another, so the largest counts). Returns the estimate.
PlanSearchEstimate checked_search_estimate(const PlanOptions& o, const Scenario& sc, const std::vector<GroupSize>& sizes,
                                           double& search_bytes) {
  PlanSearchEstimate estimate;
  for (const GroupSize& g : sizes) {
    const PlanSearchEstimate e = estimate_plan_search(g.scenario, g.space, g.units, o.top);
    if (e.bytes > estimate.bytes) estimate = e;
  }
  const LayerStructure& units = sizes.front().units;
  search_bytes = kProcessBaseBytes + estimate.bytes;
  if (search_bytes > memory_budget_bytes())
    throw InputError(sc.model.file, sc.model.ops_pointer, "plan.too-large",
                     "the search would need about " + format_bytes(search_bytes) + " of memory, more than the " +
                         format_bytes(memory_budget_bytes()) + " this machine can give it: " +
                         std::to_string(estimate.tables) + (estimate.tables == 1 ? " cost table" : " cost tables") + " (one per micro-batch), each up to " +
                         format_bytes(estimate.table_bytes) + " for the blocks of this model's " +
                         std::to_string(units.names.size() + 2) + " units (they grow with the cube of the units), and " +
                         std::to_string(estimate.points) + " points; search fewer --micro-batch values, whole layers "
                         "(--att-ffn no), or fewer layers (coarser layers: plan --explain-layers)");
  if (search_bytes > kNoteSearchBytes && !o.quiet)
    std::cerr << "ipusim: note: this search needs up to " << format_bytes(search_bytes) << "\n" << std::flush;
  return estimate;
}

PlanSearchOptions search_options(const PlanOptions& o, bool training) {
  PlanSearchOptions options;
  options.objective = o.objective == "latency" ? Objective::Latency : Objective::Throughput;
  options.top = o.top;
  options.front_within = o.front_within / 100;
  options.time_limit_s = o.time_limit;
  if (!o.quiet) options.progress = [training](const SearchProgress& p) { print_progress(p, training); };
  return options;
}

int plan(const PlanOptions& o) {
  if (!o.write.empty()) {
    check_write_prefix(o.write);
    check_output(o.write + ".model.json", o.force);
    check_output(o.write + ".scenario.json", o.force);
  }
  const Scenario sc = o.config.empty() ? load_scenario(o.scenario, parse_overrides(o.sets))
                                       : scenario_of_model(o.scenario, o.config, parse_overrides(o.sets));
  say_import_warnings(sc.model, std::cerr);
  // A placement the scenario fixes is checked as run checks it (the search keeps it only for
  // the pipeline it was written for).
  if (!sc.execution.placement.empty()) {
    std::int64_t width = 0;
    for (const Op& op : sc.model.ops) width = std::max(width, op.virtual_graph.value_or(0) + 1);
    physical_ipus(sc, static_cast<int>(width));
  }
  if (sc.execution.modes == std::vector<Mode>{Mode::Phased}) {
    if (o.json)
      throw InputError("command line", "--json", "cli.conflict",
                       "plan --json covers pipelined searches; a phased scenario's plan (" + sc.file +
                           ", execution.mode phased) is printed as text: drop --json");
    return plan_phased_scenario(o, sc);
  }
  const LayerStructure layers = detect_layers(sc.model);
  if (o.explain_layers && o.json)
    throw InputError("command line", "--json", "cli.conflict", "--explain-layers prints text only: drop --json");
  if (o.explain_layers) return explain_plan_layers(sc.model, layers);
  const PlanRequest request = request_of(o);
  const std::vector<GroupSize> sizes = group_sizes(o, sc, request, static_cast<int>(layers.names.size()));
  double search_bytes = 0;
  const PlanSearchEstimate estimate = checked_search_estimate(o, sc, sizes, search_bytes);
  const PlanSearchOptions options = search_options(o, sc.execution.training);

  PlanSearch search = search_group_sizes(sizes, options, false);
  const GroupSize& own = *std::find_if(sizes.begin(), sizes.end(), [&](const GroupSize& g) {
    return g.t == sc.execution.tensor_parallel;
  });
  search.space = own.space;  // described for the scenario's group size; the others are listed apart
  // --json: the text report goes into the document, which alone goes to standard output.
  std::ostringstream report;
  std::ostream& out = o.json ? static_cast<std::ostream&>(report) : std::cout;
  print_search_summary(out, own.scenario, search);
  print_group_sizes(out, sizes);
  print_search_estimate(out, search_bytes, estimate);
  const CandidateScenario build = [&](const Candidate& c) {
    for (const GroupSize& g : sizes)
      if (g.t == c.settings.tensor_parallel) return candidate_scenario(g.scenario, units_of(g.scenario.model, c), c);
    throw std::logic_error("plan: a candidate of a group size not searched");
  };
  const bool what_ifs = !own.space.what_if_schedules.empty();
  // --time-limit bounds the whole search: the what-if schedules get what the frameworks' left.
  PlanSearchOptions what_if_options = options;
  if (options.time_limit_s > 0) what_if_options.time_limit_s = std::max(1e-3, options.time_limit_s - search.seconds);
  const PlanSearch what_if = what_ifs ? search_group_sizes(sizes, what_if_options, true) : PlanSearch{};
  ConfirmedPlans what_if_best;
  if (search.ranked.empty()) {
    if (what_ifs) print_what_if(out, sc, what_if, nullptr, options.objective, build, what_if_best);
    if (o.json) std::cout << plan_document(sc, search, options.objective, nullptr, what_if_best, report.str()).dump(2) << "\n";
    std::cout << std::flush;
    std::cerr << "ipusim: " << no_fit_message(own.scenario, search, request, other_group_sizes_fit(o, sc, request, sizes, layers))
              << "\n";
    return kExitOutOfMemory;
  }
  const ConfirmedPlans confirmed = confirm_top(out, sc, search, options.objective, build);
  print_fronts(out, sc, search, options.objective);
  double largest_run = confirmed.largest_run_estimate;
  if (what_ifs)
    largest_run =
        std::max(largest_run, print_what_if(out, sc, what_if, &confirmed, options.objective, build, what_if_best));
  const double given_estimate = compare_with_given(out, sc, own.units, confirmed, options.objective);
  print_runs_estimate(out, std::max(largest_run, given_estimate));
  if (!o.write.empty()) write_best(o, out, sc, confirmed.best_scenario, confirmed.best);
  if (o.json) std::cout << plan_document(sc, search, options.objective, &confirmed, what_if_best, report.str()).dump(2) << "\n";
  return kExitOk;
}

// The schedules the planner can time (those with an evaluator in the registry): "a, b, c".
std::string evaluated_schedule_list() {
  std::string out;
  for (const std::string& name : evaluated_schedules()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

} // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan", "Search pipeline width x replicas, the split of the layers, micro-batch, G, "
                                         "schedule, recomputation and memory settings; confirm the best with the engine");
  cmd->add_option("scenario", o->scenario,
                  "Scenario file (scenarios/*.json): model, system and fixed settings; with --config, a model file")
      ->required();
  cmd->add_option("--config", o->config,
                  "Plan the model INPUT on this IPU system (configs/*.json) without a scenario file: every execution "
                  "setting at its default, fixed with --set execution.x=... (training: --set execution.training=true)");
  cmd->add_option("--ipus", o->ipus, "IPUs per pipeline to try (default: every divisor of the system's IPUs from 2)")
      ->delimiter(',')
      ->check(CLI::Range(2, 4096));
  cmd->add_option("--replicas", o->replicas, "Replicas to try (default: the system's IPUs / IPUs per pipeline)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--global-batch", o->global_batch,
                  "Samples per weight update (micro-batch x G x replicas): B fixed, or MIN-MAX free within bounds "
                  "(default: the scenario's, fixed)");
  cmd->add_option("--micro-batch", o->micro_batches, "Micro-batch sizes to try (default 1,2,4,...,64)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--gradient-accumulation", o->gradient_accumulation,
                  "Values of G to try (training; the global batch is then free)")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--schedule", o->schedules, "Schedules to try: " + evaluated_schedule_list() + " (default all)")
      ->delimiter(',');
  cmd->add_option("--recomputation", o->recomputation, "none, pipeline (default both in training)")->delimiter(',');
  cmd->add_option("--state", o->state, "Optimizer state: on-chip, streaming-memory (default both when it applies)")
      ->delimiter(',');
  cmd->add_option("--rts", o->rts, "Replicated tensor sharding: off, on (default both when it applies)")->delimiter(',');
  cmd->add_option("--weight-update", o->weight_update,
                  "Serial, OverlapCycleOptimized, OverlapMemoryOptimized (default all in training)")
      ->delimiter(',');
  cmd->add_option("--heads-on", o->heads_on, "Heads on IPU 0 (a final stage) or the last IPU: 0, last (default both)")
      ->delimiter(',');
  cmd->add_option("--amp", o->amps,
                  "availableMemoryProportion values each IPU may take (default 0.05-0.6 and the scenario's)")
      ->delimiter(',');
  cmd->add_option("--layer-free-ipus", o->layer_free,
                  "Let IPU 0 hold only the stem (embeddings) and the last IPU only the heads (default yes)")
      ->check(CLI::IsMember({"yes", "no"}));
  cmd->add_option("--tensor-parallel", o->tensor_parallel,
                  "Tensor-parallel group sizes to try (default 1, 2, 4, ... up to 16 and half the system, each the "
                  "model's heads, widths and vocabulary divide)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--att-ffn", o->att_ffn,
                  "Let a block end between a layer's attention and feed-forward halves, as Graphcore's MLPerf BERT "
                  "att_ffn_placement (default yes where every layer has such a cut)")
      ->check(CLI::IsMember({"yes", "no"}));
  cmd->add_option("--objective", o->objective, "Rank by throughput (default) or micro-batch latency")
      ->check(CLI::IsMember({"throughput", "latency"}));
  cmd->add_option("--top", o->top, "How many of the best to confirm with the engine and print (default 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--front-within", o->front_within,
                  "The memory-headroom front spans candidates within this many percent of the best (default 5)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--time-limit", o->time_limit, "Stop searching after this many seconds (default: none; the "
                                                  "output then says what was left unexamined)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--set", o->sets,
                  "Override a scenario field before planning: path=value; a searched dimension it names keeps that "
                  "value (execution.replicas=2 fixes the replicas); repeatable")
      ->allow_extra_args(false);
  cmd->add_flag("--explain-layers", o->explain_layers, "Print the layers the planner finds in the model, and stop");
  cmd->add_flag("--json", o->json,
                "Print one JSON document: the search's figures, the confirmed candidates best first (each with the "
                "execution section that runs it, the evaluator's and the engine's figures), the what-if best, and "
                "the text report (docs/planner.md)");
  cmd->add_flag("--quiet", o->quiet, "No progress on standard error");
  cmd->add_option("--write", o->write,
                  "Write the best as PREFIX.model.json (annotated model) and PREFIX.scenario.json (for ipusim run)");
  cmd->add_flag("--force", o->force, "Overwrite the --write files if they exist");
  return [o] { return plan(*o); };
}

} // namespace ipusim::cli
