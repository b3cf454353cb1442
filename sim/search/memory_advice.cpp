#include "sim/search/memory_advice.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/base/units.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/planner.hpp"

namespace ipusim {

namespace {

struct Verdict {
  MemoryReport memory;
  double step = std::numeric_limits<double>::quiet_NaN();
};

// Memory as the run in `mode` would report it, and the step time when an evaluator applies.
Verdict judge(const Scenario& sc, Mode mode) {
  Verdict v;
  const Plan plan = make_plan(sc, build_graph(sc.model), {mode});
  const Schedule schedule = make_schedule(mode, sc, plan);
  v.memory = estimate_memory(sc, plan, schedule.stash_depth, schedule.recompute, schedule.mirrors,
                             schedule.stash_at_once);
  if (mode == Mode::Pipelined && has_evaluator(sc.execution.schedule)) {
    try {
      v.step = estimate_step(sc, plan).step_seconds;
    } catch (const InputError&) {
    }
  }
  return v;
}

// The phased mode's own settings (docs/phased.md): slices of the micro-batch (batch
// serialisation), loading weights on demand (no buffer for the next phase's), and accumulators
// on demand. `attempt` tries one and says whether it fits.
template <typename Attempt> void phased_fixes(const Execution& ex, Attempt& attempt) {
  const PhaseSettings& p = ex.phases;
  for (std::int64_t f = std::max<std::int64_t>(2, p.batch_serialization * 2); f <= ex.micro_batch_size; f *= 2) {
    if (ex.micro_batch_size % f != 0) continue;
    if (attempt({"batch serialisation", "batch serialisation factor " + std::to_string(f) + " (now " +
                                           std::to_string(p.batch_serialization) + ")",
                 "--set execution.batchSerializationSettings.factor=" + std::to_string(f)},
                [f](Scenario& v) { v.execution.phases.batch_serialization = f; }))
      break;
  }
  if (p.weights == PhaseIo::Preload)
    attempt({"weightIOSchedule", "weights loaded on demand (now Preload: the next phase's buffered)",
             "--set execution.executionPhaseSettings.weightIOSchedule=OnDemand"},
            [](Scenario& v) { v.execution.phases.weights = PhaseIo::OnDemand; });
  if (p.accumulators == PhaseIo::Preload && !p.serialise_micro_batches && ex.training && ex.gradient_accumulation > 1)
    attempt({"accumulatorIOSchedule", "accumulators loaded on demand (now Preload)",
             "--set execution.executionPhaseSettings.accumulatorIOSchedule=OnDemand"},
            [](Scenario& v) { v.execution.phases.accumulators = PhaseIo::OnDemand; });
}

std::string number(double v) {
  std::string s = format_fixed(v, 2);
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) s.pop_back();
  return s;
}


// The search for settings that make an overflowing scenario fit: the fixes tried so far
// and, by fix, the edit that makes it (kept for the settings one can combine).
struct FixSearch {
  const Scenario& sc;
  Mode mode;
  Verdict base;
  int worst = 0;            // the IPU that overflows most
  double worst_tile = 0;    // its fullest tile's bytes
  std::vector<MemoryFix> fixes;
  std::vector<std::function<void(Scenario&)>> edits;

  FixSearch(const Scenario& scenario, Mode m, Verdict b) : sc(scenario), mode(m), base(std::move(b)) {
    // The IPU that overflows most, and by how much.
    double over = -std::numeric_limits<double>::infinity();
    for (const IpuMemory& i : base.memory.ipus)
      if (i.fullest_tile_bytes - i.tile_capacity_bytes > over) over = i.fullest_tile_bytes - i.tile_capacity_bytes, worst = i.id;
    worst_tile = over + static_cast<double>(sc.hardware.ipu.sram_bytes_per_tile);
  }

  double change_of(const Verdict& v) const {
    return std::isfinite(base.step) && std::isfinite(v.step) ? v.step / base.step - 1 : std::numeric_limits<double>::quiet_NaN();
  }

  void set_freed_bytes(MemoryFix& fix, const Verdict& got) const {
    for (const IpuMemory& m : got.memory.ipus)
      if (m.id == worst) fix.freed_bytes = worst_tile - m.fullest_tile_bytes;
  }

  // One setting changed: what the memory model says of the scenario with it.
  bool attempt(MemoryFix fix, const std::function<void(Scenario&)>& edit) {
    Scenario v = sc;
    edit(v);
    try {
      const Verdict got = judge(v, mode);
      fix.fits = got.memory.fits;
      set_freed_bytes(fix, got);
      fix.step_change = change_of(got);
      fixes.push_back(fix);
      edits.push_back(edit);
      return fix.fits;
    } catch (const InputError&) {
      return false;
    }
  }

  // One of a series of values tried in order: kept when it fits or is the `last` tried, else
  // forgotten (an attempt the rules refused added nothing). True: stop the series.
  bool attempt_in_series(MemoryFix fix, const std::function<void(Scenario&)>& edit, bool last) {
    const std::size_t before = fixes.size();
    if (attempt(std::move(fix), edit) || last) return true;
    fixes.resize(before), edits.resize(before);
    return false;
  }

  // The scenario with the chosen fixes' edits together: whether it fits (and its verdict in *out).
  bool fits_with(const std::vector<std::size_t>& chosen, Verdict* out) const {
    Scenario v = sc;
    for (std::size_t i : chosen) edits[i](v);
    try {
      const Verdict got = judge(v, mode);
      if (out) *out = got;
      return got.memory.fits;
    } catch (const InputError&) {
      return false;
    }
  }
};

void micro_batch_fix(FixSearch& s) {
  const Execution& ex = s.sc.execution;
  // Halve until it fits, keeping the global batch with a larger G (training).
  for (std::int64_t mb = ex.micro_batch_size / 2; mb >= 1; mb /= 2) {
    if (ex.micro_batch_size % mb != 0) continue;
    const std::int64_t g = ex.gradient_accumulation * (ex.micro_batch_size / mb);
    std::string change = "micro-batch " + std::to_string(mb) + " (now " + std::to_string(ex.micro_batch_size) + ")";
    std::string how = "--set execution.microBatchSize=" + std::to_string(mb);
    if (ex.training) {
      change += ", G " + std::to_string(g) + " to keep the global batch";
      how += " --set execution.gradientAccumulation=" + std::to_string(g);
    }
    // By value: the edit is stored and called again after the loop, when fixes are combined.
    // Only the largest that fits, or the smallest tried.
    const auto edit = [mb, g](Scenario& v) {
      v.execution.micro_batch_size = mb;
      if (v.execution.training) v.execution.gradient_accumulation = g;
    };
    if (s.attempt_in_series({"micro-batch", change, how}, edit, mb == 1)) break;
  }
}

void memory_proportion_fix(FixSearch& s) {
  const Execution& ex = s.sc.execution;
  const double now = *std::max_element(ex.available_memory_proportion.begin(), ex.available_memory_proportion.end());
  std::vector<double> lower;
  for (double a : {0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1, 0.05})
    if (a < now) lower.push_back(a);
  for (std::size_t i = 0; i < lower.size(); ++i) {
    const double a = lower[i];
    if (s.attempt_in_series({"availableMemoryProportion",
                             "availableMemoryProportion " + number(a) + " on every IPU (now " + number(now) + " at most)",
                             "--set execution.availableMemoryProportion=" + number(a)},
                            [a](Scenario& v) { v.execution.available_memory_proportion = {a}; }, i + 1 == lower.size()))
      break;
  }
}

// Tensor parallelism over the IPUs the scenario leaves idle: every virtual IPU's ops sharded
// over a group of t IPUs by Megatron's rules (sim/io/tensor_parallel.hpp), t doubling from
// the scenario's own (GCL's rings want powers of two) up to what the system holds; the
// smallest that fits, else the widest. A t the model's axes cannot share is skipped (its
// rule refuses it).
void tensor_parallel_fix(FixSearch& s) {
  const Scenario& sc = s.sc;
  const Execution& ex = sc.execution;
  const std::int64_t groups = sc.model.virtual_ipu_count() * ex.replicas;
  for (std::int64_t t = 2 * ex.tensor_parallel; t * groups <= sc.hardware.ipu_count; t *= 2) {
    const auto edit = [t](Scenario& v) {
      v.execution.tensor_parallel = t;
      apply_tensor_parallel(v);
    };
    if (s.attempt_in_series({"tensor parallelism",
                             "each virtual IPU's ops sharded over " + std::to_string(t) + " IPUs (now " +
                                 std::to_string(ex.tensor_parallel) + "), " + std::to_string(t * groups) +
                                 " of the system's " + std::to_string(sc.hardware.ipu_count),
                             "--set execution.tensorParallel=" + std::to_string(t)},
                            edit, 2 * t * groups > sc.hardware.ipu_count))
      break;
  }
}

// Each setting alone.
void single_setting_fixes(FixSearch& s) {
  const Scenario& sc = s.sc;
  const Execution& ex = sc.execution;
  auto attempt = [&s](MemoryFix fix, const std::function<void(Scenario&)>& edit) { return s.attempt(fix, edit); };
  const bool has_state = ex.training && optimizer_state_tensors(ex.optimizer) > 0;
  if (ex.training && ex.recomputation == Recomputation::None)
    attempt({"recomputation", "pipeline recomputation (now none)", "--set execution.recomputation=pipeline"},
            [](Scenario& v) { v.execution.recomputation = Recomputation::Pipeline; });
  if (ex.micro_batch_size > 1) micro_batch_fix(s);
  if (has_state && !ex.optimizer_state_off_chip && sc.hardware.streaming_memory.present)
    attempt({"optimizer state", "optimizer state in Streaming Memory (now on chip)",
             "--set execution.optimizer.stateLocation=streaming-memory"},
            [](Scenario& v) { v.execution.optimizer_state_off_chip = true; });
  if (has_state && !ex.optimizer_state_off_chip && ex.replicas > 1 && !ex.replicated_tensor_sharding)
    attempt({"replicated tensor sharding", "replicated tensor sharding over the " + std::to_string(ex.replicas) + " replicas",
             "--set execution.optimizer.replicatedTensorSharding=true"},
            [](Scenario& v) { v.execution.replicated_tensor_sharding = true; });
  if (s.mode == Mode::Phased) phased_fixes(ex, attempt);
  memory_proportion_fix(s);
  tensor_parallel_fix(s);
}

// The fixes that free bytes on the worst IPU, cheapest per byte freed first.
std::vector<std::size_t> cheapest_per_byte_first(const std::vector<MemoryFix>& fixes) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < fixes.size(); ++i)
    if (fixes[i].freed_bytes > 0) order.push_back(i);
  auto cost = [&](std::size_t i) {
    const double c = std::isfinite(fixes[i].step_change) ? std::max(fixes[i].step_change, 0.0) : 1.0;
    return c / fixes[i].freed_bytes;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost(a) < cost(b); });
  return order;
}

// No one setting enough: the settings together, cheapest per byte freed first, as many as it takes.
void combined_fix(FixSearch& s) {
  const std::vector<std::size_t> order = cheapest_per_byte_first(s.fixes);
  // The first prefix of that order that fits, then without each setting it can do without.
  std::vector<std::size_t> chosen;
  bool fit = false;
  for (std::size_t i : order) {
    chosen.push_back(i);
    if ((fit = s.fits_with(chosen, nullptr))) break;
  }
  if (!fit) return;
  for (std::size_t k = chosen.size(); k-- > 0;) {
    std::vector<std::size_t> fewer;
    for (std::size_t j = 0; j < chosen.size(); ++j)
      if (j != k) fewer.push_back(chosen[j]);
    if (!fewer.empty() && s.fits_with(fewer, nullptr)) chosen = fewer;
  }
  Verdict got;
  s.fits_with(chosen, &got);
  MemoryFix together{"together", "", "", true, 0, s.change_of(got)};
  for (std::size_t i : chosen) {
    together.change += (together.change.empty() ? "" : " and ") + s.fixes[i].change;
    together.how += (together.how.empty() ? "" : " ") + s.fixes[i].how;
  }
  s.set_freed_bytes(together, got);
  s.fixes.push_back(together);
}

// The planner's best split over `ipus` IPUs as a fix; false when it finds none.
bool resplit(FixSearch& s, int ipus, bool stem_alone, const std::string& setting, const std::string& change) {
  const Scenario& sc = s.sc;
  PlanSpace space = scenario_space(sc, ipus, static_cast<int>(sc.execution.replicas));
  space.stem_alone = stem_alone;
  PlanSearchOptions options;
  options.top = 1;
  options.front_within = 0;
  PlanSearch found;
  try {
    found = search_plans(sc, space, options);
  } catch (const InputError&) {
    return false;
  }
  if (found.ranked.empty()) return false;
  const Candidate& c = found.ranked.front();
  MemoryFix fix{setting, change + ": " + c.placement(),
                "ipusim plan " + sc.file + " --ipus " + std::to_string(ipus) + " --write PREFIX", true,
                c.least_headroom - (static_cast<double>(sc.hardware.ipu.sram_bytes_per_tile) - s.worst_tile),
                std::isfinite(s.base.step) ? c.estimate.step_seconds / s.base.step - 1 : std::numeric_limits<double>::quiet_NaN()};
  s.fixes.push_back(fix);
  return true;
}

// Re-splits, by the planner with every other setting as the scenario has it, over whole IPUs
// (a tensor-parallel scenario's groups are `plan --tensor-parallel`'s, a search too long for advice).
void resplit_fixes(FixSearch& s) {
  const Scenario& sc = s.sc;
  const Execution& ex = sc.execution;
  const LayerStructure layers = detect_layers(sc.model);
  const bool annotated = !sc.model.ops.empty() && sc.model.ops.front().virtual_graph.has_value();
  const bool searchable = s.mode == Mode::Pipelined && annotated && !layers.by_ops && has_evaluator(ex.schedule) &&
                          ex.tensor_parallel <= 1;
  if (!searchable) return;
  const std::int64_t width = sc.model.virtual_ipu_count();
  bool ipu0_has_layer = false;
  for (std::size_t i = 0; i < sc.model.ops.size(); ++i) {
    const int u = layers.unit_of_op[i];
    if (u >= 0 && u < static_cast<int>(layers.names.size()) && sc.model.ops[i].virtual_graph.value_or(0) == 0)
      ipu0_has_layer = true;
  }
  if (ipu0_has_layer && layers.unit_of_op.front() < 0 && width >= 2)
    resplit(s, static_cast<int>(width), true, "embedding alone", "the embedding alone on IPU 0, the layers re-split");
  for (std::int64_t w = width + 1; w * ex.replicas <= sc.hardware.ipu_count; ++w)
    if (resplit(s, static_cast<int>(w), false, "IPUs per pipeline",
                std::to_string(w) + " IPUs per pipeline (now " + std::to_string(width) + ")"))
      break;
}

// Fixes that fit first, least slow-down first; then the others, most bytes freed first.
void rank_fixes(std::vector<MemoryFix>& fixes) {
  std::stable_sort(fixes.begin(), fixes.end(), [](const MemoryFix& a, const MemoryFix& b) {
    if (a.fits != b.fits) return a.fits;
    if (a.fits) {
      const double x = std::isfinite(a.step_change) ? a.step_change : 1e9, y = std::isfinite(b.step_change) ? b.step_change : 1e9;
      return x < y;
    }
    return a.freed_bytes > b.freed_bytes;
  });
}
} // namespace

std::vector<MemoryFix> memory_fixes(const Scenario& sc, Mode mode) {
  Verdict base;
  try {
    base = judge(sc, mode);
  } catch (const InputError&) {
    return {};
  }
  if (base.memory.fits) return {};
  FixSearch search(sc, mode, base);
  single_setting_fixes(search);
  const bool one_fits =
      std::any_of(search.fixes.begin(), search.fixes.end(), [](const MemoryFix& f) { return f.fits; });
  if (!one_fits && search.fixes.size() > 1) combined_fix(search);
  resplit_fixes(search);
  rank_fixes(search.fixes);
  return search.fixes;
}

} // namespace ipusim
