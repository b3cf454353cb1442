#include "sim/service/plan_scenario.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "sim/base/units.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/planner.hpp"
#include "sim/service/plan_document.hpp"
#include "sim/service/plan_files.hpp"
#include "sim/service/plan_group_sizes.hpp"
#include "sim/service/plan_output.hpp"
#include "sim/service/plan_phased.hpp"
#include "sim/simulate/run_estimate.hpp"

namespace ipusim::service {

namespace {

// Searches larger than this are announced before they start (as run's are).
constexpr double kNoteSearchBytes = 1024.0 * 1024 * 1024;

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
int plan_phased_scenario(const PlanOptions& o, const Scenario& sc, std::ostream& report) {
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
  return plan_phased(sc, o.top, report);
}

// `plan --explain-layers`: the layers the planner finds, and where it would halve them.
int explain_plan_layers(const Model& model, const LayerStructure& layers, std::ostream& out) {
  out << model.file << ": " << explain_layers(layers);
  if (const auto halves = halve_layers(model, layers))
    out << "halves (--att-ffn yes): each layer cut where one activation crosses, e.g. " << halves->names.front()
        << " | " << halves->names[1] << "\n";
  else if (!layers.by_ops)
    out << "halves: none (a layer has no cut with one activation crossing and a matmul on each side); "
           "blocks hold whole layers\n";
  return kPlanFits;
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

// The scenario (or the model on a config) the options name, with their --set overrides, its
// placement checked as run checks it (the search keeps it only for the pipeline it was written for).
Scenario load_plan_scenario(const PlanOptions& o) {
  const Scenario sc = o.config.empty() ? load_scenario(o.scenario, parse_overrides(o.sets))
                                       : scenario_of_model(o.scenario, o.config, parse_overrides(o.sets));
  say_import_warnings(sc.model, std::cerr);
  if (!sc.execution.placement.empty()) {
    physical_ipus(sc, static_cast<int>(sc.model.virtual_ipu_count()));
  }
  return sc;
}

// What the pipelined plan searched: the frameworks' schedules over every group size, and the
// what-if schedules apart.
struct Searches {
  PlanRequest request;
  std::vector<GroupSize> sizes;
  std::size_t own = 0;  // the scenario's own group size, in `sizes`
  PlanSearchOptions options;
  PlanSearch search;
  bool what_ifs = false;  // the space has what-if schedules, searched into `what_if`
  PlanSearch what_if;
};

// Runs the searches; the report's head (what the search did) goes to `out` before the what-if search.
Searches run_searches(const PlanOptions& o, const Scenario& sc, const LayerStructure& layers, std::ostream& out) {
  Searches s;
  s.request = request_of(o);
  s.sizes = group_sizes(o.tensor_parallel, sc, s.request, static_cast<int>(layers.names.size()));
  double search_bytes = 0;
  const PlanSearchEstimate estimate = checked_search_estimate(o, sc, s.sizes, search_bytes);
  s.options = search_options(o, sc.execution.training);
  s.search = search_group_sizes(s.sizes, s.options, false);
  s.own = static_cast<std::size_t>(std::find_if(s.sizes.begin(), s.sizes.end(), [&](const GroupSize& g) {
                                     return g.t == sc.execution.tensor_parallel;
                                   }) - s.sizes.begin());
  const GroupSize& own = s.sizes.at(s.own);
  s.search.space = own.space;  // described for the scenario's group size; the others are listed apart
  print_search_summary(out, own.scenario, s.search);
  print_group_sizes(out, s.sizes);
  print_search_estimate(out, search_bytes, estimate);
  s.what_ifs = !own.space.what_if_schedules.empty();
  if (!s.what_ifs) return s;
  // --time-limit bounds the whole search: the what-if schedules get what the frameworks' left.
  PlanSearchOptions what_if_options = s.options;
  if (s.options.time_limit_s > 0)
    what_if_options.time_limit_s = std::max(1e-3, s.options.time_limit_s - s.search.seconds);
  s.what_if = search_group_sizes(s.sizes, what_if_options, true);
  return s;
}

// The pipelined plan: the searches, the engine's confirmation of the best, the fronts, the what-if
// schedules' best, the scenario as given, and the --write files.
PlanResult plan_pipelined(const PlanOptions& o, const Scenario& sc, const LayerStructure& layers,
                          std::ostream& report) {
  // --json: the text report goes into the document, which alone is the answer.
  std::ostringstream text;
  std::ostream& out = o.json ? static_cast<std::ostream&>(text) : report;
  const Searches s = run_searches(o, sc, layers, out);
  const CandidateScenario build = [&](const Candidate& c) {
    for (const GroupSize& g : s.sizes)
      if (g.t == c.settings.tensor_parallel) return candidate_scenario(g.scenario, units_of(g.scenario.model, c), c);
    throw std::logic_error("plan: a candidate of a group size not searched");
  };
  const Objective objective = s.options.objective;
  ConfirmedPlans what_if_best;
  PlanResult result;
  if (s.search.ranked.empty()) {
    if (s.what_ifs) print_what_if(out, sc, s.what_if, nullptr, objective, build, what_if_best);
    if (o.json) result.document = plan_document(sc, s.search, objective, nullptr, what_if_best, text.str());
    result.status = kPlanNoFit;
    result.no_fit = no_fit_message(s.sizes[s.own].scenario, s.search, s.request,
                                   other_group_sizes_fit(sc, s.request, s.sizes, layers));
    return result;
  }
  const ConfirmedPlans confirmed = confirm_top(out, sc, s.search, objective, build);
  print_fronts(out, sc, s.search, objective);
  double largest_run = confirmed.largest_run_estimate;
  if (s.what_ifs)
    largest_run = std::max(largest_run, print_what_if(out, sc, s.what_if, &confirmed, objective, build, what_if_best));
  const double given_estimate = compare_with_given(out, sc, s.sizes[s.own].units, confirmed, objective);
  print_runs_estimate(out, std::max(largest_run, given_estimate));
  if (!o.write.empty()) write_plan_files(o.write, o.force, out, sc, confirmed.best_scenario, confirmed.best);
  if (o.json) result.document = plan_document(sc, s.search, objective, &confirmed, what_if_best, text.str());
  return result;
}

} // namespace

PlanResult plan_scenario(const PlanOptions& o, std::ostream& report) {
  if (!o.write.empty()) check_plan_files(o.write, o.force);
  const Scenario sc = load_plan_scenario(o);
  PlanResult result;
  if (sc.execution.modes == std::vector<Mode>{Mode::Phased}) {
    if (o.json)
      throw InputError("command line", "--json", "cli.conflict",
                       "plan --json covers pipelined searches; a phased scenario's plan (" + sc.file +
                           ", execution.mode phased) is printed as text: drop --json");
    result.status = plan_phased_scenario(o, sc, report);
    return result;
  }
  const LayerStructure layers = detect_layers(sc.model);
  if (o.explain_layers && o.json)
    throw InputError("command line", "--json", "cli.conflict", "--explain-layers prints text only: drop --json");
  if (o.explain_layers) {
    result.status = explain_plan_layers(sc.model, layers, report);
    return result;
  }
  return plan_pipelined(o, sc, layers, report);
}

} // namespace ipusim::service
