#include "sim/metrics/metrics.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "sim/io/checked_int.hpp"

namespace ipusim {

TimeShares time_shares(const RunMetrics& r) {
  TimeShares s;
  const double total = r.step_time_s * static_cast<double>(r.ipus.size());
  if (total <= 0) return s;
  for (const IpuMetrics& m : r.ipus) {
    s.compute += m.busy_s / total;
    s.host_io += m.host_io_s / total;
    s.streaming_memory += m.streaming_memory_s / total;
    s.exchange += m.exchange_s / total;
    s.sync += m.sync_s / total;
    s.idle.fill_flush_s += m.idle.fill_flush_s / total;
    s.idle.imbalance_s += m.idle.imbalance_s / total;
    s.idle.copy_wait_s += m.idle.copy_wait_s / total;
    s.idle.update_wait_s += m.idle.update_wait_s / total;
    s.idle.turn_wait_s += m.idle.turn_wait_s / total;
  }
  return s;
}

RunMetrics compute_metrics(Mode mode, const Schedule& schedule, const RunLog& log, const Execution& ex) {
  RunMetrics r;
  r.mode = mode;
  r.schedule = schedule.name;
  r.step_time_s = log.end_time;
  r.micro_batches = schedule.micro_batches;
  r.replicas = schedule.replicas;
  r.samples = checked_mul(checked_mul(schedule.micro_batches, ex.micro_batch_size, "samples per step"),
                          schedule.replicas, "samples per step");
  r.cycles = schedule.cycles;
  r.sync_seconds = schedule.sync_seconds;
  r.activities = log.activities;
  r.throughput_samples_per_s = r.step_time_s > 0 ? static_cast<double>(r.samples) / r.step_time_s : 0;
  r.throughput_sequences_per_s = r.throughput_samples_per_s * ex.sequences_per_sample;

  std::map<int, IpuMetrics> ipus;
  std::map<int, double> allreduce;
  for (const Program& p : schedule.programs) ipus[p.ipu].id = p.ipu;
  struct Span {
    double first = std::numeric_limits<double>::infinity();
    double last = -std::numeric_limits<double>::infinity();
  };
  std::vector<Span> spans(static_cast<std::size_t>(std::max<std::int64_t>(r.micro_batches, 0)));
  for (const Event& e : log.events) {
    IpuMetrics& m = ipus[e.ipu];
    const double d = e.end - e.start;
    switch (e.kind) {
    case EventKind::Compute: m.busy_s += d; break;
    case EventKind::HostInput:
    case EventKind::HostOutput: m.host_io_s += d; break;
    case EventKind::Exchange:
      m.exchange_s += d;
      if (e.pass == Pass::AllReduce) allreduce[e.ipu] += d;
      break;
    case EventKind::Sync: m.sync_s += d; break;
    case EventKind::Receive: break;  // waiting for a copy is idle time
    case EventKind::StreamingMemory: m.streaming_memory_s += d; break;
    }
    if (e.micro_batch >= 0 && e.micro_batch < r.micro_batches) {
      Span& s = spans[static_cast<std::size_t>(e.micro_batch)];
      s.first = std::min(s.first, e.start);
      s.last = std::max(s.last, e.end);
    }
  }
  for (const auto& [ipu, seconds] : allreduce) r.allreduce_s = std::max(r.allreduce_s, seconds);
  double idle = 0;
  for (auto& [id, m] : ipus) {
    m.idle_s = std::max(0.0, r.step_time_s - m.busy_s - m.host_io_s - m.streaming_memory_s - m.exchange_s - m.sync_s);
    m.utilization = r.step_time_s > 0 ? m.busy_s / r.step_time_s : 0;
    idle += m.idle_s;
    r.ipus.push_back(m);
  }
  const Attribution attribution = attribute_time(schedule, log, mode);
  for (IpuMetrics& m : r.ipus)
    for (const IpuAttribution& a : attribution.ipus)
      if (a.ipu == m.id) {
        m.idle = a.idle;
        m.update_s = a.update_s;
        m.pipeline_work_s = a.pipeline_work_s;
      }
  r.bottleneck_ipu = attribution.bottleneck_ipu;
  r.bottleneck_stage = attribution.bottleneck_stage;
  if (r.step_time_s > 0 && !ipus.empty()) r.bubble_fraction = idle / (r.step_time_s * static_cast<double>(ipus.size()));

  if (!spans.empty()) {
    r.latency_s.min = std::numeric_limits<double>::infinity();
    double sum = 0;
    for (const Span& s : spans) {
      const double l = s.last - s.first;
      sum += l;
      r.latency_s.min = std::min(r.latency_s.min, l);
      r.latency_s.max = std::max(r.latency_s.max, l);
    }
    r.latency_s.mean = sum / static_cast<double>(spans.size());
  }
  for (const LinkTraffic& l : log.links)
    if (l.bytes > 0) r.links.push_back(l);
  return r;
}

} // namespace ipusim
