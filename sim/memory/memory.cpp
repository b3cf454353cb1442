#include "sim/memory/memory.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "sim/cost/cost_model.hpp"
#include "sim/base/units.hpp"
#include "sim/memory/ledger.hpp"

namespace ipusim {

// A buffer of `bytes` is cut into grains of minElementsPerTile elements and laid out
// linearly from tile 0 (Poplar's default linear mapping), over at most every tile.
double tile0_share(double bytes, std::int64_t element_bytes, const IpuSpec& ipu) {
  if (bytes <= 0) return 0;
  const double grain = static_cast<double>(ipu.min_elements_per_tile * element_bytes);
  const double tiles = std::clamp(std::ceil(bytes / grain), 1.0, static_cast<double>(ipu.tiles));
  return bytes / tiles;
}

// What makes two ops the same code: their type and their operands' shapes and dtypes.
std::string code_signature(const Model& m, const Op& op) {
  std::string key = op.type;
  for (const auto* list : {&op.inputs, &op.outputs}) {
    key += "|";
    for (const auto& t : *list) {
      const Tensor& tensor = m.tensor(t);
      key += dtype_name(tensor.dtype) + tensor_kind_name(tensor.kind) + "[";
      for (auto d : tensor.shape) key += std::to_string(d) + ",";
      key += "]";
    }
  }
  return key;
}

void add_to_report(MemoryReport& report, IpuMemory ipu, const IpuSpec& spec) {
  ipu.tile_capacity_bytes = static_cast<double>(spec.sram_bytes_per_tile);
  ipu.capacity_bytes = ipu.tile_capacity_bytes * static_cast<double>(spec.tiles);
  ipu.fits = ipu.fullest_tile_bytes <= ipu.tile_capacity_bytes && ipu.total_bytes <= ipu.capacity_bytes;
  report.fits = report.fits && ipu.fits;
  report.ipus.push_back(std::move(ipu));
}

void add_optimizer_state(Ledger& ledger, const Scenario& sc, const std::string& w) {
  const Execution& ex = sc.execution;
  const Model& m = sc.model;
  // Replicated tensor sharding leaves each replica 1/replicas of the state.
  const double shards = ex.replicated_tensor_sharding ? static_cast<double>(ex.replicas) : 1.0;
  const double state = static_cast<double>(optimizer_state_tensors(ex.optimizer) * m.tensor(w).elements() *
                                           dtype_bytes(ex.optimizer_state_dtype)) /
                       shards;
  // Off-chip state needs no SRAM between updates; it passes through in slices.
  if (!ex.optimizer_state_off_chip)
    for (int i = 0; i < optimizer_state_tensors(ex.optimizer); ++i)
      ledger.add("optimizer state", state / optimizer_state_tensors(ex.optimizer),
                 tile0_share(state / optimizer_state_tensors(ex.optimizer),
                             dtype_bytes(ex.optimizer_state_dtype), sc.hardware.ipu));
}

void add_live_activations(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages,
                          double slices) {
  const Model& m = sc.model;
  // Stages on one IPU run one after another: the live activations peak in one of them.
  // A backward stage holds the forward's activations and their gradients: twice the forward's.
  // It also holds the gradients of the weights its ops read before they are accumulated.
  double live = 0;
  for (int s : stages) {
    const PlanStage& st = plan.stages[s];
    const PlanStage& fwd = plan.stages[st.forward_stage];
    const bool backward = st.backward || st.backward_seconds > 0;
    double bytes = fwd.live_bytes * (backward ? 2.0 : 1.0);
    if (backward) {
      std::set<std::string> read;
      for (std::size_t op : fwd.ops)
        for (const auto& t : m.ops[op].inputs)
          if (m.tensor(t).kind == TensorKind::Weight) read.insert(t);
      for (const auto& w : read) bytes += static_cast<double>(m.tensor(w).bytes());
    }
    live = std::max(live, bytes);
  }
  // Activations are spread like one float tensor of that size.
  live /= slices;
  ledger.add("activations", live, tile0_share(live, 2, sc.hardware.ipu));
}

void add_host_stream_buffers(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  for (int s : stages) {
    const PlanStage& st = plan.stages[s];
    if (!ex.host_io) break;
    for (const auto& t : st.host_inputs) ledger.add_tensor("host stream buffers", t, m.tensor(t).bytes_per_micro_batch(ex.micro_batch_size));
    for (const auto& t : st.host_outputs) ledger.add_tensor("host stream buffers", t, m.tensor(t).bytes_per_micro_batch(ex.micro_batch_size));
  }

}

void add_code(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  const IpuSpec& ipu_spec = sc.hardware.ipu;
  // Each op places code and control on every tile it runs on; backward ops as many again.
  // PopART outlines repeated subgraphs (enableOutlining, on by default): ops of the same
  // type on operands of the same shapes (the same layer repeated) share one copy of code.
  const double per_op = ipu_spec.code_bytes_per_op;
  std::set<std::string> outlined;
  for (int s : stages) {
    const PlanStage& st = plan.stages[s];
    if (st.backward) continue;
    for (std::size_t op : st.ops) {
      if (!outlined.insert(code_signature(m, m.ops[op])).second) continue;
      const double tiles = tiles_used(forward_work(m, m.ops[op], ex.micro_batch_size), ipu_spec);  // FLOP models' spread
      const double copies = ex.training ? 2.0 : 1.0;
      ledger.add("code and control", copies * per_op * tiles, copies * per_op);
    }
  }
}

namespace {

// The stashes IPU `ipu` holds at its peak: the moment of `at_once` with the most bytes when its
// schedule gives them, else every stage at its own peak (`stashed`).
template <typename SlotBytes>
StashMoment held_at_once(int ipu, const StashMoment& stashed, const std::vector<IpuStashPeaks>& at_once,
                         const SlotBytes& slot_bytes) {
  const auto peaks = std::find_if(at_once.begin(), at_once.end(), [&](const IpuStashPeaks& p) { return p.ipu == ipu; });
  if (peaks == at_once.end() || peaks->moments.empty()) return stashed;
  auto bytes = [&](const StashMoment& moment) {
    double total = 0;
    for (const auto& [s, depth] : moment) total += depth * slot_bytes(s);
    return total;
  };
  return *std::max_element(peaks->moments.begin(), peaks->moments.end(),
                           [&](const StashMoment& a, const StashMoment& b) { return bytes(a) < bytes(b); });
}

// What one IPU runs: its own stages, each forward stage stashing its schedule's depth, and the
// stages it runs a second copy of (with their weights and their own stash).
struct IpuWork {
  std::vector<int> stages;
  std::vector<std::string> weights;
  double temp_bytes_per_tile = 0;
  std::vector<std::pair<int, int>> stashed;  // (forward stage, depth), in report order
};

IpuWork ipu_work(const Plan& plan, const PlanIpu& ipu, const std::vector<int>& stash_depth,
                 const std::vector<StageMirror>& mirrors) {
  IpuWork work{ipu.stages, ipu.weights, ipu.temp_bytes_per_tile, {}};
  std::vector<int> depth_of(static_cast<std::size_t>(plan.stage_count()), 0);
  for (std::size_t s = 0; s < stash_depth.size() && s < depth_of.size(); ++s) depth_of[s] = stash_depth[s];
  for (int s : ipu.stages)
    if (!plan.stages[s].backward && depth_of[s] > 0) work.stashed.emplace_back(s, depth_of[s]);
  for (const StageMirror& mirror : mirrors) {
    if (mirror.ipu != ipu.id) continue;
    const PlanStage& backward = backward_of(plan, mirror.stage);
    work.stages.push_back(mirror.stage);
    if (backward.id != mirror.stage) work.stages.push_back(backward.id);
    work.weights.insert(work.weights.end(), backward.weights.begin(), backward.weights.end());
    for (const PlanIpu& home : plan.ipus)
      if (home.id == plan.stages[mirror.stage].ipu)
        work.temp_bytes_per_tile = std::max(work.temp_bytes_per_tile, home.temp_bytes_per_tile);
    if (mirror.stash_depth > 0) work.stashed.emplace_back(mirror.stage, mirror.stash_depth);
  }
  return work;
}

// The weights, and in training their gradient accumulators and optimizer state.
void add_weights(Ledger& ledger, const Scenario& sc, const std::vector<std::string>& weights) {
  for (const auto& w : weights) {
    const double bytes = static_cast<double>(sc.model.tensor(w).bytes());
    ledger.add_tensor("weights", w, bytes);
    if (sc.execution.training) {
      // The gradient is accumulated over G micro-batches in a buffer of the weight's type;
      // without accumulation (G = 1) the update reads the gradient itself.
      if (sc.execution.gradient_accumulation > 1) ledger.add_tensor("gradient accumulators", w, bytes);
      add_optimizer_state(ledger, sc, w);
    }
  }
}

} // namespace

MemoryReport estimate_memory(const Scenario& sc, const Plan& plan, const std::vector<int>& stash_depth,
                             bool recompute, const std::vector<StageMirror>& mirrors,
                             const std::vector<IpuStashPeaks>& at_once) {
  if (plan.phased) return estimate_phased_memory(sc, plan);
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  const IpuSpec& ipu_spec = sc.hardware.ipu;
  MemoryReport report;

  for (const PlanIpu& ipu : plan.ipus) {
    Ledger ledger(ipu_spec, m);
    for (const char* name : kMemoryCategories) ledger.entry(name);
    const IpuWork work = ipu_work(plan, ipu, stash_depth, mirrors);
    add_weights(ledger, sc, work.weights);
    add_live_activations(ledger, sc, plan, work.stages);
    // The largest operand copies and partial sums a matmul or convolution here keeps while it runs.
    ledger.add("matmul temporaries", work.temp_bytes_per_tile * static_cast<double>(ipu_spec.tiles),
               work.temp_bytes_per_tile);

    auto stash_tensors = [&](int s) -> const std::vector<std::string>& {
      return recompute ? plan.stages[s].recompute_stash_tensors : plan.stages[s].stash_tensors;
    };
    auto slot_bytes = [&](int s) {
      double slot = 0;
      for (const auto& t : stash_tensors(s)) slot += m.tensor(t).bytes_per_micro_batch(ex.micro_batch_size);
      return slot;
    };
    for (const auto& [s, depth] : work.stashed) report.stashes.push_back({s, ipu.id, depth, slot_bytes(s)});
    for (const auto& [s, depth] : held_at_once(ipu.id, work.stashed, at_once, slot_bytes))
      for (const auto& t : stash_tensors(s))
        ledger.add_tensor("stash", t, m.tensor(t).bytes_per_micro_batch(ex.micro_batch_size), depth);

    add_host_stream_buffers(ledger, sc, plan, work.stages);
    add_code(ledger, sc, plan, work.stages);
    add_to_report(report, ledger.finish(ipu.id), ipu_spec);
  }
  return report;
}

std::string out_of_memory_verdict(const IpuMemory& ipu, bool replicated_or_placed) {
  std::vector<MemoryCategory> largest = ipu.categories;
  std::sort(largest.begin(), largest.end(),
            [](const MemoryCategory& a, const MemoryCategory& b) { return a.tile_bytes > b.tile_bytes; });
  // ipu.id is a virtual IPU: with replicas or a placement, not the physical IPU of that number.
  std::string text = (replicated_or_placed ? "vIPU " + std::to_string(ipu.id) + " (in every replica)"
                                           : "IPU " + std::to_string(ipu.id)) +
                     " is out of memory: its fullest tile needs " +
                     format_bytes(ipu.fullest_tile_bytes) + " of " + format_bytes(ipu.tile_capacity_bytes) +
                     " (" + format_fixed(100 * ipu.fullest_tile_bytes / ipu.tile_capacity_bytes, 0) +
                     " %); largest consumers per tile:";
  for (std::size_t i = 0; i < largest.size() && i < 3; ++i)
    text += (i ? ", " : " ") + largest[i].name + " " + format_bytes(largest[i].tile_bytes);
  return text;
}

std::string fixes_sentence(const std::vector<MemoryFix>& fixes, std::size_t at_most) {
  std::string fitting, partial;
  std::size_t n = 0;
  for (const MemoryFix& f : fixes) {
    if (n == at_most) break;
    std::string text = f.change + " (" + f.how + "; " + (f.freed_bytes >= 0 ? "frees " : "needs ") +
                       format_bytes(std::abs(f.freed_bytes)) + " per tile";
    if (std::isfinite(f.step_change))
      text += std::string(", ") + (f.step_change >= 0 ? "+" : "-") + format_percent(std::abs(f.step_change)) + " step time";
    text += ")";
    (f.fits ? fitting : partial) += ((f.fits ? fitting : partial).empty() ? "" : "; ") + text;
    ++n;
  }
  std::string out;
  if (!fitting.empty()) out = "would fit with " + fitting;
  if (!partial.empty()) out += (out.empty() ? "" : "; ") + std::string("alone not enough: ") + partial;
  if (out.empty()) out = "no single setting the memory model tries makes it fit";
  return out;
}

} // namespace ipusim
