#include "sim/search/space.hpp"

#include <algorithm>
#include <set>

#include "sim/cost/op_work.hpp"
#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/evaluator.hpp"

namespace ipusim {

namespace {

bool fixed(const PlanRequest& r, const std::string& field) {
  return std::find(r.fixed_fields.begin(), r.fixed_fields.end(), field) != r.fixed_fields.end();
}

InputError bad(const std::string& option, const std::string& rule, const std::string& message) {
  return InputError(option, "", rule, message);
}

template <typename T>
std::string join(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) {
    std::string s;
    if constexpr (std::is_same_v<T, std::string>) s = v;
    else if constexpr (std::is_same_v<T, bool>) s = v ? "on" : "off";
    else if constexpr (std::is_floating_point_v<T>) {
      s = std::to_string(v);
      s.erase(s.find_last_not_of('0') + 1);
      if (!s.empty() && s.back() == '.') s.pop_back();
    } else s = std::to_string(v);
    out += (out.empty() ? "" : ",") + s;
  }
  return out;
}

// One of `allowed` for each word, in the order given.
std::vector<bool> switches(const std::vector<std::string>& words, const std::string& off, const std::string& on,
                           const std::string& option) {
  std::vector<bool> out;
  for (const auto& w : words) {
    if (w != off && w != on) throw bad(option, "plan.bad-value", option + " takes " + off + " or " + on + ", got \"" + w + "\"");
    if (std::find(out.begin(), out.end(), w == on) == out.end()) out.push_back(w == on);
  }
  return out;
}

// The replicas asked for: listed, or the scenario's own when --set fixed them.
std::vector<int> requested_replicas(const Scenario& sc, const PlanRequest& r) {
  if (r.replicas.empty() && fixed(r, "execution.replicas")) return {static_cast<int>(sc.execution.replicas)};
  return r.replicas;
}

// IPUs x replicas pairs the request names, or every divisor of the system's IPUs, checked against the system.
std::set<std::pair<int, int>> requested_shapes(const Scenario& sc, const PlanRequest& r,
                                               const std::vector<int>& replicas, int system) {
  for (int w : r.ipus)
    if (w < 2 || w > system)
      throw bad("--ipus", "plan.ipus", "a pipeline takes 2 to " + std::to_string(system) + " IPUs of \"" +
                                           sc.hardware.name + "\"; asked for " + std::to_string(w));
  for (int rep : replicas)
    if (rep % sc.execution.distributed_batch_norm_replicas != 0)
      throw bad("--replicas", "plan.replicas",
                std::to_string(rep) + " replica(s) cannot hold groups of execution.distributedBatchNormReplicaGroupSize " +
                    std::to_string(sc.execution.distributed_batch_norm_replicas) +
                    " replicas sharing batch-norm statistics; ask for a multiple of it");
  for (int rep : replicas)
    if (rep < 1 || 2 * rep > system)
      throw bad("--replicas", "plan.replicas", std::to_string(rep) + " replica(s) of a pipeline of 2 IPUs or more do not fit \"" +
                                                   sc.hardware.name + "\" (" + std::to_string(system) + " IPUs)");
  std::set<std::pair<int, int>> shapes;
  if (!r.ipus.empty() && !replicas.empty()) {
    for (int w : r.ipus)
      for (int rep : replicas) {
        if (w * rep > system)
          throw bad("--replicas", "plan.replicas", std::to_string(rep) + " replicas of a " + std::to_string(w) +
                                                       "-IPU pipeline need " + std::to_string(w * rep) + " IPUs; \"" +
                                                       sc.hardware.name + "\" has " + std::to_string(system));
        shapes.emplace(w, rep);
      }
  } else if (!r.ipus.empty()) {
    for (int w : r.ipus) shapes.emplace(w, system / w);
  } else if (!replicas.empty()) {
    for (int rep : replicas) shapes.emplace(system / rep, rep);
  } else {
    for (int w = 2; w <= system; ++w)
      if (system % w == 0) shapes.emplace(w, system / w);
  }
  return shapes;
}

// The requested shapes no wider than the layers can be split over.
std::vector<PipelineShape> pipeline_shapes(const Scenario& sc, const PlanRequest& r, int layers) {
  // With tensor parallelism the pipeline's IPUs are groups of tensorParallel IPUs.
  const int system =
      static_cast<int>(sc.hardware.ipu_count / std::max<std::int64_t>(1, sc.execution.tensor_parallel));
  // A pipeline needs 2 IPUs; IPU 0 and the last may hold no layer, the others at least one.
  const int widest = layers + (r.layer_free_ipus ? 2 : 0);
  std::vector<PipelineShape> out;
  for (auto [w, rep] : requested_shapes(sc, r, requested_replicas(sc, r), system)) {
    if (rep % sc.execution.distributed_batch_norm_replicas != 0) continue;  // its groups of replicas must fit
    if (w > widest) {
      if (!r.ipus.empty())
        throw bad("--ipus", "plan.ipus", "the planner splits " + std::to_string(layers) + " layers over at most " +
                                             std::to_string(widest) + " IPUs; asked for " + std::to_string(w));
      continue;
    }
    out.push_back({w, rep});
  }
  if (out.empty())
    throw bad("--ipus", "plan.ipus", "no pipeline of 2 to " + std::to_string(widest) + " IPUs fits \"" + sc.hardware.name +
                                         "\" (" + std::to_string(system) + " IPUs) with the replicas asked for");
  return out;
}

// Listed, the scenario's when fixed, else the powers of two to 64 and the scenario's own.
std::vector<std::int64_t> micro_batches_to_search(const Execution& ex, const PlanRequest& r) {
  std::vector<std::int64_t> out = r.micro_batches;
  if (out.empty() && fixed(r, "execution.microBatchSize")) out = {ex.micro_batch_size};
  if (out.empty()) {
    for (std::int64_t mb = 1; mb <= 64; mb *= 2) out.push_back(mb);
    if (std::find(out.begin(), out.end(), ex.micro_batch_size) == out.end()) out.push_back(ex.micro_batch_size);
    std::sort(out.begin(), out.end());
  }
  for (auto mb : out)
    if (mb < 1) throw bad("--micro-batch", "plan.bad-value", "a micro-batch holds at least one sample");
  return out;
}

// The depth: fixed by a global batch (the scenario's unless asked otherwise), listed, or every
// power of two within the batch bounds. A fixed global batch must be divisible by some shape.
void set_depths(const Execution& ex, const PlanRequest& r, PlanSpace& s) {
  const std::int64_t depth = ex.training ? ex.gradient_accumulation : ex.batches_per_step;
  if (r.global_batch) {
    s.global_batch = *r.global_batch;
  } else if (r.global_batch_range) {
    std::tie(s.min_global_batch, s.max_global_batch) = *r.global_batch_range;
    for (std::int64_t d = 1; d <= (std::int64_t{1} << 20); d *= 2) s.depths.push_back(d);
  } else if (!r.gradient_accumulation.empty()) {
    s.depths = r.gradient_accumulation;
  } else if (fixed(r, ex.training ? "execution.gradientAccumulation" : "execution.batchesPerStep")) {
    s.depths = {depth};
  } else {
    s.global_batch = ex.micro_batch_size * depth * ex.replicas;
  }
  if (!s.global_batch) return;
  bool divisible = false;
  for (const auto& shape : s.shapes)
    for (auto mb : s.micro_batches) divisible = divisible || !s.depths_for(mb, shape.replicas).empty();
  if (!divisible)
    throw bad("--global-batch", "plan.global-batch",
              "no micro-batch (" + join(s.micro_batches) + ") x replicas divides the global batch " +
                  std::to_string(*s.global_batch));
}

// The schedules with an evaluator (their registry entries' StepModel), as a sentence: "a, b and c".
std::string evaluated_schedules_sentence() {
  const std::vector<std::string>& names = evaluated_schedules();
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// Listed, the scenario's when fixed, else every evaluated schedule, the what-if ones apart.
void set_schedules(const Execution& ex, const PlanRequest& r, PlanSpace& s) {
  s.schedules = r.schedules;
  if (s.schedules.empty() && fixed(r, "execution.schedule")) s.schedules = {ex.schedule};
  if (s.schedules.empty())
    for (const std::string& name : evaluated_schedules())
      (is_what_if_schedule(name) ? s.what_if_schedules : s.schedules).push_back(name);
  for (const auto& name : s.schedules)
    if (!has_evaluator(name))
      throw bad("--schedule", "plan.schedule",
                "the planner evaluates " + evaluated_schedules_sentence() + "; not \"" + name + "\"");
}

// Recomputation, optimizer state off chip and replicated tensor sharding: listed, the
// scenario's when fixed or when the choice cannot matter, else both.
void set_memory_switches(const Scenario& sc, const PlanRequest& r, PlanSpace& s) {
  const Execution& ex = sc.execution;
  const bool has_state = ex.training && optimizer_state_tensors(ex.optimizer) > 0;
  if (!r.recomputation.empty()) s.recomputation = switches(r.recomputation, "none", "pipeline", "--recomputation");
  else if (fixed(r, "execution.recomputation") || !ex.training) s.recomputation = {ex.recomputation == Recomputation::Pipeline};
  else s.recomputation = {false, true};
  if (!r.state_location.empty()) s.state_off_chip = switches(r.state_location, "on-chip", "streaming-memory", "--state");
  else if (fixed(r, "execution.optimizer.stateLocation") || !has_state || !sc.hardware.streaming_memory.present)
    s.state_off_chip = {ex.optimizer_state_off_chip};
  else s.state_off_chip = {false, true};
  if (std::find(s.state_off_chip.begin(), s.state_off_chip.end(), true) != s.state_off_chip.end() && has_state &&
      !sc.hardware.streaming_memory.present)
    throw bad("--state", "plan.state", "optimizer state in Streaming Memory, but \"" + sc.hardware.name +
                                           "\" has no \"streamingMemory\"");
  if (!r.rts.empty()) s.rts = switches(r.rts, "off", "on", "--rts");
  else if (fixed(r, "execution.optimizer.replicatedTensorSharding") || !has_state) s.rts = {ex.replicated_tensor_sharding};
  else s.rts = {false, true};
}

// Listed, the scenario's when fixed or inference, else all three.
std::vector<WeightUpdateSchedule> weight_updates_to_search(const Execution& ex, const PlanRequest& r) {
  std::vector<WeightUpdateSchedule> out;
  for (const auto& name : r.weight_update) {
    if (name == "Serial") out.push_back(WeightUpdateSchedule::Serial);
    else if (name == "OverlapCycleOptimized") out.push_back(WeightUpdateSchedule::OverlapCycleOptimized);
    else if (name == "OverlapMemoryOptimized") out.push_back(WeightUpdateSchedule::OverlapMemoryOptimized);
    else throw bad("--weight-update", "plan.bad-value", "--weight-update takes Serial, OverlapCycleOptimized or "
                                                        "OverlapMemoryOptimized, got \"" + name + "\"");
  }
  if (!out.empty()) return out;
  if (!ex.training || fixed(r, "execution.accumulateOuterFragmentSettings.schedule"))
    return {ex.weight_update_schedule};
  return {WeightUpdateSchedule::Serial, WeightUpdateSchedule::OverlapCycleOptimized,
          WeightUpdateSchedule::OverlapMemoryOptimized};
}

void sort_unique(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

// availableMemoryProportion: fixed by --set (one value per IPU keeps only pipelines that wide),
// or the values each IPU chooses from.
void set_amps(const Execution& ex, const PlanRequest& r, PlanSpace& s) {
  if (fixed(r, "execution.availableMemoryProportion")) {
    s.fixed_amps = ex.available_memory_proportion;
    s.amps = s.fixed_amps;
    sort_unique(s.amps);
    if (s.fixed_amps.size() > 1) {
      const std::size_t n = s.fixed_amps.size();
      s.shapes.erase(std::remove_if(s.shapes.begin(), s.shapes.end(),
                                    [&](const PipelineShape& p) { return static_cast<std::size_t>(p.ipus) != n; }),
                     s.shapes.end());
      if (s.shapes.empty())
        throw bad("--set", "plan.fixed-amp", "availableMemoryProportion is fixed to " + std::to_string(n) +
                                                 " values (one per IPU), but no pipeline of " + std::to_string(n) +
                                                 " IPUs is searched; fix one value, or --ipus " + std::to_string(n));
    }
    return;
  }
  s.amps = r.amps;
  if (s.amps.empty()) {
    s.amps = {0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6};
    for (double a : ex.available_memory_proportion) s.amps.push_back(a);
  }
  for (double a : s.amps)
    if (!(a > 0 && a <= 1)) throw bad("--amp", "plan.bad-value", "availableMemoryProportion lies in (0, 1]");
  sort_unique(s.amps);
}

} // namespace

std::string heads_name(bool heads_on_last) { return heads_on_last ? "last" : "0"; }

std::vector<std::int64_t> PlanSpace::depths_for(std::int64_t micro_batch, int replicas) const {
  if (global_batch) {
    const std::int64_t per_depth = micro_batch * replicas;
    if (*global_batch % per_depth != 0) return {};
    return {*global_batch / per_depth};
  }
  std::vector<std::int64_t> out;
  for (std::int64_t d : depths) {
    const double batch = static_cast<double>(micro_batch) * replicas * static_cast<double>(d);
    if (batch >= static_cast<double>(min_global_batch) && batch <= static_cast<double>(max_global_batch)) out.push_back(d);
  }
  return out;
}

std::size_t PlanSpace::size() const {
  return shapes.size() * micro_batches.size() * (global_batch ? 1 : depths.size()) * schedules.size() *
         recomputation.size() * state_off_chip.size() * rts.size() * heads_on_last.size() * weight_update.size();
}

PlanSpace make_plan_space(const Scenario& sc, const PlanRequest& r, int layers) {
  const Execution& ex = sc.execution;
  PlanSpace s;
  s.layer_free_ipus = r.layer_free_ipus;
  s.half_layers = r.half_layers;
  s.shapes = pipeline_shapes(sc, r, layers);
  s.batch_norm_group = ex.distributed_batch_norm_replicas;
  s.micro_batches = micro_batches_to_search(ex, r);
  set_depths(ex, r, s);
  set_schedules(ex, r, s);
  set_memory_switches(sc, r, s);
  s.weight_update = weight_updates_to_search(ex, r);
  if (!r.heads_on.empty()) s.heads_on_last = switches(r.heads_on, "0", "last", "--heads-on");
  else s.heads_on_last = {false, true};
  set_amps(ex, r, s);
  return s;
}

PlanSpace scenario_space(const Scenario& sc, int ipus, int replicas) {
  const Execution& ex = sc.execution;
  PlanSpace s;
  s.shapes = {{ipus, replicas}};
  s.micro_batches = {ex.micro_batch_size};
  s.depths = {ex.training ? ex.gradient_accumulation : ex.batches_per_step};
  s.schedules = {ex.schedule};
  s.recomputation = {ex.recomputation == Recomputation::Pipeline};
  s.state_off_chip = {ex.optimizer_state_off_chip};
  s.rts = {ex.replicated_tensor_sharding};
  s.weight_update = {ex.weight_update_schedule};
  s.heads_on_last = {false, true};
  s.amps = ex.available_memory_proportion;
  std::sort(s.amps.begin(), s.amps.end());
  s.amps.erase(std::unique(s.amps.begin(), s.amps.end()), s.amps.end());
  const auto n = ex.available_memory_proportion.size();
  if (n == 1 || static_cast<int>(n) == ipus) s.fixed_amps = ex.available_memory_proportion;
  return s;
}

std::string describe_space(const PlanSpace& s) {
  std::string shapes;
  for (const auto& p : s.shapes) shapes += (shapes.empty() ? "" : ",") + std::to_string(p.ipus) + "x" + std::to_string(p.replicas);
  std::vector<std::string> wu;
  for (auto w : s.weight_update) wu.push_back(weight_update_schedule_name(w));
  std::vector<std::string> heads;
  for (bool h : s.heads_on_last) heads.push_back(heads_name(h));
  std::string out = "IPUs x replicas " + shapes +
                    (s.batch_norm_group > 1 ? " (replicas a multiple of the batch-norm group, " +
                                                  std::to_string(s.batch_norm_group) + ")"
                                            : "") +
                    "; micro-batch " + join(s.micro_batches) + "; ";
  if (s.global_batch) out += "global batch " + std::to_string(*s.global_batch);
  else if (s.min_global_batch > 1 || s.max_global_batch < std::numeric_limits<std::int64_t>::max())
    out += "G every power of two within global batch " + std::to_string(s.min_global_batch) + "-" +
           std::to_string(s.max_global_batch);
  else out += "G " + join(s.depths);
  out += "; schedules " + join(s.schedules) +
         (s.what_if_schedules.empty() ? "" : " (what-if, ranked apart: " + join(s.what_if_schedules) + ")") + "; recomputation " + join(s.recomputation) + "; state off chip " +
         join(s.state_off_chip) + "; RTS " + join(s.rts) + "; weight update " + join(wu) + "; heads on IPU " +
         join(heads) + "; availableMemoryProportion " + (s.fixed_amps.empty() ? join(s.amps) + " per IPU" : join(s.fixed_amps)) +
         (s.layer_free_ipus ? "; IPU 0 may hold only the stem, the last only the heads" : "") +
         (s.half_layers ? "; a block may end between a layer's attention and feed-forward halves" : "");
  return out;
}

} // namespace ipusim
