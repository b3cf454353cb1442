#include "sim/output/explanation.hpp"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/base/units.hpp"

namespace ipusim {

namespace {

// Losses smaller than this share of IPU-time are not worth a suggestion.
constexpr double kWorthMentioning = 0.05;

std::string run_name(const RunMetrics& r) {
  if (r.mode == Mode::Phased) return "Phased";
  return r.mode == Mode::Pipelined ? "Pipelined (" + r.schedule + ")" : "Sharded";
}

void where_time_goes(std::ostringstream& out, const RunMetrics& r) {
  const TimeShares s = time_shares(r);
  out << run_name(r) << ", IPU time is " << format_percent(s.compute) << " computing, " << format_percent(s.host_io)
      << " host I/O, " << format_percent(s.exchange) << " copies, " << format_percent(s.sync) << " syncs, ";
  if (s.streaming_memory > 0) out << format_percent(s.streaming_memory) << " Streaming Memory, ";
  out << format_percent(s.idle_total()) << " idle";
  std::vector<std::pair<double, const char*>> idle = {
      {s.idle.fill_flush_s, "fill and flush"},
      {s.idle.imbalance_s, "imbalance (waiting for the slowest IPU)"},
      {s.idle.copy_wait_s, "waiting on copies"},
      {s.idle.update_wait_s, "waiting on other IPUs' weight updates"},
      {s.idle.turn_wait_s, "waiting while another IPU runs its stage"}};
  std::stable_sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const char* separator = ": ";
  for (const auto& [share, cause] : idle)
    if (share >= 0.0005) {
      out << separator << format_percent(share) << " " << cause;
      separator = ", ";
    }
  out << ". ";
}

// Tensor-parallel collectives are counted as computing (they are part of each stage's
// program); how much of it they are, from the plan.
void tensor_parallel_share(std::ostringstream& out, const Scenario& sc, const Simulation& sim) {
  if (sc.execution.tensor_parallel <= 1) return;
  for (const ModeRun& run : sim.runs) {
    const double fraction = tensor_parallel_fraction(sim.plan, run.schedule.recompute);
    out << "Of the computing, " << format_percent(fraction) << " is tensor-parallel all-reduces over groups of "
        << sc.execution.tensor_parallel << " IPUs (" << format_percent(time_shares(run.metrics).compute * fraction)
        << " of IPU time): an all-reduce sends 2(t-1)/t of its tensor over IPU-Links whatever the group size t, "
           "while compute falls as 1/t, so the smallest group that fits spends the least share on them. ";
  }
}

const IpuMetrics* lightest_ipu(const RunMetrics& r) {
  const IpuMetrics* lightest = nullptr;
  for (const IpuMetrics& m : r.ipus)
    if (!lightest || m.pipeline_work_s < lightest->pipeline_work_s) lightest = &m;
  return lightest;
}

const IpuMetrics* ipu_of(const RunMetrics& r, int id) {
  for (const IpuMetrics& m : r.ipus)
    if (m.id == id) return &m;
  return nullptr;
}

void bottleneck(std::ostringstream& out, const RunMetrics& r, int group) {
  const IpuMetrics* slowest = ipu_of(r, r.bottleneck_ipu);
  const IpuMetrics* lightest = lightest_ipu(r);
  if (!slowest || !lightest) return;
  const bool placed = ipus_placed(r);
  out << "The bottleneck is " << physical_ipu_name(*slowest, placed, group) << ", stage " << r.bottleneck_stage
      << ": its stages compute and stream " << format_seconds(slowest->pipeline_work_s) << " per step";
  if (lightest->id != slowest->id)
    out << " against " << format_seconds(lightest->pipeline_work_s) << " on the lightest, "
        << physical_ipu_name(*lightest, placed, group);
  out << ". ";
}

// One suggestion per loss of at least kWorthMentioning of IPU-time, largest first.
void what_would_help(std::ostringstream& out, const Scenario& sc, const RunMetrics& r) {
  const TimeShares s = time_shares(r);
  const Execution& ex = sc.execution;
  const IpuMetrics* slowest = ipu_of(r, r.bottleneck_ipu);
  const IpuMetrics* lightest = lightest_ipu(r);
  std::vector<std::pair<double, std::string>> advice;
  if (r.mode == Mode::Pipelined && slowest && lightest && slowest->id != lightest->id)
    // Ops move between the pipeline's (virtual) IPUs: the split is the same in every replica.
    advice.emplace_back(s.idle.imbalance_s, "moving ops from stage " + std::to_string(r.bottleneck_stage) + " (" +
                                                virtual_ipu_name(slowest->virtual_ipu, ipus_placed(r)) +
                                                ") towards the lightest IPU (" +
                                                virtual_ipu_name(lightest->virtual_ipu, ipus_placed(r)) +
                                                ") evens the cycles (imbalance " + format_percent(s.idle.imbalance_s) + ")");
  if (r.mode == Mode::Pipelined)
    advice.emplace_back(s.idle.fill_flush_s,
                        (ex.training && ex.gradient_accumulation > 1
                             ? "a larger gradientAccumulation (now " + std::to_string(ex.gradient_accumulation) + ")"
                             : "a larger batchesPerStep (now " + std::to_string(ex.batches_per_step) + ")") +
                            " spreads fill and flush (" + format_percent(s.idle.fill_flush_s) +
                            ") over more micro-batches");
  if (s.host_io > s.compute)
    advice.emplace_back(s.host_io, "host I/O (" + format_percent(s.host_io) +
                                       ") outweighs computing: " +
                                       (ex.io_tiles > 0 ? std::string("larger micro-batches stream fewer, larger transfers")
                                                        : std::string("numIOTiles overlaps host streams with compute")));
  if (r.mode == Mode::Phased && s.streaming_memory > 0) {
    // Time the IPUs wait on Streaming Memory, not hidden behind compute.
    std::string how;
    if (ex.replicas > 1 && !ex.replicated_tensor_sharding)
      how = "replicated tensor sharding (optimizer.replicatedTensorSharding) loads a 1/" + std::to_string(ex.replicas) +
            " shard of each weight and gathers the rest over IPU-Links";
    else if (ex.io_tiles == 0)
      how = "numIOTiles loads the next phase's weights beside the compute";
    else if (!ex.phases.serialise_micro_batches)
      how = "executionPhaseSettings.serialiseMicroBatches loads each phase's weights once a step, not every micro-batch";
    else
      how = "a larger micro-batch or gradientAccumulation spreads each phase's weight load over more samples";
    advice.emplace_back(s.streaming_memory, "Streaming Memory (" + format_percent(s.streaming_memory) + "): " + how);
  }
  if (ex.weight_update_schedule == WeightUpdateSchedule::Serial)
    advice.emplace_back(s.idle.update_wait_s, "accumulateOuterFragmentSettings OverlapCycleOptimized updates the IPUs' "
                                              "weights at once instead of one after another (" +
                                                  format_percent(s.idle.update_wait_s) + ")");
  if (r.mode == Mode::Sharded)
    advice.emplace_back(s.idle.turn_wait_s, "pipelining lets the IPUs work on different micro-batches at once");
  if (!r.memory.fits && ex.training && ex.recomputation == Recomputation::None)
    advice.emplace_back(1.0, "recomputation \"pipeline\" stashes only what crosses an IPU boundary, for the IPUs "
                             "that run out of memory");
  std::stable_sort(advice.begin(), advice.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const char* separator = "What would help: ";
  bool any = false;
  for (const auto& [share, text] : advice)
    if (share >= kWorthMentioning) {
      out << separator << text;
      separator = "; ";
      any = true;
    }
  if (any) out << ".";
  else out << "No loss reaches " << format_percent(kWorthMentioning) << " of IPU time.";
}

} // namespace

std::string explain_runs(const Scenario& sc, const Simulation& sim) {
  const RunMetrics* sharded = nullptr;
  const RunMetrics* pipelined = nullptr;
  for (const ModeRun& run : sim.runs) (run.metrics.mode == Mode::Sharded ? sharded : pipelined) = &run.metrics;
  std::ostringstream out;
  if (sharded && pipelined && pipelined->step_time_s > 0) {
    const double speedup = sharded->step_time_s / pipelined->step_time_s;
    out << "pipelining is " << format_fixed(speedup >= 1 ? speedup : 1 / speedup, 2) << "x "
        << (speedup >= 1 ? "faster" : "slower") << " than sharding. ";
  }
  for (const RunMetrics* r : {sharded, pipelined})
    if (r) where_time_goes(out, *r);
  tensor_parallel_share(out, sc, sim);
  // The mode a user would keep: pipelined when it ran, else sharded.
  const RunMetrics* chosen = pipelined ? pipelined : sharded;
  if (!chosen) return "";
  bottleneck(out, *chosen, static_cast<int>(sc.execution.tensor_parallel));
  what_would_help(out, sc, *chosen);
  return out.str();
}

bool ipus_placed(const RunMetrics& run) {
  return std::any_of(run.ipus.begin(), run.ipus.end(),
                     [](const IpuMetrics& m) { return m.replica != 0 || m.virtual_ipu != m.id; });
}

std::string physical_ipu_name(const IpuMetrics& ipu, bool placed, int group) {
  std::string name = group > 1 ? "IPUs " + std::to_string(ipu.id) + "-" + std::to_string(ipu.id + group - 1)
                               : "IPU " + std::to_string(ipu.id);
  if (placed) name += " (replica " + std::to_string(ipu.replica) + ", vIPU " + std::to_string(ipu.virtual_ipu) + ")";
  return name;
}

std::string virtual_ipu_name(int virtual_ipu, bool placed) {
  return (placed ? "vIPU " : "IPU ") + std::to_string(virtual_ipu);
}

} // namespace ipusim
