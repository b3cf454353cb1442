#include "sim/metrics/metrics.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/io/checked_int.hpp"
#include "sim/metrics/periodic.hpp"
#include "sim/schedule/program_cursor.hpp"

namespace ipusim {

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

} // namespace

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

RunMetrics schedule_metrics(Mode mode, const Schedule& schedule, const Execution& ex) {
  RunMetrics r;
  r.mode = mode;
  r.schedule = schedule.name;
  r.micro_batches = schedule.micro_batches;
  r.replicas = schedule.replicas;
  r.samples = checked_mul(checked_mul(schedule.micro_batches, ex.micro_batch_size, "samples per step"),
                          schedule.replicas, "samples per step");
  r.cycles = schedule.cycles;
  r.sync_seconds = schedule.sync_seconds;
  return r;
}

MetricsAccumulator::MetricsAccumulator(Mode mode, const Schedule& schedule, const Execution& ex)
    : r_(schedule_metrics(mode, schedule, ex)), attribution_(schedule, mode) {
  r_.latency_s.min = kInf;
  for (std::size_t i = 0; i < schedule.programs.size(); ++i) {
    const Program& p = schedule.programs[i];
    Totals& t = ipus_[p.ipu];
    t.metrics.id = p.ipu;
    t.metrics.replica = p.replica;
    t.metrics.virtual_ipu = p.virtual_ipu;
    t.program = i;
    const bool labelled =
        std::any_of(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.micro_batch >= 0; });
    lag_.push_back(labelled ? label_lag(p) : 0);
    largest_.push_back(labelled ? kNone : kNever);
  }
  sequences_per_sample_ = ex.sequences_per_sample;
}

void MetricsAccumulator::on_mirrors(const MirroredUnits& units) {
  mirrors_ = units;
  for (auto i = ipus_.begin(); i != ipus_.end();) {
    if (i->second.program < units.programs_per_unit) {
      ++i;
      continue;
    }
    mirror_ipus_.push_back(i->second);
    i = ipus_.erase(i);
  }
  // A mirror runs its source's micro-batches when its source does: the spans close alike.
  lag_.resize(units.programs_per_unit);
  largest_.resize(units.programs_per_unit);
  attribution_.on_mirrors(units);
}

void MetricsAccumulator::add_mirrors() {
  for (Totals& mirror : mirror_ipus_) {
    const std::size_t unit = mirror.program / mirrors_.programs_per_unit;
    const Totals& source = ipus_.at(mirror.metrics.id - static_cast<int>(unit) * mirrors_.ipus_per_unit);
    IpuMetrics figures = source.metrics;
    figures.id = mirror.metrics.id;
    figures.replica = mirror.metrics.replica;
    figures.virtual_ipu = mirror.metrics.virtual_ipu;
    mirror.metrics = figures;
    mirror.allreduce = source.allreduce;
    ipus_.emplace(mirror.metrics.id, mirror);  // a mirror's id is past every source's: no source is moved
  }
  mirror_ipus_.clear();
}

void MetricsAccumulator::on_event(const Event& e) {
  attribution_.on_event(e);
  auto found = ipus_.find(e.ipu);
  if (found == ipus_.end()) {
    if (mirrors_.units > 1)  // a mirror's figures would then be that event's alone, not its source's
      throw std::logic_error("IPU " + std::to_string(e.ipu) + "'s event reached metrics that report the mirrors");
    found = ipus_.emplace(e.ipu, Totals{}).first;
    found->second.metrics.id = e.ipu;
    found->second.metrics.virtual_ipu = e.ipu;
    found->second.program = largest_.size();
    lag_.push_back(0);
    largest_.push_back(kNever);
  }
  Totals& t = found->second;
  IpuMetrics& m = t.metrics;
  const double d = e.end - e.start;
  switch (e.kind) {
  case EventKind::Compute: m.busy_s += d; break;
  case EventKind::HostInput:
  case EventKind::HostOutput:
  case EventKind::HostRoundTrip: m.host_io_s += d; break;
  case EventKind::Exchange:
    m.exchange_s += d;
    if (e.pass == Pass::AllReduce) t.allreduce += d;
    break;
  case EventKind::Sync: m.sync_s += d; break;
  case EventKind::Receive: break;  // waiting for a copy is idle time
  case EventKind::StreamingMemory: m.streaming_memory_s += d; break;
  }
  if (e.micro_batch < 0) return;
  if (e.micro_batch < r_.micro_batches) {
    if (e.micro_batch < open_base_)
      throw std::logic_error("micro-batch " + std::to_string(e.micro_batch) + " ran on IPU " + std::to_string(e.ipu) +
                             " after its latency was closed");
    const auto index = static_cast<std::size_t>(e.micro_batch - open_base_);
    if (index >= open_.size()) open_.resize(index + 1, Span{kInf, -kInf});
    Span& s = open_[index];
    s.first = std::min(s.first, e.start);
    s.last = std::max(s.last, e.end);
  }
  std::int64_t& largest = largest_[t.program];
  if (largest != kNever) largest = std::max(largest, e.micro_batch);
  // Closing costs a pass over the programs: once per that many events.
  if (++events_since_close_ < largest_.size()) return;
  close_complete();
}

void MetricsAccumulator::close_complete() {
  events_since_close_ = 0;
  std::int64_t complete_below = kNever;
  for (std::size_t p = 0; p < largest_.size(); ++p) {
    if (largest_[p] == kNone) return;
    if (largest_[p] != kNever) complete_below = std::min(complete_below, largest_[p] - lag_[p]);
  }
  close_spans(std::min(complete_below, r_.micro_batches));
}

void MetricsAccumulator::close_spans(std::int64_t below) {
  while (open_base_ < below) {
    const Span s = open_.empty() ? Span{kInf, -kInf} : open_.front();
    if (!open_.empty()) open_.pop_front();
    ++open_base_;
    const double l = s.last - s.first;
    latency_sum_ += l;
    ++latencies_;
    r_.latency_s.min = std::min(r_.latency_s.min, l);
    r_.latency_s.max = std::max(r_.latency_s.max, l);
  }
}

void MetricsAccumulator::on_repeat(const RepeatedPeriods& r) {
  if (!attribution_.can_add_periods()) {
    RunObserver::on_repeat(r);
    return;
  }
  std::int64_t reported = 0;
  for (std::int64_t stride = 1; stride <= ::ipusim::periodic::kMaxStride && reported < r.times; ++stride)
    if (add_periods_by_stride(r, stride, reported)) break;
  while (reported < r.times) r.replay(++reported, *this);
}

bool MetricsAccumulator::add_periods_by_stride(const RepeatedPeriods& r, std::int64_t stride, std::int64_t& reported) {
  // `stride` of the engine's periods taken as one: what the comparisons and the jump see.
  RepeatedPeriods every = r;
  every.iterations *= stride;
  every.label_shift *= stride;
  every.period *= static_cast<double>(stride);
  attribution_.begin_marks();
  std::deque<Mark> marks;
  marks.push_back(mark());
  attribution_.mark();
  bool added = false;
  for (std::int64_t tries = 0; tries < ::ipusim::periodic::kTries && reported + stride <= r.times && !added; ++tries) {
    for (std::int64_t k = 0; k < stride; ++k) r.replay(++reported, *this);
    marks.push_back(mark());
    attribution_.mark();
    if (marks.size() > 3) marks.pop_front();
    const std::int64_t rest = (r.times - reported) / stride;
    if (marks.size() == 3 && rest > 0 && periodic(marks, every) && attribution_.periodic(every, rest)) {
      jump(marks, every, rest);
      attribution_.add_periods(every, rest);
      reported += rest * stride;
      added = true;
    }
  }
  attribution_.end_marks();
  return added;
}

MetricsAccumulator::Mark MetricsAccumulator::mark() {
  close_complete();  // closing early changes nothing: the spans closed are complete
  return {ipus_, open_, open_base_, largest_, latency_sum_, latencies_};
}

bool MetricsAccumulator::periodic(const std::deque<Mark>& marks, const RepeatedPeriods& r) const {
  const Mark &a0 = marks[0], &a = marks[1], &b = marks[2];
  using ::ipusim::periodic::same_growth, ::ipusim::periodic::shifted;
  if (b.ipus.size() != a.ipus.size() || a.ipus.size() != a0.ipus.size()) return false;
  for (auto i = b.ipus.begin(), j = a.ipus.begin(), h = a0.ipus.begin(); i != b.ipus.end(); ++i, ++j, ++h) {
    const IpuMetrics &x0 = h->second.metrics, &x = j->second.metrics, &y = i->second.metrics;
    if (i->first != j->first || j->first != h->first) return false;
    if (!same_growth(x0.busy_s, x.busy_s, y.busy_s) || !same_growth(x0.host_io_s, x.host_io_s, y.host_io_s) ||
        !same_growth(x0.streaming_memory_s, x.streaming_memory_s, y.streaming_memory_s) ||
        !same_growth(x0.exchange_s, x.exchange_s, y.exchange_s) || !same_growth(x0.sync_s, x.sync_s, y.sync_s) ||
        !same_growth(h->second.allreduce, j->second.allreduce, i->second.allreduce))
      return false;
  }
  // Every period closes label_shift micro-batches of the same latencies and opens as many.
  if (b.open_base - a.open_base != r.label_shift || a.open_base - a0.open_base != r.label_shift) return false;
  if (b.latencies - a.latencies != a.latencies - a0.latencies) return false;
  if (!same_growth(a0.latency_sum, a.latency_sum, b.latency_sum)) return false;
  if (b.open.size() != a.open.size()) return false;
  for (std::size_t i = 0; i < b.open.size(); ++i)
    if (!shifted(a.open[i].first, b.open[i].first, r.period) || !shifted(a.open[i].last, b.open[i].last, r.period))
      return false;
  for (std::size_t p = 0; p < b.largest.size(); ++p) {
    const bool fixed = b.largest[p] == kNone || b.largest[p] == kNever;
    if (fixed ? a.largest[p] != b.largest[p] : b.largest[p] - a.largest[p] != r.label_shift) return false;
  }
  return true;
}

void MetricsAccumulator::jump(const std::deque<Mark>& marks, const RepeatedPeriods& r, std::int64_t periods) {
  const Mark &a = marks[1], &b = marks[2];
  const auto n = static_cast<double>(periods);
  auto j = a.ipus.begin();
  for (auto i = ipus_.begin(); i != ipus_.end(); ++i, ++j) {
    IpuMetrics& m = i->second.metrics;
    const IpuMetrics& x = j->second.metrics;
    m.busy_s += n * (m.busy_s - x.busy_s);
    m.host_io_s += n * (m.host_io_s - x.host_io_s);
    m.streaming_memory_s += n * (m.streaming_memory_s - x.streaming_memory_s);
    m.exchange_s += n * (m.exchange_s - x.exchange_s);
    m.sync_s += n * (m.sync_s - x.sync_s);
    i->second.allreduce += n * (i->second.allreduce - j->second.allreduce);
  }
  latency_sum_ += n * (b.latency_sum - a.latency_sum);
  latencies_ += periods * (b.latencies - a.latencies);
  const std::int64_t labels = periods * r.label_shift;
  const double later = n * r.period;
  open_base_ += labels;
  for (Span& s : open_) {
    if (!std::isinf(s.first)) s.first += later;
    if (!std::isinf(s.last)) s.last += later;
  }
  for (std::int64_t& l : largest_)
    if (l != kNone && l != kNever) l += labels;
}

RunMetrics MetricsAccumulator::finish(const RunSummary& summary) {
  close_spans(r_.micro_batches);
  RunMetrics r = std::move(r_);
  if (latencies_ > 0) r.latency_s.mean = latency_sum_ / static_cast<double>(latencies_);
  else r.latency_s.min = 0;
  r.step_time_s = summary.end_time;
  r.activities = summary.activities;
  r.throughput_samples_per_s = r.step_time_s > 0 ? static_cast<double>(r.samples) / r.step_time_s : 0;
  r.throughput_sequences_per_s = r.throughput_samples_per_s * sequences_per_sample_;
  add_mirrors();
  double idle = 0;
  for (auto& [id, t] : ipus_) {
    IpuMetrics& m = t.metrics;
    m.idle_s = std::max(0.0, r.step_time_s - m.busy_s - m.host_io_s - m.streaming_memory_s - m.exchange_s - m.sync_s);
    m.utilization = r.step_time_s > 0 ? m.busy_s / r.step_time_s : 0;
    idle += m.idle_s;
    r.allreduce_s = std::max(r.allreduce_s, t.allreduce);
    r.ipus.push_back(m);
  }
  const Attribution attribution = attribution_.finish(r.step_time_s);
  for (IpuMetrics& m : r.ipus)
    for (const IpuAttribution& a : attribution.ipus)
      if (a.ipu == m.id) {
        m.idle = a.idle;
        m.update_s = a.update_s;
        m.pipeline_work_s = a.pipeline_work_s;
      }
  r.bottleneck_ipu = attribution.bottleneck_ipu;
  r.bottleneck_stage = attribution.bottleneck_stage;
  if (r.step_time_s > 0 && !ipus_.empty())
    r.bubble_fraction = idle / (r.step_time_s * static_cast<double>(ipus_.size()));
  for (const LinkTraffic& l : summary.links)
    if (l.bytes > 0) r.links.push_back(l);
  r.simulation = {summary.steps_total, summary.steps_simulated, summary.ipus_simulated, summary.not_periodic,
                  static_cast<std::int64_t>(summary.collective_groups), summary.collectives_not_timed};
  return r;
}

RunMetrics compute_metrics(Mode mode, const Schedule& schedule, const RunLog& log, const Execution& execution) {
  MetricsAccumulator metrics(mode, schedule, execution);
  if (metrics.wants_transfers())
    for (const TransferRecord& t : log.transfers) metrics.on_transfer(t);
  for (const Event& e : log.events) metrics.on_event(e);
  RunSummary summary;
  summary.end_time = log.end_time;
  summary.links = log.links;
  summary.activities = log.activities;
  return metrics.finish(summary);
}

} // namespace ipusim
