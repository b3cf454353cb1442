#pragma once
// What a run means: step time, throughput, micro-batch latency, how each IPU spent
// the step, the bubble and the traffic per link. Derived from the engine's events only.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/io/scenario.hpp"
#include "sim/memory/memory.hpp"
#include "sim/metrics/attribution.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

struct IpuMetrics {
  int id = 0;
  double busy_s = 0;       // computing (forward, backward, weight update)
  double host_io_s = 0;    // streaming to or from the host
  double streaming_memory_s = 0;  // moving optimizer state to or from Streaming Memory
  double exchange_s = 0;   // in inter-IPU copy phases with copies of its own
  double sync_s = 0;       // paying inter-IPU syncs
  double idle_s = 0;       // waiting for other IPUs: the bubble
  IdleBreakdown idle;      // idle_s by cause (attribution.hpp)
  double update_s = 0;     // the part of busy_s spent updating weights
  double pipeline_work_s = 0;  // forward/backward compute and host I/O of its stages: what paces a pipeline
  double utilization = 0;  // busy_s / step time
};

struct LatencyStats {
  double mean = 0, min = 0, max = 0;
};

struct RunMetrics {
  Mode mode = Mode::Sharded;
  std::string schedule;
  double step_time_s = 0;
  double throughput_samples_per_s = 0;
  double throughput_sequences_per_s = 0;  // packed inputs: samples x sequencesPerSample
  LatencyStats latency_s;            // first to last activity of a micro-batch
  double bubble_fraction = 0;        // idle IPU-time / (IPUs x step time)
  std::int64_t micro_batches = 0;    // per step
  std::int64_t samples = 0;          // per step, all replicas
  int replicas = 1;
  double allreduce_s = 0;            // the longest time an IPU spent in gradient all-reduce per step
  int cycles = 0;
  double sync_seconds = 0;
  std::vector<IpuMetrics> ipus;
  int bottleneck_ipu = -1;           // the IPU with the most forward/backward work and host I/O
  int bottleneck_stage = -1;         // its heaviest stage
  std::vector<LinkTraffic> links;    // only links that carried traffic
  std::uint64_t activities = 0;
  MemoryReport memory;               // filled by simulate(); memory does not depend on timing
};

// Shares of IPU-time (IPUs x step time); they sum to 1.
struct TimeShares {
  double compute = 0, host_io = 0, streaming_memory = 0, exchange = 0, sync = 0;
  IdleBreakdown idle;
  double idle_total() const {
    return idle.fill_flush_s + idle.imbalance_s + idle.copy_wait_s + idle.update_wait_s + idle.turn_wait_s;
  }
};

TimeShares time_shares(const RunMetrics& run);

RunMetrics compute_metrics(Mode mode, const Schedule& schedule, const RunLog& log, const Execution& execution);

} // namespace ipusim
