#pragma once
// What a run means: step time, throughput, micro-batch latency, how each IPU spent
// the step, the bubble and the traffic per link. Computed from the engine's events as
// they come (running sums, and latency spans only for micro-batches still in flight), so
// a run needs memory for its pipeline, not for its number of micro-batches.
#include <cstdint>
#include <deque>
#include <map>
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
  int id = 0;              // the physical IPU
  int replica = 0;         // the replica whose pipeline it runs
  int virtual_ipu = 0;     // that pipeline's IPU it is (virtualGraph; the memory report's IPUs)
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

// How the step was simulated (engine.hpp, EngineOptions::steady_state).
struct SimulationStats {
  std::int64_t steps_total = 0;      // program steps of the step, all IPUs
  std::int64_t steps_simulated = 0;  // of those, simulated; the rest repeat a simulated period exactly
  // IPUs simulated: all, or the first unit's where the other units of replicas run alike
  // (sim/schedule/replica_mirrors.hpp) and are reported from it.
  std::int64_t ipus_simulated = 0;
  std::vector<std::string> not_periodic;  // long loops whose state never repeated: simulated in full
  // Groups of gradient collectives replayed apart from the network simulation (same times,
  // sim/schedule/collective_dataflow.hpp), or, when none, why their transfers were simulated.
  std::int64_t collective_groups = 0;
  std::string collectives_simulated_because;
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
  SimulationStats simulation;
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

// Takes a run's events as the engine reports them and keeps what the metrics need.
// `schedule` must outlive it.
// The figures a run's schedule fixes before it is simulated (mode, schedule, micro-batches,
// samples, replicas, cycles, sync cost): what MetricsAccumulator starts from, and all the
// parent of a forked simulation needs before the child's measured fields arrive.
RunMetrics schedule_metrics(Mode mode, const Schedule& schedule, const Execution& execution);

class MetricsAccumulator : public RunObserver {
public:
  MetricsAccumulator(Mode mode, const Schedule& schedule, const Execution& execution);
  void on_event(const Event& e) override;
  void on_transfer(const TransferRecord& t) override { attribution_.on_transfer(t); }
  bool wants_transfers() const override { return attribution_.wants_transfers(); }
  bool wants_every_step() const override { return false; }
  // Replays periods until two changed the metrics and the attribution alike, then adds the
  // rest as that period's contribution times their number (periodic.hpp); periods that
  // never settle are replayed to the end.
  void on_repeat(const RepeatedPeriods& repeat) override;
  // A mirror's figures are its source's: kept for unit 0's IPUs alone and copied at finish.
  bool reports_mirrors() const override { return true; }
  void on_mirrors(const MirroredUnits& units) override;
  RunMetrics finish(const RunSummary& summary);

private:
  struct Span {
    double first, last;
  };
  struct Totals {
    IpuMetrics metrics;
    double allreduce = 0;
    std::size_t program = 0;
  };
  void close_spans(std::int64_t below);
  void close_complete();  // the spans no program can touch any more

  // The state at the end of a replayed period.
  struct Mark {
    std::map<int, Totals> ipus;
    std::deque<Span> open;
    std::int64_t open_base = 0;
    std::vector<std::int64_t> largest;
    double latency_sum = 0;
    std::int64_t latencies = 0;
  };
  Mark mark();
  // The last of `marks` (three, oldest first) is the one before it a period later.
  // Replays `r`'s periods `stride` at a time until two strides changed the metrics alike, then
  // adds the rest of whole strides at once; `reported`: periods reported so far, moved on.
  // False when no two matched within periodic::kTries strides.
  bool add_periods_by_stride(const RepeatedPeriods& r, std::int64_t stride, std::int64_t& reported);
  bool periodic(const std::deque<Mark>& marks, const RepeatedPeriods& r) const;
  void jump(const std::deque<Mark>& marks, const RepeatedPeriods& r, std::int64_t periods);

  // The mirrors' totals, given their sources' at finish (on_mirrors).
  void add_mirrors();

  RunMetrics r_;
  std::map<int, Totals> ipus_;
  MirroredUnits mirrors_;
  std::vector<Totals> mirror_ipus_;  // IPUs of units 1 on: who they are, their figures their sources'
  TimeAttribution attribution_;
  // Latency: spans of the micro-batches still open, from `open_base_` on. A program never
  // runs a micro-batch more than its label_lag below the largest it has run, so every
  // micro-batch below min over programs of (largest run - lag) is complete.
  std::deque<Span> open_;
  std::int64_t open_base_ = 0;
  std::vector<std::int64_t> lag_, largest_;  // per program with micro-batches
  std::uint64_t events_since_close_ = 0;
  double latency_sum_ = 0;
  std::int64_t latencies_ = 0;
  double sequences_per_sample_ = 1;
};

// The metrics of a whole log (tests and tools that keep one): its transfers, then its events.
RunMetrics compute_metrics(Mode mode, const Schedule& schedule, const RunLog& log, const Execution& execution);

} // namespace ipusim
