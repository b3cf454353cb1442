// The phased mode's planner: executionPhaseSettings.stages (1 or 2), tensorParallel (powers of
// two; the replicas following from the system's IPUs), replicated tensor sharding, numIOTiles, PopXL's or PopART's order of phases and micro-batches,
// and recomputation, with the global batch kept; each candidate simulated by the engine, so the
// ranking is the engine's own figures (exact by construction), fitting candidates first.
#include "sim/service/plan_phased.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/service/plan_scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim::service {

namespace {

struct PhasedCandidate {
  int stages = 1;
  std::int64_t tensor_parallel = 1;
  std::int64_t replicas = 1, io_tiles = 0, gradient_accumulation = 1;
  bool serialise = true;
  bool sharded_weights = false;  // replicated tensor sharding
  Recomputation recomputation = Recomputation::None;
  // The engine's figures, or the rule that refused it.
  double step_s = 0, throughput = 0, fullest = 0;  // fullest: the fullest tile over its SRAM
  bool fits = false;
  std::string refused;
};

// The scenario with a candidate's settings; the ops placed by PopART's rule for its stages.
Scenario with_candidate(const Scenario& sc, const PhasedCandidate& c) {
  Scenario v = sc;
  Unsharded source = sc.unsharded ? *sc.unsharded : Unsharded{sc.model, sc.hardware};
  for (Op& op : source.model.ops)
    if (op.execution_phase) op.virtual_graph = *op.execution_phase % c.stages;
  v.unsharded = std::make_shared<const Unsharded>(std::move(source));
  Execution& ex = v.execution;
  ex.tensor_parallel = c.tensor_parallel;
  ex.phases.stages = c.stages;
  ex.replicas = c.replicas;
  ex.placement.clear();
  ex.io_tiles = c.io_tiles;
  ex.gradient_accumulation = c.gradient_accumulation;
  ex.phases.serialise_micro_batches = c.serialise;
  ex.recomputation = c.recomputation;
  ex.replicated_tensor_sharding = c.sharded_weights;
  apply_tensor_parallel(v);
  return v;
}

// Every combination the system allows, the global batch (micro-batch x G x replicas) kept:
// tensor-parallel groups of a power of two IPUs, the replicas filling the system.
std::vector<PhasedCandidate> candidates(const Scenario& sc) {
  const Execution& ex = sc.execution;
  const std::int64_t global = ex.micro_batch_size * ex.gradient_accumulation * ex.replicas;
  std::vector<PhasedCandidate> out;
  for (int stages : {1, 2})
  for (std::int64_t tp = 1; tp * stages <= sc.hardware.ipu_count; tp *= 2) {
    const std::int64_t replicas = sc.hardware.ipu_count / (stages * tp);
    if (replicas < 1) continue;
    std::int64_t g = ex.gradient_accumulation;
    if (ex.training) {
      if (global % (replicas * ex.micro_batch_size) != 0) continue;
      g = global / (replicas * ex.micro_batch_size);
    }
    for (std::int64_t io : {0, 32, 64, 128}) {
      if (io >= sc.hardware.ipu.tiles) continue;
      for (bool serialise : {true, false})
        for (bool rts : {false, true})
        for (Recomputation r : {Recomputation::None, Recomputation::Pipeline}) {
          if ((r == Recomputation::Pipeline && !ex.training) || (rts && replicas < 2)) continue;
          PhasedCandidate c;
          c.sharded_weights = rts;
          c.stages = stages;
          c.tensor_parallel = tp;
          c.replicas = replicas;
          c.io_tiles = io;
          c.gradient_accumulation = g;
          c.serialise = serialise;
          c.recomputation = r;
          out.push_back(c);
        }
    }
  }
  return out;
}

void run_candidate(const Scenario& sc, PhasedCandidate& c) {
  try {
    SimulateOptions options;
    options.keep_log = false;
    const Simulation sim = simulate(with_candidate(sc, c), {Mode::Phased}, options);
    const RunMetrics& m = sim.runs.front().metrics;
    c.step_s = m.step_time_s;
    c.throughput = m.throughput_samples_per_s;
    c.fits = m.memory.fits;
    for (const IpuMemory& ipu : m.memory.ipus) c.fullest = std::max(c.fullest, ipu.fullest_tile_bytes / ipu.tile_capacity_bytes);
  } catch (const InputError& e) {
    c.refused = e.rule();
  }
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

void print_row(std::ostream& out, const std::string& rank, const PhasedCandidate& c, bool training) {
  out << "  " << pad(rank, 6) << pad(std::to_string(c.stages), 8) << pad(std::to_string(c.tensor_parallel), 4)
      << pad(std::to_string(c.replicas), 10)
      << pad(std::to_string(c.io_tiles), 11) << pad(c.serialise ? "phase-major" : "micro-batch-major", 19)
      << pad(c.sharded_weights ? "yes" : "no", 5);
  if (training)
    out << pad(c.recomputation == Recomputation::Pipeline ? "yes" : "no", 11)
        << pad(std::to_string(c.gradient_accumulation), 8);
  if (!c.refused.empty()) {
    out << "refused [" << c.refused << "]\n";
    return;
  }
  out << pad(format_rate(c.throughput, "samples/s"), 20) << pad(format_seconds(c.step_s), 12)
      << (c.fits ? "yes" : "no") << " (" << format_fixed(100 * c.fullest, 0) << " %)\n";
}

} // namespace

int plan_phased(const Scenario& sc, int top, std::ostream& out) {
  std::vector<PhasedCandidate> all = candidates(sc);
  for (PhasedCandidate& c : all) run_candidate(sc, c);
  // Fitting first, fastest first; then the nearest to fitting.
  std::stable_sort(all.begin(), all.end(), [](const PhasedCandidate& a, const PhasedCandidate& b) {
    if (a.refused.empty() != b.refused.empty()) return a.refused.empty();
    if (a.fits != b.fits) return a.fits;
    return a.fits ? a.throughput > b.throughput : a.fullest < b.fullest;
  });
  const bool training = sc.execution.training;
  const auto fitting = std::count_if(all.begin(), all.end(), [](const PhasedCandidate& c) { return c.fits; });
  out << "Phased configurations of " << sc.model.name << " on " << sc.hardware.name << ": " << all.size()
      << " simulated, " << fitting << " fit";
  if (training)
    out << " (global batch " << sc.execution.micro_batch_size * sc.execution.gradient_accumulation * sc.execution.replicas
        << ", micro-batch " << sc.execution.micro_batch_size << ")";
  out << "\n  " << pad("rank", 6) << pad("stages", 8) << pad("tp", 4) << pad("replicas", 10) << pad("I/O tiles", 11) << pad("order", 19) << pad("RTS", 5);
  if (training) out << pad("recompute", 11) << pad("G", 8);
  out << pad("throughput", 20) << pad("step", 12) << "fits (fullest tile)\n";
  for (std::size_t i = 0; i < all.size() && i < static_cast<std::size_t>(top); ++i)
    print_row(out, std::to_string(i + 1), all[i], training);
  if (all.empty() || !all.front().fits) {
    out << "no phased configuration fits";
    if (!all.empty() && all.front().refused.empty())
      out << "; the nearest needs " << format_fixed(100 * all.front().fullest, 0)
          << " % of a tile's SRAM at tensor parallelism up to " << sc.hardware.ipu_count
          << ": cut finer phases (a phase per half layer) or use a larger system";
    out << "\n";
    return kPlanNoFit;
  }
  out << "best: --set execution.executionPhaseSettings.stages=" << all.front().stages
      << " --set execution.tensorParallel=" << all.front().tensor_parallel
      << " --set execution.replicas=" << all.front().replicas << " --set execution.numIOTiles=" << all.front().io_tiles
      << " --set execution.executionPhaseSettings.serialiseMicroBatches=" << (all.front().serialise ? "true" : "false")
      << " --set execution.optimizer.replicatedTensorSharding=" << (all.front().sharded_weights ? "true" : "false");
  if (training)
    out << " --set execution.recomputation=" << (all.front().recomputation == Recomputation::Pipeline ? "pipeline" : "none")
        << " --set execution.gradientAccumulation=" << all.front().gradient_accumulation;
  out << " (with the model's ops on IPU phase % " << all.front().stages << ": ipusim annotate --phased "
      << all.front().stages << ", or a generator's --phased " << all.front().stages << ")\n";
  return kPlanFits;
}

} // namespace ipusim::service
