#include "sim/service/plan_group_sizes.hpp"

#include <algorithm>

#include "sim/base/units.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"

namespace ipusim::service {

LayerStructure units_of(const Model& model, const Candidate& c) {
  LayerStructure layers = detect_layers(model);
  if (c.split.units_per_layer == 2)
    if (auto halves = halve_layers(model, layers)) return std::move(*halves);
  return layers;
}

std::vector<GroupSize> group_sizes(const std::vector<int>& asked_sizes, const Scenario& sc, const PlanRequest& request,
                                   int layers) {
  const bool asked = !asked_sizes.empty();
  std::vector<std::int64_t> values(asked_sizes.begin(), asked_sizes.end());
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

std::string other_group_sizes_fit(const Scenario& sc, PlanRequest request, const std::vector<GroupSize>& searched,
                                  const LayerStructure& layers) {
  auto& fixed = request.fixed_fields;
  fixed.erase(std::remove(fixed.begin(), fixed.end(), "execution.tensorParallel"), fixed.end());
  std::vector<GroupSize> others;
  try {
    for (GroupSize& g : group_sizes({}, sc, request, static_cast<int>(layers.names.size())))
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

} // namespace ipusim::service
