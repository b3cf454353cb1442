#include "sim/search/transfer_timer.hpp"

#include <algorithm>

#include "sim/schedule/racks.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// The engine sends whole bytes (a transfer's size is a count of bytes).
double whole(double bytes) { return static_cast<double>(static_cast<std::uint64_t>(bytes)); }

// The replicas' rings of the weight-update collectives timed step by step on the IPUs' clocks:
// a transfer starts once both ends have reached the step; an IPU's step ends when its send and
// its receive have both landed.
class RingTimer {
public:
  // Link sharing is noted in `use` unless `noted` (found once already, or not wanted).
  RingTimer(const TransferTimer& timer, RouteTable& routes, std::size_t ipus, LinkUse& use, bool noted)
      : timer_(timer), routes_(routes), use_(use), noted_(noted), clock_(ipus, 0.0) {}

  // The time the replicas of virtual IPU `v` (grouped in `racks`) finish the rings of their
  // `bytes` of weights: reduce-scatter in racks then across, all-gather across then in racks.
  // Each column runs on IPUs of its own, from time 0: its time depends on its own figures only.
  double column_seconds(int v, const std::vector<std::vector<int>>& racks, double bytes, double pairs,
                        bool reduce_scatter, bool all_gather) {
    const auto in_rack = static_cast<double>(racks.front().size());
    const auto across = static_cast<double>(racks.size());
    auto in_racks = [&] {
      for (const auto& members : racks) ring(v, members, bytes / in_rack, members.size() - 1);
    };
    auto across_racks = [&] {
      if (racks.size() < 2) return;
      for (std::size_t i = 0; i < racks.front().size(); ++i) {
        std::vector<int> members;
        for (const auto& rack : racks) members.push_back(rack[i]);
        ring(v, members, bytes / in_rack / across, racks.size() - 1);
      }
    };
    if (reduce_scatter) in_racks(), across_racks();
    if (all_gather) across_racks(), in_racks();
    if (reduce_scatter && pairs > 1) {
      const double extra = (pairs - 1) * per_pair_latency(v, racks);
      for (const auto& members : racks)
        for (int r : members) clock_[static_cast<std::size_t>(timer_.physical(r, v))] += extra;
    }
    double column = 0;
    for (int r = 0; r < timer_.replicas(); ++r)
      column = std::max(column, clock_[static_cast<std::size_t>(timer_.physical(r, v))]);
    return column;
  }

private:
  struct Send {
    std::size_t i, j;  // members
    std::size_t a, b;  // their physical IPUs
    const RouteTable::Path* path;
    double seconds;
  };

  // `steps` steps of one ring. Each sends half the chunk each way round (collectives.cpp); an
  // IPU's step ends when its two sends and two receives have landed. Two members are each
  // other's neighbour both ways: their halves share one direction of the route, as one
  // transfer of the whole chunk. Every step moves the same bytes between the same IPUs, so
  // the routes are looked up once.
  void ring(int v, const std::vector<int>& members, double chunk, std::size_t steps) {
    const auto n = members.size();
    const std::vector<std::size_t> ways = n == 2 ? std::vector<std::size_t>{1} : std::vector<std::size_t>{1, n - 1};
    const double part = n == 2 ? chunk : chunk / 2;
    sends_.clear();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t way : ways) {
        const std::size_t j = (i + way) % n;
        const int a = timer_.physical(members[i], v), b = timer_.physical(members[j], v);
        const RouteTable::Path& p = routes_.path(a, b);
        sends_.push_back({i, j, static_cast<std::size_t>(a), static_cast<std::size_t>(b), &p, p.seconds(whole(part))});
      }
    for (std::size_t step = 0; step < steps; ++step) {
      end_.assign(n, 0);
      for (const Send& s : sends_) {
        const double start = std::max(clock_[s.a], clock_[s.b]);
        const double done = start + s.seconds;
        if (!noted_) use_.add(s.path->slots, start, done);
        end_[s.i] = std::max(end_[s.i], done);
        end_[s.j] = std::max(end_[s.j], done);
      }
      for (const Send& s : sends_) clock_[s.a] = end_[s.i];
    }
  }

  // The latency of PopART's further collectives (ProgramBuilder::per_tensor_collectives), laid
  // out with the reduce-scatter: what each reduce-scatter / all-gather pair beyond the first adds.
  double per_pair_latency(int v, const std::vector<std::vector<int>>& racks) const {
    auto hop = [&](int a, int b) { return routes_.path(timer_.physical(a, v), timer_.physical(b, v)).latency; };
    const auto in_rack = static_cast<double>(racks.front().size());
    const auto across = static_cast<double>(racks.size());
    double inside = 0, between = 0;
    for (const auto& members : racks)
      for (std::size_t i = 0; i < members.size(); ++i)
        inside = std::max(inside, hop(members[i], members[(i + 1) % members.size()]));
    for (std::size_t k = 0; racks.size() > 1 && k < racks.size(); ++k)
      between = std::max(between, hop(racks[k].front(), racks[(k + 1) % racks.size()].front()));
    double per_pair = 2 * (in_rack - 1) * (inside + timer_.sync());
    if (racks.size() > 1) per_pair += 2 * (across - 1) * (between + timer_.sync());
    return per_pair;
  }

  const TransferTimer& timer_;
  RouteTable& routes_;
  LinkUse& use_;
  const bool noted_;
  std::vector<double> clock_;  // physical IPU -> time since the phase began
  // Reused from ring to ring.
  std::vector<Send> sends_;
  std::vector<double> end_;
};

} // namespace

std::string contention_reason(unsigned c) {
  static const std::vector<std::pair<unsigned, const char*>> reasons{
      {kSharedHostLink, "IPUs behind one host link stream in the same cycle"},
      {kSharedCopyLinks, "copies in flight at once share an IPU-Link"},
      {kSharedStreamingMemory, "overlapped weight updates share a Streaming Memory (taken as its total bytes)"},
      {kCrossingRings, "all-reduce rings share an IPU-Link"},
      {kIoTiles, "host streams on I/O tiles overlap compute: taken as the larger of the two"},
      {kStageUpdatesWithReplicas, "per-micro-batch weight updates with replicas: all-reduce not modelled"},
  };
  std::string out;
  for (const auto& [bit, text] : reasons)
    if (c & bit) out += (out.empty() ? "" : "; ") + std::string(text);
  return out;
}

bool LinkUse::contended() {
  // By slot first (a counting sort: slots are few, spans many), then each slot's spans by time,
  // which they mostly are already (a ring's steps follow one another).
  int slots = 0;
  for (const Span& s : busy_) slots = std::max(slots, s.slot + 1);
  std::vector<std::size_t> first(static_cast<std::size_t>(slots) + 1, 0);
  for (const Span& s : busy_) ++first[static_cast<std::size_t>(s.slot) + 1];
  for (std::size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
  std::vector<Span> by_slot(busy_.size());
  std::vector<std::size_t> next(first.begin(), first.end() - 1);
  for (const Span& s : busy_) by_slot[next[static_cast<std::size_t>(s.slot)]++] = s;
  const auto earlier = [](const Span& a, const Span& b) { return a.start != b.start ? a.start < b.start : a.end < b.end; };
  for (std::size_t k = 0; k + 1 < first.size(); ++k) {
    const auto begin = by_slot.begin() + static_cast<std::ptrdiff_t>(first[k]);
    const auto end = by_slot.begin() + static_cast<std::ptrdiff_t>(first[k + 1]);
    if (!std::is_sorted(begin, end, earlier)) std::sort(begin, end, earlier);
    for (auto it = begin; it != end && it + 1 != end; ++it)
      if ((it + 1)->start < it->end) return true;
  }
  return false;
}

TransferTimer::TransferTimer(const Execution& ex, const Plan& plan, RouteTable& routes)
    : ex_(ex), plan_(plan), hw_(routes.hardware()), routes_(routes) {
  replicas_ = static_cast<int>(ex_.replicas);
  width_ = plan.ipus.back().id + 1;
  sync_ = hw_.sync_seconds(static_cast<int>(plan.ipus.size()) * replicas_ *
                           static_cast<int>(std::max<std::int64_t>(1, ex_.tensor_parallel)));  // as make_schedule counts
}

int TransferTimer::physical(int replica, int virtual_ipu) const {
  if (!ex_.placement.empty()) return static_cast<int>(ex_.placement[static_cast<std::size_t>(replica * width_ + virtual_ipu)]);
  return unplaced_ipu(replica, virtual_ipu, width_, ex_.tensor_parallel);
}

bool TransferTimer::prefetched() const {
  return ex_.prefetch_data_streams && hw_.host_link.gateway_bandwidth_bytes_per_s > 0;
}

void TransferTimer::note_host_streams(const std::vector<int>& virtual_ipus) {
  // Once noted, not looked for again: the evaluators ask once per step or stage of every
  // candidate, and a vector indexed by host link, not a map, since the planner does too.
  if ((contention & kSharedHostLink) || hw_.host_link.shared_by <= 1) return;
  std::vector<char> streaming;
  for (int r = 0; r < replicas_; ++r)
    for (int ipu : virtual_ipus) {
      const auto link = static_cast<std::size_t>(physical(r, ipu) / hw_.host_link.shared_by);
      if (link >= streaming.size()) streaming.resize(link + 1, 0);
      if (streaming[link]) {
        contention |= kSharedHostLink;
        return;
      }
      streaming[link] = 1;
    }
}

double TransferTimer::host_seconds(double bytes) const {
  if (prefetched()) return hw_.host_link.latency_s + bytes / hw_.host_link.gateway_bandwidth_bytes_per_s;
  return hw_.host_link.latency_s + whole(bytes) / hw_.host_link.bandwidth_bytes_per_s;
}

double TransferTimer::step_seconds(double device, std::int64_t micro_batches) const {
  double floor = 0;
  if (prefetched() && ex_.host_io) {
    // Indexed by host link, not a map: this runs once per candidate of a search, over every
    // replica's stages (496 of them on a POD256 of 16-IPU pipelines).
    std::vector<double> bytes_of_link;
    for (int r = 0; r < replicas_; ++r)
      for (const PlanStage& st : plan_.stages) {
        const auto link = static_cast<std::size_t>(physical(r, st.ipu) / hw_.host_link.shared_by);
        if (link >= bytes_of_link.size()) bytes_of_link.resize(link + 1, 0.0);
        bytes_of_link[link] += (st.host_input_bytes + st.host_output_bytes) * static_cast<double>(micro_batches);
      }
    for (double bytes : bytes_of_link) floor = std::max(floor, bytes / hw_.host_link.bandwidth_bytes_per_s);
  }
  return std::max(device, floor) + hw_.host_link.run_overhead_s;
}

double TransferTimer::memory_seconds(double bytes) const {
  return hw_.streaming_memory.latency_s + whole(bytes) / hw_.streaming_memory.bandwidth_bytes_per_s;
}

double TransferTimer::transfer_seconds(int src, int dst, double bytes, double start, LinkUse& use) {
  const RouteTable::Path& p = routes_.path(src, dst);
  const double d = p.seconds(whole(bytes));
  if (routes_.note_link_sharing) use.add(p.slots, start, start + d);
  return d;
}

double TransferTimer::copy_seconds(const PlanCopy& c, LinkUse& use) {
  const bool memo = !routes_.note_link_sharing && ex_.placement.empty();
  const RouteTable::ReplicatedCopy key{width_, replicas_, std::max<std::int64_t>(1, ex_.tensor_parallel), c.src_ipu, c.dst_ipu,
                                       c.bytes};
  if (memo)
    if (const auto it = routes_.copy_seconds.find(key); it != routes_.copy_seconds.end()) return it->second;
  double slowest = 0;
  for (int r = 0; r < replicas_; ++r)
    slowest = std::max(slowest, transfer_seconds(physical(r, c.src_ipu), physical(r, c.dst_ipu), c.bytes, 0, use));
  if (memo) routes_.copy_seconds.emplace(key, slowest);
  return slowest;
}

double TransferTimer::weight_update_seconds(bool all_at_once) {
  const bool sharded_state = ex_.replicated_tensor_sharding && replicas_ > 1;
  double t = sync_;
  if (replicas_ > 1) t += collectives_seconds(true, !sharded_state) + sync_;
  const auto& excluded = ex_.weight_update_excluded_ipus;
  auto is_excluded = [&](int id) {
    return !all_at_once && std::find(excluded.begin(), excluded.end(), id) != excluded.end();
  };
  auto has_update = [](const PlanIpu& ipu, double f) { return f > 0 && (ipu.update_seconds > 0 || ipu.state_bytes > 0); };
  auto one = [&](const PlanIpu& ipu, double f) {
    return ipu.update_seconds * f + (ipu.state_bytes > 0 ? 2 * memory_seconds(ipu.state_bytes * f) : 0.0);
  };
  const WeightUpdateSchedule schedule = all_at_once ? WeightUpdateSchedule::OverlapCycleOptimized : ex_.weight_update_schedule;
  if (schedule == WeightUpdateSchedule::Serial) {
    for (const PlanIpu& ipu : plan_.ipus)
      if (has_update(ipu, 1)) t += one(ipu, 1) + sync_;
  } else {
    for (const PlanIpu& ipu : plan_.ipus)
      if (is_excluded(ipu.id) && has_update(ipu, 1)) t += one(ipu, 1) + sync_;
    const bool by_shape = schedule == WeightUpdateSchedule::OverlapMemoryOptimized;
    double together = 0;
    // Updates overlapped on IPUs behind one Streaming Memory share its bandwidth: the memory
    // moves all their state in and out (the replicas' IPUs are behind other memories).
    std::map<int, std::pair<int, double>> per_memory;  // loads, bytes there and back
    for (const PlanIpu& ipu : plan_.ipus) {
      const double f = by_shape ? ipu.shared_update_fraction : 1;
      if (is_excluded(ipu.id) || !has_update(ipu, f)) continue;
      together = std::max(together, one(ipu, f));
      if (ipu.state_bytes > 0 && hw_.streaming_memory.present) {
        auto& m = per_memory[physical(0, ipu.id) / hw_.streaming_memory.shared_by];
        ++m.first;
        m.second += 2 * whole(ipu.state_bytes * f);
      }
    }
    for (const auto& [memory, use] : per_memory)
      if (use.first > 1) {
        contention |= kSharedStreamingMemory;
        together = std::max(together, hw_.streaming_memory.latency_s + use.second / hw_.streaming_memory.bandwidth_bytes_per_s);
      }
    t += together + sync_;
    if (by_shape)
      for (const PlanIpu& ipu : plan_.ipus)
        if (!is_excluded(ipu.id) && has_update(ipu, 1 - ipu.shared_update_fraction))
          t += one(ipu, 1 - ipu.shared_update_fraction) + sync_;
  }
  if (sharded_state) t += collectives_seconds(false, true) + sync_;
  return t;
}

// The replicas' rings, as collectives.cpp lays them out, timed step by step (RingTimer).
// Returns the time the last IPU finishes.
double TransferTimer::collectives_seconds(bool reduce_scatter, bool all_gather) {
  // Kept from call to call: a POD256's rings note tens of thousands of spans a candidate, and
  // a buffer that size, allocated afresh, is mapped and unmapped each time.
  thread_local LinkUse use;
  use.clear();
  // Link sharing is noted until it is found once (it is a note on the estimate, not a term).
  const bool noted = (contention & kCrossingRings) != 0 || !routes_.note_link_sharing;
  RingTimer rings(*this, routes_, static_cast<std::size_t>(hw_.ipu_count), use, noted);
  // A column's time is kept for the candidates after (where sharing is not noted: that needs every span).
  const bool memo = noted && ex_.placement.empty();
  const std::int64_t group = std::max<std::int64_t>(1, ex_.tensor_parallel);
  const bool sharded_state = ex_.replicated_tensor_sharding && replicas_ > 1;
  double last = 0;
  for (const PlanIpu& ipu : plan_.ipus) {
    if (ipu.weight_bytes <= 0) continue;
    const double pairs = reduce_scatter ? collective_pairs(ex_, ipu, sharded_state) : 0;
    const RouteTable::RingColumn key{ipu.id, width_, replicas_, group, ipu.weight_bytes, pairs, reduce_scatter, all_gather, sync_};
    if (memo) {
      const auto it = routes_.ring_column_seconds.find(key);
      if (it != routes_.ring_column_seconds.end()) {
        last = std::max(last, it->second);
        continue;
      }
    }
    const double column =
        rings.column_seconds(ipu.id, racks_of(ipu.id), ipu.weight_bytes, pairs, reduce_scatter, all_gather);
    if (memo) routes_.ring_column_seconds.emplace(key, column);
    last = std::max(last, column);
  }
  if (!noted && use.contended()) contention |= kCrossingRings;
  return last;
}

std::vector<std::vector<int>> TransferTimer::racks_of(int v) const {
  std::vector<int> ipus;
  for (int r = 0; r < replicas_; ++r) ipus.push_back(physical(r, v));
  return replicas_by_rack(ipus, hw_.rack_ipus);
}

} // namespace ipusim
