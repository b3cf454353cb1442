// Memory per IPU under phased execution (docs/phased.md). Nothing a phase loads stays on its IPU
// after it: weights, accumulators and stored activations go back to Streaming Memory. So an IPU
// peaks in one of its phases, holding that phase's tensors, and, when the next phase runs on the
// same IPU and its tensors are preloaded (PopART's Preload), the next phase's as well. With
// phases alternating between IPUs (stages 2) the next phase loads on the other IPU. Code for
// every phase on the IPU stays resident (one program). Batch serialisation runs a phase's
// micro-batch in slices: one slice's activations, loaded and stored activations included, are live.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/memory/ledger.hpp"

namespace ipusim {

namespace {

using TensorSet = std::set<std::string>;

double set_bytes(const Model& m, const TensorSet& tensors, std::int64_t micro_batch_size) {
  double bytes = 0;
  for (const auto& t : tensors) bytes += m.tensor(t).bytes_per_micro_batch(micro_batch_size);
  return bytes;
}

// What phase k holds of one kind of tensor: its own, and the next phase's when that runs on the
// same IPU and is preloaded.
template <typename Of>
TensorSet held(const Plan& plan, std::size_t k, bool preload, Of of) {
  TensorSet out = of(plan.stages[k]);
  if (preload && k + 1 < plan.stages.size() && plan.stages[k + 1].ipu == plan.stages[k].ipu) {
    const TensorSet next = of(plan.stages[k + 1]);
    out.insert(next.begin(), next.end());
  }
  return out;
}

// The largest set `of` gives over the IPU's phases, added tensor by tensor to `category`.
template <typename Of>
void add_peak(Ledger& ledger, const Scenario& sc, const Plan& plan, const PlanIpu& ipu, const std::string& category,
              bool preload, Of of, double slices = 1) {
  const Model& m = sc.model;
  TensorSet peak;
  double peak_bytes = -1;
  for (int s : ipu.stages) {
    const TensorSet here = held(plan, static_cast<std::size_t>(s), preload, of);
    const double bytes = set_bytes(m, here, sc.execution.micro_batch_size);
    if (bytes > peak_bytes) {
      peak_bytes = bytes;
      peak = here;
    }
  }
  for (const auto& t : peak)
    ledger.add_tensor(category, t, m.tensor(t).bytes_per_micro_batch(sc.execution.micro_batch_size) / slices);
}

} // namespace

MemoryReport estimate_phased_memory(const Scenario& sc, const Plan& plan) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  const PhaseSettings& settings = ex.phases;
  MemoryReport report;
  const auto weights_of = [&](const PlanStage& st) {
    const auto& read = plan.stages[static_cast<std::size_t>(st.forward_stage)].weights_read;
    return TensorSet(read.begin(), read.end());
  };
  const auto accumulators_of = [&](const PlanStage& st) {
    const bool backward = st.backward || st.backward_seconds > 0;
    return ex.training && ex.gradient_accumulation > 1 && backward ? weights_of(st) : TensorSet{};
  };
  const auto stash_of = [&](const PlanStage& st) {
    const PlanStage& forward = plan.stages[static_cast<std::size_t>(st.forward_stage)];
    const auto& stash = ex.recomputation == Recomputation::Pipeline ? forward.recompute_stash_tensors : forward.stash_tensors;
    return ex.training && st.backward ? TensorSet(stash.begin(), stash.end()) : TensorSet{};
  };
  for (const PlanIpu& ipu : plan.ipus) {
    Ledger ledger(sc.hardware.ipu, m);
    for (const char* name : kMemoryCategories) ledger.entry(name);
    add_peak(ledger, sc, plan, ipu, "weights", settings.weights == PhaseIo::Preload, weights_of);
    // Serialised micro-batches start a phase's accumulators at zero on chip: nothing preloaded.
    add_peak(ledger, sc, plan, ipu, "gradient accumulators",
             settings.accumulators == PhaseIo::Preload && !settings.serialise_micro_batches, accumulators_of);
    // On-chip state stays for every weight of the IPU; state in Streaming Memory passes through
    // the update in slices, as in the other modes (memory.cpp).
    if (ex.training)
      for (const auto& w : ipu.weights) add_optimizer_state(ledger, sc, w);
    const auto slices = static_cast<double>(settings.batch_serialization);
    add_live_activations(ledger, sc, plan, ipu.stages, slices);
    ledger.add("matmul temporaries", ipu.temp_bytes_per_tile * static_cast<double>(sc.hardware.ipu.tiles),
               ipu.temp_bytes_per_tile);
    add_peak(ledger, sc, plan, ipu, "stash", settings.activations == PhaseIo::Preload, stash_of, slices);
    add_host_stream_buffers(ledger, sc, plan, ipu.stages);
    add_code(ledger, sc, plan, ipu.stages);
    add_to_report(report, ledger.finish(ipu.id), sc.hardware.ipu);
  }
  return report;
}

} // namespace ipusim
