#include "sim/plan/plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <variant>

#include "sim/cost/cost_model.hpp"
#include "sim/io/aliases.hpp"
#include "sim/io/input_error.hpp"
#include "sim/plan/op_pass_cost.hpp"

namespace ipusim {

// What an op's gradient needs from its forward: views, sums and casts need nothing;
// softmax and saturating activations their output; everything else its inputs.
BackwardReads backward_reads(const std::string& type) {
  static const std::set<std::string> nothing{"Add", "Sub", "Neg", "Reshape", "Transpose", "Flatten", "Identity",
                                             "Cast", "Scale", "Concat", "Slice", "ReduceSum", "ReduceMean"};
  static const std::set<std::string> outputs{"Softmax", "Sigmoid", "Tanh", "Exp", "Sqrt"};
  if (nothing.count(type)) return BackwardReads::Nothing;
  if (outputs.count(type)) return BackwardReads::Outputs;
  return BackwardReads::Inputs;
}

CostOptions cost_options(const Scenario& sc, int ipu) {
  return cost_options(sc.execution, sc.execution.available_memory_proportion_of(ipu));
}

CostOptions cost_options(const Execution& ex, double available_memory_proportion) {
  CostOptions o;
  o.partials = ex.partials_type;
  o.available_memory_proportion = available_memory_proportion;
  o.io_tiles = static_cast<int>(ex.io_tiles);
  return o;
}

std::pair<double, double> weight_update_cost(const Scenario& sc, const CostModel& cost, double elements, double bytes,
                                             DType dtype, double tensors) {
  return weight_update_cost(sc.execution, cost, elements, bytes, dtype, tensors);
}

std::pair<double, double> weight_update_cost(const Execution& ex, const CostModel& cost, double elements, double bytes,
                                             DType dtype, double tensors) {
  const double state_bytes_per_weight =
      optimizer_state_tensors(ex.optimizer) * static_cast<double>(dtype_bytes(ex.optimizer_state_dtype));
  const bool streamed = ex.training && ex.optimizer_state_off_chip && state_bytes_per_weight > 0;
  // With replicated tensor sharding each replica updates its 1/replicas share of the state.
  const double shards =
      ex.replicated_tensor_sharding ? static_cast<double>(std::max<std::int64_t>(1, ex.replicas)) : 1.0;
  OpWork update = weight_update_work(elements / shards, bytes / shards, dtype, ex.optimizer, ex.optimizer_state_dtype,
                                     tensors);
  update.accumulates_weight_gradients = ex.gradient_accumulation > 1;
  return {cost.seconds(update), streamed ? elements / shards * state_bytes_per_weight : 0.0};
}

void lay_out_stages(Plan& plan, const std::vector<int>& ipu_of_forward_stage, bool training) {
  const int P = static_cast<int>(ipu_of_forward_stage.size());
  plan.forward_stage_count = P;
  plan.loss_stage = P - 1;
  const int L = plan.loss_stage;
  const int S = training ? 2 * P - 1 : P;
  plan.stages.resize(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) {
    PlanStage& st = plan.stages[s];
    st.id = s;
    st.backward = s > L;
    st.forward_stage = st.backward ? 2 * L - s : s;
    st.ipu = ipu_of_forward_stage[static_cast<std::size_t>(st.forward_stage)];
  }
}

bool is_checkpoint(const Op& op) {
  // PopART's RecomputeType, as builder.checkpointOutput sets it: 1 = Checkpoint.
  const auto it = op.attributes.find("__recompute_output_in_backward_pass");
  if (it == op.attributes.end()) return false;
  const auto* type = std::get_if<std::int64_t>(&it->second);
  return type && *type == 1;
}

namespace {

void check_ipus_exist(const Scenario& sc, const ModelGraph& g) {
  const Model& m = sc.model;
  for (const Op& op : m.ops)
    if (g.ipu_of_op[op.index] >= sc.hardware.ipu_count)
      throw InputError(m.file, m.op_pointer(op) + "/virtualGraph", "annotation.virtual-graph-out-of-range",
                       "op \"" + op.name + "\" is on virtualGraph " + std::to_string(g.ipu_of_op[op.index]) +
                           " but the system \"" + sc.hardware.name + "\" has " +
                           std::to_string(sc.hardware.ipu_count) + " IPUs");
}

// A weight lives on one IPU; ipusim does not model copying weights between IPUs.
void check_weights_local(const Model& m, const ModelGraph& g) {
  for (const auto& [name, users] : g.consumers) {
    if (m.tensor(name).kind != TensorKind::Weight) continue;
    for (auto u : users)
      if (g.ipu_of_op[u] != g.ipu_of_op[users.front()])
        throw InputError(m.file, m.op_pointer(m.ops[u]), "annotation.weight-on-several-ipus",
                         "weight \"" + name + "\" is used by \"" + m.ops[users.front()].name + "\" on IPU " +
                             std::to_string(g.ipu_of_op[users.front()]) + " and by \"" + m.ops[u].name +
                             "\" on IPU " + std::to_string(g.ipu_of_op[u]) +
                             "; a weight lives on one IPU (BERT puts both users of its embedding on IPU0)");
  }
}

// Forward stage of each op: the ops in execution order, cut wherever the IPU changes
// (so consecutive annotated stages on one IPU merge into one). Phased, the ops run phase by
// phase (a stable sort of the execution order) and each phase is its own stage.
std::vector<int> split_stages(const Model& m, const ModelGraph& g, std::vector<int>& ipu_of_stage, bool keep_annotated,
                              bool phased) {
  std::vector<int> stage_of(g.ipu_of_op.size());
  std::vector<std::size_t> order = g.execution_order;
  if (phased)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return *m.ops[a].execution_phase < *m.ops[b].execution_phase; });
  int annotated = -1;
  std::int64_t phase = -1;
  for (std::size_t op : order) {
    const bool new_stage = ipu_of_stage.empty() || ipu_of_stage.back() != g.ipu_of_op[op] ||
                           (keep_annotated && g.stage_of_op[op] != annotated) ||
                           (phased && *m.ops[op].execution_phase != phase);
    if (new_stage) ipu_of_stage.push_back(g.ipu_of_op[op]);
    annotated = g.stage_of_op[op];
    if (phased) phase = *m.ops[op].execution_phase;
    stage_of[op] = static_cast<int>(ipu_of_stage.size()) - 1;
  }
  return stage_of;
}

bool runs_phased(const std::vector<Mode>& modes) {
  return std::find(modes.begin(), modes.end(), Mode::Phased) != modes.end();
}

// What the phased mode needs from the model and the scenario, before it plans: phases on every
// op that keep PopART's rules (model_graph.cpp), placed as executionPhaseSettings.stages asks
// (StreamingMemoryOpInserter::verifyPlacementConsistency), and the mode on its own.
void check_phased(const Scenario& sc, const ModelGraph& g, const std::vector<Mode>& modes) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  if (modes.size() > 1)
    throw InputError(sc.file, sc.execution_pointer("mode"), "scenario.phased-alone",
                     "the phased mode plans the model phase by phase and runs on its own: run it with --mode phased "
                     "and the others with --mode both, then `ipusim compare` the two run documents");
  if (const auto& refused = g.phasing_refused) throw *refused;
  if (g.phase_count == 0)
    throw InputError(m.file, "/ops", "phased.needs-phases",
                     "the phased mode runs the model's execution phases, and no op carries executionPhase (ONNX "
                     "__execution_phase); annotate them (scripts/make_gpt_model.py --phased, or by hand)");
  const int stages = ex.phases.stages;
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    const std::int64_t phase = *m.ops[i].execution_phase;
    const int ipu = g.ipu_of_op[i];
    if (phase % stages != ipu % stages)
      throw InputError(m.file, "/ops/" + std::to_string(i) + "/executionPhase", "annotation.phase-placement",
                       "\"" + m.ops[i].name + "\" runs in executionPhase " + std::to_string(phase) +
                           " on virtualGraph " + std::to_string(ipu) + ", but with executionPhaseSettings.stages " +
                           std::to_string(stages) + " PopART needs executionPhase % stages == virtualGraph % stages "
                           "(StreamingMemoryOpInserter::verifyPlacementConsistency): " +
                           (stages == 2 ? "even phases on even IPUs, odd phases on odd IPUs; or set "
                                          "execution.executionPhaseSettings.stages to 1"
                                        : "fix the annotation"));
  }
}

// Only a pipelined run of a model with valid stage annotations keeps them (AnnotatedStages).
bool keeps_annotated_stages(const ModelGraph& g, const std::vector<Mode>& modes, AnnotatedStages stages) {
  const bool pipelined = std::find(modes.begin(), modes.end(), Mode::Pipelined) != modes.end();
  return pipelined && g.has_pipeline_stages && !g.pipelining_refused && stages == AnnotatedStages::Kept;
}

// Per forward stage: the per-sample tensors its backward needs (stashed), those
// entering from another stage or the host, and the peak of live activations in op order.
void describe_activations(const Model& m, const ModelGraph& g, const std::vector<int>& stage_of,
                          std::int64_t micro_batch_size, Plan& plan) {
  for (int s = 0; s < plan.forward_stage_count; ++s) {
    PlanStage& st = plan.stages[s];
    std::set<std::string> read, entering;
    for (std::size_t op : st.ops) {
      for (const auto& t : m.ops[op].inputs) {
        if (m.tensor(t).kind == TensorKind::Weight) continue;
        auto p = g.producer.find(t);
        if (p == g.producer.end() || stage_of[p->second] != s) entering.insert(t);
        if (backward_reads(m.ops[op].type) == BackwardReads::Inputs) read.insert(t);
      }
      if (backward_reads(m.ops[op].type) == BackwardReads::Outputs)
        for (const auto& t : m.ops[op].outputs) read.insert(t);
    }
    auto bytes = [&](const std::string& t) { return m.tensor(t).bytes_per_micro_batch(micro_batch_size); };
    st.stash_tensors.assign(read.begin(), read.end());
    for (const auto& t : entering) {
      st.boundary_tensors.push_back(t);
      st.boundary_bytes += bytes(t);
    }
    // Under recomputation PopART checkpoints every op whose output is copied to another
    // IPU (setRecomputation in transforms/pipeline.cpp): such an output that the backward
    // reads is stashed with the entering tensors, not recomputed.
    std::set<std::string> recompute_stash = entering;
    // The user's checkpoints (builder.checkpointOutput: RecomputeType Checkpoint) are stashed
    // rather than recomputed when the stage reads them again (getStashCandidateTensors).
    for (std::size_t op : st.ops)
      if (is_checkpoint(m.ops[op]))
        for (const auto& t : m.ops[op].outputs) {
          bool read_here = false;
          for (auto u : g.consumers.count(t) ? g.consumers.at(t) : std::vector<std::size_t>{})
            read_here = read_here || stage_of[u] == s;
          if (read_here) recompute_stash.insert(t);
        }
    for (const auto& t : read) {
      auto p = g.producer.find(t);
      if (p == g.producer.end() || stage_of[p->second] != s || !g.consumers.count(t)) continue;
      for (auto u : g.consumers.at(t))
        if (plan.stages[stage_of[u]].ipu != st.ipu) recompute_stash.insert(t);
    }
    st.recompute_stash_tensors.assign(recompute_stash.begin(), recompute_stash.end());
    // Liveness: entering tensors live through the stage; a tensor produced here lives
    // until its last reader here, or to the end when a later stage or the host needs it.
    std::map<std::string, std::size_t> last_use;
    for (std::size_t i = 0; i < st.ops.size(); ++i)
      for (const auto& t : m.ops[st.ops[i]].inputs) last_use[t] = i;
    double live = st.boundary_bytes, peak = live;
    std::vector<std::vector<std::string>> dies(st.ops.size());
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
      for (const auto& t : m.ops[st.ops[i]].outputs) {
        live += bytes(t);
        bool leaves = false;
        for (auto u : g.consumers.count(t) ? g.consumers.at(t) : std::vector<std::size_t>{})
          leaves = leaves || stage_of[u] != s;
        leaves = leaves || !g.consumers.count(t);
        auto lu = last_use.find(t);
        if (!leaves && lu != last_use.end()) dies[lu->second].push_back(t);
      }
      peak = std::max(peak, live);
      for (const auto& t : dies[i]) live -= bytes(t);
    }
    st.live_bytes = peak;
  }
}

// What to change when `replicas` x `width` x `t` IPUs exceed the system's `ipus`: the largest
// tensorParallel (or replica count) that fits with the rest as given, else a larger system.
std::string what_fits(int ipus, int width, int replicas, std::int64_t t) {
  const std::string larger = "a larger system (configs/ has Pod16 to Pod256)";
  const std::string fewer = replicas > 1 ? ", fewer replicas," : "";
  if (t > 1) {
    const int widest = ipus / (width * replicas);
    if (widest > 1) return "give tensorParallel " + std::to_string(widest) + " or less" + fewer + " or choose " + larger;
    if (widest == 1) return "drop tensorParallel (1)" + fewer + " or choose " + larger;
    return (replicas > 1 ? "give fewer replicas, or choose " : "choose ") + larger;
  }
  const int most = ipus / width;
  if (most >= 1) return "give replicas " + std::to_string(most) + " or less, or choose " + larger;
  return "the pipeline alone needs " + std::to_string(width) + ": choose " + larger;
}

// Refuses replicas of a `width`-IPU pipeline that need more IPUs than the system has, or a
// placement of the wrong length.
void check_enough_ipus(const Scenario& sc, int width) {
  const Execution& ex = sc.execution;
  const std::int64_t t = std::max<std::int64_t>(1, ex.tensor_parallel);
  if (width <= 0) return;
  const std::string pipeline = std::to_string(width) + "-IPU pipeline" +
                               (t > 1 ? " sharded over " + std::to_string(t) + " IPUs per virtual IPU" : "");
  // A count whose IPU total overflows an int would be truncated below; no system has that many IPUs.
  if (ex.replicas > INT32_MAX / width / t)
    throw InputError(sc.file, sc.execution_pointer(ex.placement.empty() ? "replicas" : "placement"),
                     ex.placement.empty() ? "scenario.not-enough-ipus" : "scenario.bad-placement",
                     std::to_string(ex.replicas) + " replica(s) of a " + pipeline + " need more IPUs than \"" +
                         sc.hardware.name + "\" has (" + std::to_string(sc.hardware.ipu_count) + ")");
  const int replicas = static_cast<int>(ex.replicas);
  const int needed = replicas * width;
  if (!ex.placement.empty() && static_cast<int>(ex.placement.size()) != needed)
    throw InputError(sc.file, sc.execution_pointer("placement"), "scenario.bad-placement",
                     "placement lists " + std::to_string(ex.placement.size()) + " IPUs; " + std::to_string(replicas) +
                         " replica(s) of a " + pipeline + " need " + std::to_string(needed) + " (entry r*" +
                         std::to_string(width) + "+v is the " + (t > 1 ? "first IPU of the group" : "IPU") +
                         " of virtual IPU v in replica r)");
  if (ex.placement.empty() && needed * t > sc.hardware.ipu_count)
    throw InputError(sc.file, sc.execution_pointer(t > 1 ? "tensorParallel" : "replicas"), "scenario.not-enough-ipus",
                     std::to_string(replicas) + " replica(s) of a " + pipeline + " need " +
                         std::to_string(needed * t) + " IPUs; \"" + sc.hardware.name + "\" has " +
                         std::to_string(sc.hardware.ipu_count) + ": " + what_fits(sc.hardware.ipu_count, width, replicas, t));
}

} // namespace

// With tensor parallelism each entry is a group of t consecutive IPUs, the first standing for
// the group (its IPUs run the same shard in lockstep): placement lists the groups' first IPUs.
std::vector<int> physical_ipus(const Scenario& sc, int width) {
  const Execution& ex = sc.execution;
  const std::int64_t t = std::max<std::int64_t>(1, ex.tensor_parallel);
  check_enough_ipus(sc, width);
  const int replicas = static_cast<int>(ex.replicas);
  const int needed = replicas * width;
  std::vector<int> physical;
  std::set<std::int64_t> used;
  for (int i = 0; i < needed; ++i) {
    // Range-checked as int64 before narrowing, so IPU 2^32 is not silently IPU 0.
    const std::int64_t wanted = ex.placement.empty() ? i * t : ex.placement[static_cast<std::size_t>(i)];
    for (std::int64_t k = 0; k < t; ++k) {
      const std::int64_t ipu = wanted + k;
      const bool exists = ipu >= 0 && ipu < sc.hardware.ipu_count;
      if (!exists || !used.insert(ipu).second)
        throw InputError(sc.file, sc.execution_pointer("placement/" + std::to_string(i)), "scenario.bad-placement",
                         "IPU " + std::to_string(ipu) +
                             (!exists ? " does not exist in \"" + sc.hardware.name + "\"" : " is placed twice") +
                             (t > 1 ? " (a tensor-parallel group holds IPUs " + std::to_string(wanted) + " to " +
                                          std::to_string(wanted + t - 1) + ")"
                                    : ""));
    }
    physical.push_back(static_cast<int>(wanted));
  }
  return physical;
}

namespace {

void check_execution_options(const Scenario& sc, const std::vector<int>& ipus_used) {
  const Execution& ex = sc.execution;
  if (ex.io_tiles >= sc.hardware.ipu.tiles)
    throw InputError(sc.file, sc.execution_pointer("numIOTiles"), "scenario.too-many-io-tiles",
                     "numIOTiles " + std::to_string(ex.io_tiles) + " leaves no tile to compute on (an IPU of \"" +
                         sc.hardware.name + "\" has " + std::to_string(sc.hardware.ipu.tiles) + ")");
  const int width = ipus_used.empty() ? 0 : ipus_used.back() + 1;
  // Before any cost: the tensor-parallel and batch-norm collectives are timed on the system's IPUs.
  physical_ipus(sc, width);
  const auto given = ex.available_memory_proportion.size();
  if (given > 1 && static_cast<int>(given) != width)
    throw InputError(sc.file, sc.execution_pointer("availableMemoryProportion"),
                     "scenario.bad-available-memory-proportion",
                     "availableMemoryProportion lists " + std::to_string(given) + " values; give one for every IPU, "
                     "or one per virtual IPU of the model (" + std::to_string(width) + ")");
  for (std::size_t i = 0; i < ex.weight_update_excluded_ipus.size(); ++i)
    if (ex.weight_update_excluded_ipus[i] >= width)
      throw InputError(sc.file, sc.execution_pointer("accumulateOuterFragmentSettings/excludedVirtualGraphs/" +
                                                     std::to_string(i)),
                       "scenario.bad-weight-update-schedule",
                       "virtual graph " + std::to_string(ex.weight_update_excluded_ipus[i]) +
                           " is not one of the model's (0.." + std::to_string(width - 1) + ")");
}

// For OverlapMemoryOptimized: the share of each IPU's weight elements whose shape also
// occurs on another IPU that is not excluded (PopART parallelises only identically shaped updates).
void mark_shared_updates(const Model& m, const std::vector<std::int64_t>& excluded, std::map<int, PlanIpu>& ipus) {
  auto is_excluded = [&](int id) { return std::find(excluded.begin(), excluded.end(), id) != excluded.end(); };
  std::map<std::vector<std::int64_t>, std::set<int>> owners;
  for (const auto& [id, ipu] : ipus)
    for (const auto& w : ipu.weights) owners[m.tensor(w).shape].insert(id);
  for (auto& [id, ipu] : ipus) {
    if (is_excluded(id) || ipu.weight_elements <= 0) continue;
    double shared = 0;
    for (const auto& w : ipu.weights) {
      bool elsewhere = false;
      for (int other : owners[m.tensor(w).shape]) elsewhere = elsewhere || (other != id && !is_excluded(other));
      if (elsewhere) shared += static_cast<double>(m.tensor(w).elements());
    }
    ipu.shared_update_fraction = shared / ipu.weight_elements;
  }
}


void check_cost_model(const Scenario& sc) {
  const Execution& ex = sc.execution;
  if (!make_cost_model(ex.cost_model, sc.hardware.ipu))
    throw InputError(sc.file, sc.execution_pointer("costModel"), "scenario.unknown-cost-model",
                     "unknown cost model \"" + ex.cost_model + "\"" + did_you_mean(ex.cost_model, [] {
                       std::vector<std::string> names;
                       for (const auto& info : cost_models()) names.push_back(info.name);
                       return names;
                     }()) + " (known: " + cost_model_names() + ")");
}

// One cost model per IPU, made on first use: each IPU has its own available memory proportion.
class IpuCostModels {
 public:
  explicit IpuCostModels(const Scenario& sc) : sc_(sc) {}
  const CostModel& operator()(int ipu) {
    auto& c = models_[ipu];
    if (!c) c = make_cost_model(sc_.execution.cost_model, sc_.hardware.ipu, cost_options(sc_, ipu));
    return *c;
  }

 private:
  const Scenario& sc_;
  std::map<int, std::unique_ptr<CostModel>> models_;
};

void check_batch_serialization(const Scenario& sc, const ModelGraph& g, const std::vector<Mode>& modes,
                               bool phased) {
  if (phased) check_phased(sc, g, modes);
  else if (sc.execution.phases.batch_serialization > 1)
    throw InputError(sc.file, sc.execution_pointer("batchSerializationSettings/factor"), "scenario.bad-batch-serialization",
                     "batch serialisation is modelled in the phased mode only (--mode phased); leave it out for "
                     "sharded and pipelined runs");
}

// The forward stage's op, its model stage and the weights it reads.
void place_op(Plan& plan, const Model& m, const ModelGraph& g, std::size_t op, int fs) {
  auto& annotated = plan.stages[fs].annotated_stages;
  if (std::find(annotated.begin(), annotated.end(), g.stage_of_op[op]) == annotated.end())
    annotated.push_back(g.stage_of_op[op]);
  plan.stages[fs].ops.push_back(op);
  for (const auto& t : m.ops[op].inputs) {
    auto& read = plan.stages[fs].weights_read;
    if (m.tensor(t).kind == TensorKind::Weight && std::find(read.begin(), read.end(), t) == read.end()) read.push_back(t);
  }
}

// An op's forward and (in training) backward cost, added to its stages; temp_bytes: the
// largest temporary memory per tile of the op's IPU so far.
void time_op(Plan& plan, const Scenario& sc, const TensorFacts& facts, IpuCostModels& cost, std::size_t op, int fs,
             int ipu, double& temp_bytes) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  const double clock = plan.clock_hz;
  const int L = plan.loss_stage;
  OpWork forward = forward_work(m, m.ops[op], ex.micro_batch_size, facts);
  forward.training = ex.training;
  const OpCommunication communication = op_communication(sc.hardware, m, m.ops[op], ex, ex.micro_batch_size);
  const bool collective = communication.replaces_compute;
  const OpCost fc = op_pass_cost(communication, cost(ipu), forward, false);
  plan.op_timings[op].forward = fc;
  plan.stages[fs].forward_seconds += fc.cycles() / clock;
  if (collective) plan.stages[fs].tensor_parallel_seconds += fc.cycles() / clock;
  temp_bytes = std::max(temp_bytes, fc.temp_bytes_per_tile);
  if (!ex.training) return;
  OpWork backward = backward_work(m, m.ops[op], ex.micro_batch_size, facts);
  backward.training = true;
  backward.accumulates_weight_gradients = ex.gradient_accumulation > 1;
  const OpCost bc = op_pass_cost(communication, cost(ipu), backward, true);
  plan.op_timings[op].backward = bc;
  plan.stages[2 * L - fs].backward_seconds += bc.cycles() / clock;
  if (collective) plan.stages[2 * L - fs].tensor_parallel_seconds += bc.cycles() / clock;
  plan.stages[2 * L - fs].weight_gradient_seconds += bc.weight_gradient_cycles / clock;
  temp_bytes = std::max(temp_bytes, bc.temp_bytes_per_tile);
  if (fs != L) plan.stages[2 * L - fs].ops.push_back(op);
}

// Ops and their times; in topological order within a stage. Returns the largest
// temporary memory per tile of each IPU.
std::map<int, double> place_and_time_ops(Plan& plan, const Scenario& sc, const ModelGraph& g,
                                         const std::vector<int>& stage_of, const std::vector<int>& merged_ipu,
                                         IpuCostModels& cost) {
  const TensorFacts facts = tensor_facts(sc.model);
  std::map<int, double> temp_of_ipu;
  for (std::size_t op : g.topological_order) {
    const int fs = stage_of[op];
    const int ipu = merged_ipu[fs];
    place_op(plan, sc.model, g, op, fs);
    time_op(plan, sc, facts, cost, op, fs, ipu, temp_of_ipu[ipu]);
  }
  const int P = static_cast<int>(merged_ipu.size());
  for (int s = plan.loss_stage + 1; s < plan.stage_count(); ++s)
    std::reverse(plan.stages[s].ops.begin(), plan.stages[s].ops.end());
  for (int s = 0; s < P; ++s) std::sort(plan.stages[s].annotated_stages.begin(), plan.stages[s].annotated_stages.end());
  return temp_of_ipu;
}

// Copies: a tensor needed on another IPU travels hop by hop from its producer's
// stage to the last stage on another IPU that reads it. Returns what crosses each
// boundary between consecutive forward stages.
std::vector<PlanCopy> forward_boundary_tensors(const Model& m, const ModelGraph& g, const std::vector<int>& stage_of,
                                               const std::vector<int>& merged_ipu, std::int64_t micro_batch_size) {
  const int P = static_cast<int>(merged_ipu.size());
  std::vector<PlanCopy> forward(static_cast<std::size_t>(std::max(P - 1, 0)));
  for (const auto& [name, users] : g.consumers) {
    const Tensor& t = m.tensor(name);
    int from = 0;
    if (t.kind == TensorKind::Weight) continue;
    if (t.kind == TensorKind::Input) {
      from = P;
      for (auto u : users) from = std::min(from, stage_of[u]);
    } else {
      from = stage_of[g.producer.at(name)];
    }
    int last = from;
    for (auto u : users)
      if (merged_ipu[stage_of[u]] != merged_ipu[from]) last = std::max(last, stage_of[u]);
    for (int s = from; s < last; ++s) {
      forward[s].bytes += t.bytes_per_micro_batch(micro_batch_size);
      forward[s].tensors.push_back(name);
    }
  }
  return forward;
}

void add_copies(Plan& plan, const Model& m, const ModelGraph& g, const std::vector<int>& stage_of,
                const std::vector<int>& merged_ipu, const Execution& ex) {
  const int P = static_cast<int>(merged_ipu.size());
  const int L = plan.loss_stage;
  const std::vector<PlanCopy> forward = forward_boundary_tensors(m, g, stage_of, merged_ipu, ex.micro_batch_size);
  for (int s = 0; s + 1 < P; ++s) {
    PlanCopy c = forward[s];
    c.from_stage = s;
    c.to_stage = s + 1;
    c.src_ipu = merged_ipu[s];
    c.dst_ipu = merged_ipu[s + 1];
    // Consecutive stages on one IPU (TensorFlow keeps them apart) hand their tensors over
    // in place: nothing crosses a link.
    if (c.bytes > 0 && c.src_ipu != c.dst_ipu) plan.copies.push_back(c);
  }
  if (ex.training) {
    // Gradients of activations cross back over the same boundaries; host inputs need none.
    for (int s = P - 2; s >= 0; --s) {
      PlanCopy c;
      c.gradient = true;
      c.from_stage = 2 * L - (s + 1);
      c.to_stage = 2 * L - s;
      c.src_ipu = merged_ipu[s + 1];
      c.dst_ipu = merged_ipu[s];
      for (const auto& name : forward[s].tensors)
        if (m.tensor(name).kind == TensorKind::Activation) {
          c.bytes += m.tensor(name).bytes_per_micro_batch(ex.micro_batch_size);
          c.tensors.push_back(name);
        }
      if (c.bytes > 0 && c.src_ipu != c.dst_ipu) plan.copies.push_back(c);
    }
  }
  for (std::size_t i = 0; i < plan.copies.size(); ++i) plan.copies[i].id = static_cast<int>(i);
}

// Host streams: an input enters at the first stage reading it; an anchor leaves from its producer's stage.
void add_host_streams(Plan& plan, const Model& m, const ModelGraph& g, const std::vector<int>& stage_of, int P,
                      std::int64_t micro_batch_size) {
  for (const auto& [name, users] : g.consumers) {
    const Tensor& t = m.tensor(name);
    if (t.kind != TensorKind::Input) continue;
    int first = P;
    for (auto u : users) first = std::min(first, stage_of[u]);
    plan.stages[first].host_inputs.push_back(name);
    plan.stages[first].host_input_bytes += t.bytes_per_micro_batch(micro_batch_size);
  }
  for (const auto& name : g.anchors) {
    const int s = stage_of[g.producer.at(name)];
    plan.stages[s].host_outputs.push_back(name);
    plan.stages[s].host_output_bytes += m.tensor(name).bytes_per_micro_batch(micro_batch_size);
  }
}

// The data types of the weights, by IPU and by the stage completing their gradients.
struct WeightDtypes {
  std::map<int, DType> of_ipu, of_stage;
};

// IPUs and their weights.
std::map<int, PlanIpu> ipus_and_weights(Plan& plan, const Model& m, const ModelGraph& g,
                                        const std::vector<int>& stage_of, int P, bool training,
                                        WeightDtypes& dtypes) {
  const int L = plan.loss_stage;
  std::map<int, PlanIpu> ipus;
  for (const auto& st : plan.stages) {
    ipus[st.ipu].id = st.ipu;
    ipus[st.ipu].stages.push_back(st.id);
  }
  // A weight's gradient is complete in the backward stage of the first forward stage reading
  // it (2L-s; the loss stage is its own backward): where PopART places its update when it
  // runs every micro-batch (VarUpdate inherits the latest stage of its inputs).
  for (const auto& [name, users] : g.consumers) {
    const Tensor& t = m.tensor(name);
    if (t.kind != TensorKind::Weight) continue;
    PlanIpu& ipu = ipus[g.ipu_of_op[users.front()]];
    ipu.weights.push_back(name);
    ipu.weight_elements += static_cast<double>(t.elements());
    ipu.weight_bytes += static_cast<double>(t.bytes());
    ipu.weight_tensors += 1;
    if (t.elements() >= kMinElementsForReplicatedTensorSharding) ipu.shardable_weight_tensors += 1;
    dtypes.of_ipu.emplace(ipu.id, t.dtype);
    if (!training) continue;
    int first = P;
    for (auto u : users) first = std::min(first, stage_of[u]);
    PlanStage& completing = plan.stages[2 * L - first];
    completing.weights.push_back(name);
    completing.weight_elements += static_cast<double>(t.elements());
    completing.weight_bytes += static_cast<double>(t.bytes());
    dtypes.of_stage.emplace(completing.id, t.dtype);
  }
  return ipus;
}

void check_streaming_memory(const Scenario& sc) {
  const Execution& ex = sc.execution;
  const bool streamed = ex.training && ex.optimizer_state_off_chip &&
                        optimizer_state_tensors(ex.optimizer) * dtype_bytes(ex.optimizer_state_dtype) > 0;
  if (streamed && !sc.hardware.streaming_memory.present)
    throw InputError(sc.file, sc.execution_pointer("optimizer/stateLocation"), "scenario.no-streaming-memory",
                     "optimizer state in streaming memory, but the system \"" + sc.hardware.name +
                         "\" has no \"streamingMemory\"");
}

// Weight update times and optimizer state, per IPU and per stage completing gradients;
// the IPUs join the plan.
void add_weight_updates(Plan& plan, const Scenario& sc, IpuCostModels& cost, std::map<int, PlanIpu>& ipus,
                        std::map<int, double>& temp_of_ipu, WeightDtypes& dtypes) {
  const Execution& ex = sc.execution;
  const auto update_of = [&](int ipu, double elements, double bytes, DType dtype, double tensors) {
    return weight_update_cost(sc, cost(ipu), elements, bytes, dtype, tensors);
  };
  if (ex.training && ex.weight_update_schedule == WeightUpdateSchedule::OverlapMemoryOptimized)
    mark_shared_updates(sc.model, ex.weight_update_excluded_ipus, ipus);
  for (auto& [id, ipu] : ipus) {
    ipu.temp_bytes_per_tile = temp_of_ipu[id];
    if (ex.training && ipu.weight_elements > 0)
      std::tie(ipu.update_seconds, ipu.state_bytes) =
          update_of(id, ipu.weight_elements, ipu.weight_bytes, dtypes.of_ipu[id], ipu.weight_tensors);
    plan.ipus.push_back(ipu);
  }
  for (auto& [id, dtype] : dtypes.of_stage) {
    PlanStage& st = plan.stages[id];
    std::tie(st.update_seconds, st.state_bytes) =
        update_of(st.ipu, st.weight_elements, st.weight_bytes, dtype, static_cast<double>(st.weights.size()));
  }
}
} // namespace

double tensor_parallel_fraction(const Plan& plan, bool recompute) {
  double collectives = 0, total = 0;
  for (const PlanStage& s : plan.stages) {
    collectives += s.tensor_parallel_seconds + (recompute ? s.tensor_parallel_recompute_seconds : 0.0);
    total += s.seconds() + (recompute ? s.recompute_seconds : 0.0);
  }
  return total > 0 ? collectives / total : 0.0;
}

const PlanStage& backward_of(const Plan& plan, int k) {
  const int L = plan.loss_stage;
  return plan.stages[static_cast<std::size_t>(k == L ? L : 2 * L - k)];
}

Plan make_plan(const Scenario& sc, const ModelGraph& g, const std::vector<Mode>& modes, AnnotatedStages stages) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  check_ipus_exist(sc, g);
  check_weights_local(m, g);
  check_cost_model(sc);
  IpuCostModels cost(sc);

  Plan plan;
  plan.training = ex.training;
  plan.clock_hz = sc.hardware.ipu.clock_hz;
  plan.op_timings.resize(m.ops.size());
  plan.micro_batch_size = ex.micro_batch_size;
  plan.annotated = g.has_virtual_graphs;
  plan.phased = runs_phased(modes);
  plan.pipelining_refused = g.pipelining_refused;

  const bool phased = plan.phased;
  check_batch_serialization(sc, g, modes, phased);
  std::vector<int> merged_ipu;
  const std::vector<int> stage_of = split_stages(m, g, merged_ipu, keeps_annotated_stages(g, modes, stages), phased);
  const int P = static_cast<int>(merged_ipu.size());
  lay_out_stages(plan, merged_ipu, ex.training);
  const int L = plan.loss_stage;
  const int S = plan.stage_count();
  {
    std::vector<int> used(merged_ipu.begin(), merged_ipu.end());
    std::sort(used.begin(), used.end());
    check_execution_options(sc, used);
  }

  std::map<int, double> temp_of_ipu = place_and_time_ops(plan, sc, g, stage_of, merged_ipu, cost);
  add_copies(plan, m, g, stage_of, merged_ipu, ex);
  add_host_streams(plan, m, g, stage_of, P, ex.micro_batch_size);

  describe_activations(m, g, stage_of, ex.micro_batch_size, plan);
  if (ex.training)
    for (int s = L + 1; s < S; ++s) {
      plan.stages[s].recompute_seconds = plan.stages[2 * L - s].forward_seconds;
      plan.stages[s].tensor_parallel_recompute_seconds = plan.stages[2 * L - s].tensor_parallel_seconds;
    }

  WeightDtypes dtypes;
  std::map<int, PlanIpu> ipus = ipus_and_weights(plan, m, g, stage_of, P, ex.training, dtypes);
  check_streaming_memory(sc);
  add_weight_updates(plan, sc, cost, ipus, temp_of_ipu, dtypes);
  return plan;
}

std::optional<std::string> unused_phases_warning(const Model& m, const ModelGraph& g) {
  const std::string ignored =
      "PopART uses executionPhase only under VirtualGraphMode::ExecutionPhases (phased execution: ipusim's "
      "--mode phased) and clears it otherwise (Ir::verifyExecutionPhaseSettings), so sharded and pipelined runs "
      "place the ops by virtualGraph and pipelineStage alone";
  if (const auto& refused = g.phasing_refused)
    return "the executionPhase annotations break a phase rule at " + refused->pointer() + ": " + refused->message() +
           " [" + refused->rule() + "]; " + ignored;
  if (g.phase_count == 0) return std::nullopt;
  return std::to_string(m.ops.size()) + " ops carry executionPhase (" + std::to_string(g.phase_count) +
         " phases); " + ignored;
}

std::optional<std::string> unused_settings_warning(const Scenario& sc, const bool phased) {
  const Execution::Written& written = sc.execution.written;
  std::string unused;
  auto note = [&](bool given, const char* key) {
    if (given) unused += (unused.empty() ? "" : ", ") + std::string(key);
  };
  if (phased) {
    note(written.schedule, "schedule");
    note(written.accumulate_outer_fragment_settings, "accumulateOuterFragmentSettings");
  } else {
    note(written.execution_phase_settings, "executionPhaseSettings");
  }
  if (unused.empty()) return std::nullopt;
  return "execution." + unused + (phased ? " belong to pipelined runs; the phased mode does not read them"
                                         : " belongs to the phased mode (--mode phased); this run does not read it");
}

std::optional<std::string> missing_optimizer_warning(const Scenario& sc) {
  if (!sc.execution.training || sc.execution.written.optimizer) return std::nullopt;
  return "training with no optimizer named: SGD is assumed (PopART's default; no optimizer state); a model meant for "
         "Adam or LAMB holds two more copies of its weights in state: set execution.optimizer.type "
         "(--set execution.optimizer.type=adam)";
}

std::optional<std::string> kept_whole_note(const Scenario& sc) {
  const auto& kept = sc.tensor_parallel_kept_whole;
  if (kept.empty()) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < kept.size() && i < 3; ++i)
    list += (i ? "; " : "") + kept[i].op + " (" + kept[i].reason + ")";
  if (kept.size() > 3) list += "; and " + std::to_string(kept.size() - 3) + " more";
  return "tensorParallel " + std::to_string(sc.execution.tensor_parallel) + ": " + std::to_string(kept.size()) +
         " op(s) that would split their output run whole on every shard, because what reads the split cannot take "
         "it: " + list + " (docs/tensor-parallel.md, T11)";
}

std::optional<std::string> missing_loss_warning(const Scenario& sc, const ModelGraph& g) {
  if (!sc.execution.training) return std::nullopt;
  static const std::set<std::string> losses{"SoftmaxCrossEntropy", "SoftmaxCrossEntropyLoss", "NllLoss",
                                            "NegativeLogLikelihoodLoss", "L1Loss", "MSELoss"};
  for (const Op& op : sc.model.ops)
    if (losses.count(op.type)) return std::nullopt;
  std::string outputs;
  for (std::size_t i = 0; i < g.anchors.size() && i < 3; ++i) outputs += (i ? ", \"" : "\"") + g.anchors[i] + "\"";
  if (g.anchors.size() > 3) outputs += ", ...";
  return "training a model without a loss op: backward starts from its outputs (" + outputs +
         "), which are streamed to the host every micro-batch; add the loss (e.g. SoftmaxCrossEntropyLoss) to the "
         "model, or run inference (execution.training false)";
}

} // namespace ipusim
