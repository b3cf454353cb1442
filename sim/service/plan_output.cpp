#include "sim/service/plan_output.hpp"

#include "sim/output/model_figures.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <functional>
#include <sstream>

#include "sim/io/input_error.hpp"
#include "sim/base/units.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::service {

namespace {

std::string count(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string amp_text(const std::vector<double>& amp) {
  std::ostringstream out;
  const bool uniform = std::all_of(amp.begin(), amp.end(), [&](double a) { return a == amp.front(); });
  if (uniform && !amp.empty()) {
    out << amp.front();
  } else {
    out << "[";
    for (std::size_t i = 0; i < amp.size(); ++i) out << (i ? "," : "") << amp[i];
    out << "]";
  }
  return out.str();
}

// The scenario's own settings in the planner's terms.
PlanSettings settings_of(const Scenario& sc) {
  const Execution& ex = sc.execution;
  PlanSettings s;
  s.ipus = static_cast<int>(sc.model.virtual_ipu_count());
  s.replicas = static_cast<int>(ex.replicas);
  s.micro_batch = ex.micro_batch_size;
  s.depth = ex.training ? ex.gradient_accumulation : ex.batches_per_step;
  s.schedule = ex.schedule;
  s.recompute = ex.recomputation == Recomputation::Pipeline;
  s.state_off_chip = ex.optimizer_state_off_chip;
  s.rts = ex.replicated_tensor_sharding;
  s.weight_update = ex.weight_update_schedule;
  return s;
}

// What `a` changes against `b` ("replicas 4 (2)", ...), `b_name` naming b.
std::string differences(const PlanSettings& a, const std::string& a_placement, const std::vector<double>& a_amp,
                        const PlanSettings& b, const std::string& b_placement, const std::vector<double>& b_amp,
                        bool training) {
  std::vector<std::string> d;
  auto add = [&](bool differs, const std::string& name, const std::string& x, const std::string& y) {
    if (differs) d.push_back(name + " " + x + " (" + y + ")");
  };
  add(a.ipus != b.ipus, "IPUs per pipeline", std::to_string(a.ipus), std::to_string(b.ipus));
  add(a.replicas != b.replicas, "replicas", std::to_string(a.replicas), std::to_string(b.replicas));
  add(a_placement != b_placement, "split", a_placement, b_placement);
  add(a.schedule != b.schedule, "schedule", a.schedule, b.schedule);
  add(a.micro_batch != b.micro_batch, "micro-batch", std::to_string(a.micro_batch), std::to_string(b.micro_batch));
  add(a.depth != b.depth, training ? "G" : "batchesPerStep", std::to_string(a.depth), std::to_string(b.depth));
  if (training) {
    add(a.recompute != b.recompute, "recomputation", a.recompute ? "on" : "off", b.recompute ? "on" : "off");
    add(a.state_off_chip != b.state_off_chip, "optimizer state", a.state_off_chip ? "off chip" : "on chip",
        b.state_off_chip ? "off chip" : "on chip");
    add(a.rts != b.rts, "RTS", a.rts ? "on" : "off", b.rts ? "on" : "off");
    add(a.weight_update != b.weight_update && schedule_info(a.schedule).follows_weight_update_setting, "weight update",
        weight_update_schedule_name(a.weight_update), weight_update_schedule_name(b.weight_update));
  }
  add(amp_text(a_amp) != amp_text(b_amp), "availableMemoryProportion", amp_text(a_amp), amp_text(b_amp));
  std::string out;
  for (const auto& s : d) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "the same settings" : out;
}

// Batches per step as the evaluators count them.
double batches_of(const Candidate& c, const Scenario& sc) {
  const bool training = sc.execution.training;
  if (!training) return 1;
  if (schedule_info(c.settings.schedule).lockstep_cycles && c.settings.depth == 1) return 1;
  return static_cast<double>(sc.execution.batches_per_step);
}

// Where a candidate's time goes per sample, from its evaluator: main cycles, fill and flush, weight update.
struct PerSample {
  double main = 0, ramps = 0, update = 0;
};
PerSample per_sample(const Candidate& c, const Scenario& sc) {
  const double samples = c.throughput * c.estimate.step_seconds;
  const double batches = batches_of(c, sc);
  PerSample p;
  p.ramps = batches * c.estimate.fill_flush_seconds / samples;
  p.update = batches * c.estimate.update_seconds / samples;
  p.main = c.estimate.step_seconds / samples - p.ramps - p.update;
  return p;
}

std::string loses_because(const Scenario& sc, const Candidate& c, const RunMetrics& m, const Candidate& best,
                          const RunMetrics& mbest, Objective objective) {
  std::ostringstream why;
  if (objective == Objective::Throughput)
    why << format_percent(1 - m.throughput_samples_per_s / mbest.throughput_samples_per_s) << " less throughput";
  else
    why << format_percent(m.latency_s.mean / mbest.latency_s.mean - 1) << " more latency";
  why << "; differs in " << differences(c.settings, c.placement(), c.amp, best.settings, best.placement(), best.amp,
                                        sc.execution.training);
  const PerSample a = per_sample(c, sc), b = per_sample(best, sc);
  std::vector<std::pair<double, std::string>> parts{{a.main - b.main, "the main cycles (the busiest IPU)"},
                                                    {a.ramps - b.ramps, "the fill and flush"},
                                                    {a.update - b.update, "the weight update"}};
  std::sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  if (objective == Objective::Throughput && parts.front().first > 0) {
    why << "; per sample it spends " << format_seconds(parts.front().first) << " more in " << parts.front().second;
    if (parts[1].first > 0) why << " and " << format_seconds(parts[1].first) << " more in " << parts[1].second;
  }
  return why.str();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string headroom_text(const Candidate& c) {
  std::string out;
  for (std::size_t i = 0; i < c.headroom.size(); ++i)
    out += (i ? ", " : "") + std::string("IPU") + std::to_string(i) + " " + format_bytes(c.headroom[i]);
  return out + " (least on IPU" + std::to_string(c.tightest_ipu) + ")";
}

double engine_score(const RunMetrics& m, Objective objective) {
  return objective == Objective::Throughput ? m.throughput_samples_per_s : 1 / m.latency_s.mean;
}

// `largest_estimate`: the largest memory estimate of the runs so far (estimate_run's).
RunMetrics simulate_streaming(const Scenario& sc, double& largest_estimate) {
  SimulateOptions options;
  options.keep_log = false;  // metrics as the run goes: memory does not grow with G
  Simulation sim = simulate(sc, {Mode::Pipelined}, options);
  largest_estimate = std::max(largest_estimate, sim.estimate.peak_bytes);
  return std::move(sim.runs.at(0).metrics);
}

} // namespace

void print_search_estimate(std::ostream& out, double search_bytes, const PlanSearchEstimate& e) {
  out << "memory: the search needs at most " << format_bytes(search_bytes) << " (" << std::llround(search_bytes)
      << " bytes, its estimate: " << count(e.tables) << " cost tables, " << count(e.points) << " points)\n";
}

void print_runs_estimate(std::ostream& out, double largest_run_bytes) {
  if (largest_run_bytes <= 0) return;
  out << "\nmemory: each engine run above needs at most " << format_bytes(largest_run_bytes) << " ("
      << std::llround(largest_run_bytes) << " bytes, the largest of their estimates, as ipusim run's)\n";
}

void print_search_summary(std::ostream& out, const Scenario& sc, const PlanSearch& search) {
  const SearchCounts& n = search.counts;
  const std::string input = sc.file == "command line" ? sc.model.file + " --config " + sc.hardware.file : sc.file;
  out << "ipusim plan " << input << ": " << sc.model.name << ", " << search.layers.names.size() / static_cast<std::size_t>(search.layers.units_per_layer)
      << (search.layers.by_ops ? " ops (no repeated layer in the names)" : " layers (\"" + search.layers.pattern + "\")")
      << ", on " << sc.hardware.name << " (" << sc.hardware.ipu_count << " IPUs), "
      << (sc.execution.training ? "training" : "inference") << "\n"
      << "space: " << describe_space(search.space) << "\n"
      << "search: " << format_fixed(search.seconds, 2) << " s"
      << (search.layers.units_per_layer == 2 ? " (whole layers first, " + format_fixed(search.whole_layer_seconds, 2) +
                                                   " s, their answer then seeding the search over half layers; "
                                                   "counts of the latter)"
                                             : "")
      << "; " << count(n.settings) << " settings: "
      << count(n.settings_ruled_out) << " ruled out by their schedule's rules, " << count(n.settings_infeasible)
      << " with no split that fits, " << count(n.settings_pruned) << " pruned by their bound, the rest searched; " << count(n.partial_splits) << " IPU blocks examined ("
      << count(n.out_of_memory) << " fit at no availableMemoryProportion), " << count(n.refused)
      << " placements refused by PopART's rules (a weight or host input on two IPUs), " << count(n.bounded)
      << " partial splits dropped by the bound; " << count(n.evaluated) << " candidates timed\n";
  if (search.complete)
    out << "exact (to 0.01 %): every configuration not timed was proven (by memory, a rule or the step-time bound) "
           "unable to enter the top "
        << std::max<std::size_t>(search.ranked.size(), 1)
        << ", the front or, with a free batch, the best at its global batch; each IPU at its fastest "
           "availableMemoryProportion that fits, lowered afterwards where the step time allows\n";
  else
    out << "stopped by --time-limit: the best is the best among those examined; the unexamined part could reach "
        << format_rate(search.unexplored_bound, "samples/s") << " at most (by its bound)\n";
  if (search.halves_skipped)
    out << "stopped by --time-limit before splits between a layer's halves were searched: whole layers only\n";
  if (!search.group_sizes_skipped.empty()) {
    out << "stopped by --time-limit before tensor-parallel groups of";
    for (std::int64_t t : search.group_sizes_skipped) out << " " << t;
    out << " IPUs were searched (their bound is not known)\n";
  }
  if (!search.polished)
    out << "stopped by --time-limit before each candidate's availableMemoryProportion was lowered where the step time "
           "allows: those not reached keep the fastest that fits\n";
  out << std::flush;
}

// "419.4 ktokens/s, MFU 18.3 %, 0.5 per 1M tokens": a candidate's language-model figures.
std::string llm_text(const Scenario& sc, const ModelFigures& model, const Candidate& cand, const RunMetrics& m) {
  // No copy of the scenario (its model is megabytes): the candidate's group size is all that differs.
  const RunLlmFigures f = run_llm_figures(sc.hardware, model, m, cand.settings.ipus * cand.settings.tensor_parallel);
  std::string text = format_count(model.parameters) + " parameters, ";
  if (f.tokens_per_s) text += format_rate(*f.tokens_per_s, "tokens/s") + ", ";
  text += "MFU " + format_percent(f.mfu) + " of " + std::to_string(f.ipus) + " IPUs";
  if (f.cost_per_million_tokens) text += ", " + format_fixed(*f.cost_per_million_tokens, 4) + " per 1M tokens";
  return text;
}

ConfirmedPlans confirm_top(std::ostream& out, const Scenario& sc, const PlanSearch& search, Objective objective,
                           const CandidateScenario& build) {
  ConfirmedPlans c;
  std::vector<Scenario> scenarios;
  for (const Candidate& cand : search.ranked) {
    scenarios.push_back(build(cand));
    c.metrics.push_back(simulate_streaming(scenarios.back(), c.largest_run_estimate));
  }
  std::vector<std::size_t> order(search.ranked.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return engine_score(c.metrics[a], objective) > engine_score(c.metrics[b], objective);
  });
  const RunMetrics metrics_by_evaluator_first = c.metrics.front();
  std::vector<RunMetrics> metrics;
  for (std::size_t i : order)
    c.candidates.push_back(search.ranked[i]), metrics.push_back(c.metrics[i]), c.scenarios.push_back(scenarios[i]);
  c.metrics = metrics;
  c.best = c.candidates.front();
  c.best_scenario = scenarios[order.front()];
  const bool training = sc.execution.training;
  // Reordered only where the engine's figures differ by more than the search's tolerance.
  if (order.front() != 0 &&
      engine_score(c.metrics.front(), objective) > engine_score(metrics_by_evaluator_first, objective) * (1 + 1e-4))
    out << "\n(the engine ranks evaluator's #" << order.front() + 1
        << " first: the evaluator is approximate where transfers share links; ranked below by the engine)\n";
  const ModelFigures model = model_figures(sc);
  for (std::size_t i = 0; i < c.candidates.size(); ++i) {
    const Candidate& cand = c.candidates[i];
    const RunMetrics& m = c.metrics[i];
    const double gap = cand.estimate.step_seconds / m.step_time_s - 1;
    std::ostringstream g;
    g << std::showpos << std::scientific << std::setprecision(2) << gap;
    out << "\n#" << i + 1 << " " << cand.describe(training) << "\n"
        << "  engine:    step " << format_seconds(m.step_time_s) << ", " << format_rate(m.throughput_samples_per_s, "samples/s")
        << ", latency " << format_seconds(m.latency_s.mean) << " (mean), global batch " << cand.global_batch << "\n"
        << "  evaluator: step " << format_seconds(cand.estimate.step_seconds) << ", gap to engine " << g.str()
        << (cand.estimate.exact() ? " (exact: no contention)" : " (approximate: " + cand.estimate.inexact_reason() + ")")
        << "\n"
        << "  memory:    " << (m.memory.fits ? "fits" : "DOES NOT FIT in the engine's run") << "; headroom per tile "
        << headroom_text(cand) << "\n"
        << "  model:     " << llm_text(sc, model, cand, m) << "\n";
    if (i > 0) out << "  loses to #1: " << loses_because(sc, cand, m, c.best, c.metrics.front(), objective) << "\n";
    out << std::flush;
  }
  return c;
}

double print_what_if(std::ostream& out, const Scenario& sc, const PlanSearch& what_if, const ConfirmedPlans* confirmed,
                     Objective objective, const CandidateScenario& build, ConfirmedPlans& what_if_best) {
  const std::string names = join_names(what_if.space.schedules);
  out << "\nwhat-if: " << names << " (no IPU framework runs them; " << framework_schedules()
      << "), searched apart in " << format_fixed(what_if.seconds, 2) << " s, "
      << count(what_if.counts.evaluated) << " candidates timed"
      << (what_if.complete ? "" : ", stopped by --time-limit") << "\n";
  if (what_if.ranked.empty()) {
    out << "  none of their configurations fits\n" << std::flush;
    return 0;
  }
  const Candidate& cand = what_if.ranked.front();
  double estimate = 0;
  what_if_best.scenarios.push_back(build(cand));
  const RunMetrics m = simulate_streaming(what_if_best.scenarios.back(), estimate);
  what_if_best.candidates.push_back(cand);
  what_if_best.metrics.push_back(m);
  what_if_best.best = cand;
  what_if_best.best_scenario = what_if_best.scenarios.back();
  out << "  best: " << cand.describe(sc.execution.training) << "\n"
      << "  engine:    step " << format_seconds(m.step_time_s) << ", " << format_rate(m.throughput_samples_per_s, "samples/s")
      << ", latency " << format_seconds(m.latency_s.mean) << " (mean), global batch " << cand.global_batch << "; "
      << (m.memory.fits ? "fits" : "DOES NOT FIT in the engine's run") << "\n";
  if (confirmed != nullptr) {
    const double change = engine_score(m, objective) / engine_score(confirmed->metrics.front(), objective) - 1;
    out << "  against #1: " << format_percent(std::abs(change)) << (change >= 0 ? " better" : " worse") << " in "
        << (objective == Objective::Throughput ? "throughput" : "mean latency")
        << (change > 0 ? ": what these schedules would gain on IPUs were a framework to run them; plan --schedule "
                         "chooses among them"
                       : ": the IPU frameworks' schedules lose nothing here")
        << "\n";
  }
  out << std::flush;
  return estimate;
}

void print_fronts(std::ostream& out, const Scenario& sc, const PlanSearch& search, Objective objective) {
  const bool training = sc.execution.training;
  auto figure = [&](const Candidate& c) {
    return objective == Objective::Throughput ? format_rate(c.throughput, "samples/s")
                                              : format_seconds(c.estimate.latency_seconds) + " latency";
  };
  if (search.front.size() > 1) {
    out << "\nfront: " << (objective == Objective::Throughput ? "throughput" : "latency")
        << " against the least memory headroom per tile, within " << format_percent(1 - (search.front.back().score / search.front.front().score))
        << " of the best (evaluator figures; each gives more headroom than every faster one):\n";
    for (const Candidate& c : search.front)
      out << "  " << figure(c) << ", least headroom " << format_bytes(c.least_headroom) << " (IPU" << c.tightest_ipu
          << "): " << c.describe(training) << "\n";
  }
  if (search.space.batch_free() && search.batch_front.size() > 1) {
    out << "\nfront: " << (objective == Objective::Throughput ? "throughput" : "latency")
        << " against the global batch (the best at each batch that beats every smaller one):\n";
    for (const Candidate& c : search.batch_front)
      out << "  global batch " << c.global_batch << ": " << figure(c) << ", " << c.describe(training) << "\n";
  }
  out << std::flush;
}

double compare_with_given(std::ostream& out, const Scenario& sc, const LayerStructure& layers,
                          const ConfirmedPlans& confirmed, Objective objective) {
  double estimate = 0;
  if (sc.model.ops.empty() || !sc.model.ops.front().virtual_graph) return estimate;
  const PlanSettings s = settings_of(sc);
  if (s.ipus < 2) return estimate;  // all on one IPU: not a pipeline to compare with
  Scenario given = sc;
  given.execution.modes = {Mode::Pipelined};
  const bool training = sc.execution.training;
  const std::string placement = describe_placement(sc.model, layers);
  out << "\ngiven: the scenario as it is, " << s.ipus << " IPUs x " << s.replicas << " replicas, " << placement << ", "
      << s.schedule << ", micro-batch " << s.micro_batch << (training ? ", G " : ", batchesPerStep ") << s.depth << "\n"
      << std::flush;
  try {
    const RunMetrics m = simulate_streaming(given, estimate);
    const RunMetrics& best = confirmed.metrics.front();
    out << "  engine:    step " << format_seconds(m.step_time_s) << ", " << format_rate(m.throughput_samples_per_s, "samples/s")
        << ", latency " << format_seconds(m.latency_s.mean) << " (mean)\n  memory:    "
        << (m.memory.fits ? "fits" : "does not fit") << "\n  #1 vs given: ";
    const double change = objective == Objective::Throughput
                              ? best.throughput_samples_per_s / m.throughput_samples_per_s - 1
                              : best.latency_s.mean / m.latency_s.mean - 1;
    out << format_percent(std::abs(change)) << (change >= 0 ? " more " : " less ")
        << (objective == Objective::Throughput ? "throughput" : "mean latency") << " (engine figures); #1 differs in "
        << differences(confirmed.best.settings, confirmed.best.placement(), confirmed.best.amp, s,
                       placement.rfind("[", 0) == 0 ? placement : placement, sc.execution.available_memory_proportion, training)
        << "\n";
  } catch (const InputError& e) {
    out << "  not runnable pipelined: " << e.what() << "\n";
  }
  out << std::flush;
  return estimate;
}

std::string no_fit_message(const Scenario& sc, const PlanSearch& search, const PlanRequest& request,
                           const std::string& found_elsewhere) {
  // A search the time limit cut says nothing of the part it did not reach (it said "the whole
  // space was searched" while a search without the limit found a fitting best).
  if (!search.complete)
    return "no configuration that fits in memory was found before --time-limit stopped the search (" +
           count(search.counts.partial_splits) + " IPU blocks examined, " + count(search.counts.out_of_memory) +
           " of them fit at no availableMemoryProportion); the part of the space not examined may hold one: raise "
           "--time-limit, or narrow the space (--ipus, --replicas, --micro-batch)";
  std::string out = "no configuration in the space fits in memory (" + count(search.counts.partial_splits) +
                    " IPU blocks examined, " + count(search.counts.out_of_memory) + " of them fit at no "
                    "availableMemoryProportion)";
  // Each dimension the command line narrowed, searched in full: does anything fit then?
  struct Widening {
    std::string name;
    std::function<void(PlanRequest&)> widen;
  };
  std::vector<Widening> widenings;
  if (!request.ipus.empty() || !request.replicas.empty())
    widenings.push_back({"every pipeline width (no --ipus/--replicas)", [](PlanRequest& r) { r.ipus.clear(), r.replicas.clear(); }});
  if (!request.micro_batches.empty()) widenings.push_back({"every micro-batch (no --micro-batch)", [](PlanRequest& r) { r.micro_batches.clear(); }});
  if (!request.recomputation.empty()) widenings.push_back({"recomputation (no --recomputation)", [](PlanRequest& r) { r.recomputation.clear(); }});
  if (!request.state_location.empty()) widenings.push_back({"state off chip (no --state)", [](PlanRequest& r) { r.state_location.clear(); }});
  if (!request.rts.empty()) widenings.push_back({"RTS (no --rts)", [](PlanRequest& r) { r.rts.clear(); }});
  if (!request.amps.empty()) widenings.push_back({"every availableMemoryProportion (no --amp)", [](PlanRequest& r) { r.amps.clear(); }});
  if (!request.heads_on.empty()) widenings.push_back({"both head placements (no --heads-on)", [](PlanRequest& r) { r.heads_on.clear(); }});
  if (!request.layer_free_ipus) widenings.push_back({"IPUs without layers (--layer-free-ipus yes)", [](PlanRequest& r) { r.layer_free_ipus = true; }});
  for (const std::string& field : request.fixed_fields)
    widenings.push_back({"the " + field + " that --set fixed", [field](PlanRequest& r) {
                           r.fixed_fields.erase(std::remove(r.fixed_fields.begin(), r.fixed_fields.end(), field), r.fixed_fields.end());
                         }});
  std::string found = found_elsewhere;
  for (const Widening& w : widenings) {
    PlanRequest r = request;
    w.widen(r);
    try {
      const PlanSpace space = make_plan_space(sc, r, static_cast<int>(search.layers.names.size()));
      PlanSearchOptions options;
      options.top = 1;
      options.front_within = 0;
      options.time_limit_s = 30;
      const PlanSearch s = search_plans(sc, space, options);
      if (!s.ranked.empty())
        found += "\n  searching " + w.name + " finds one that fits: " + s.ranked.front().describe(sc.execution.training) +
                 ", " + format_rate(s.ranked.front().throughput, "samples/s");
    } catch (const InputError&) {
    }
  }
  if (!found.empty()) return out + "; these settings would fit:" + found;
  if (widenings.empty())
    return out + "; the whole space was searched: the model needs more memory than " + std::to_string(sc.hardware.ipu_count) +
           " IPUs of \"" + sc.hardware.name + "\" give in any configuration the planner knows (a larger system, or a smaller "
           "micro-batch than 1 sample, would be needed)";
  return out + "; searching any one fixed dimension in full does not help either";
}

} // namespace ipusim::service
