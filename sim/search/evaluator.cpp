#include "sim/search/evaluator.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "sim/io/input_error.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/racks.hpp"

namespace ipusim {

namespace {

// The engine sends whole bytes (a transfer's size is a count of bytes).
double whole(double bytes) { return static_cast<double>(static_cast<std::uint64_t>(bytes)); }

// Busy intervals per directed link: two transfers overlapping on one link share its bandwidth.
class LinkUse {
public:
  void add(int slot, double start, double end) { busy_[slot].emplace_back(start, end); }
  bool contended() const {
    for (auto [slot, spans] : busy_) {
      std::sort(spans.begin(), spans.end());
      for (std::size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) return true;
    }
    return false;
  }
  void clear() { busy_.clear(); }

private:
  std::map<int, std::vector<std::pair<double, double>>> busy_;
};

class PopartEvaluator {
public:
  PopartEvaluator(const Scenario& sc, const Plan& plan) : sc_(sc), plan_(plan), hw_(sc.hardware), routes_(hw_) {
    const Execution& ex = sc.execution;
    replicas_ = static_cast<int>(ex.replicas);
    width_ = plan.ipus.back().id + 1;
    sync_ = hw_.sync_seconds(static_cast<int>(plan.ipus.size()) * replicas_);
    recompute_ = ex.recomputation == Recomputation::Pipeline;
  }

  StepEstimate run() {
    const Execution& ex = sc_.execution;
    const bool accumulating = plan_.training && ex.gradient_accumulation > 1;
    const std::int64_t depth = accumulating ? ex.gradient_accumulation : ex.batches_per_step;
    const std::int64_t batches = accumulating ? ex.batches_per_step : 1;
    const auto S = static_cast<std::int64_t>(plan_.stage_count());
    if (depth < S)
      throw InputError(sc_.file, sc_.execution_pointer(accumulating ? "gradientAccumulation" : "batchesPerStep"),
                       "pipeline.depth", "PopART's depth rule needs the depth >= S: " + std::to_string(depth) + " < " +
                                             std::to_string(S));
    const double copy_phase = copy_phase_seconds();
    StepEstimate e;
    double batch = 0;
    for (std::int64_t c = 0; c < depth + S - 1; ++c) {
      double slowest = 0;
      for (const PlanIpu& ipu : plan_.ipus) slowest = std::max(slowest, segment_seconds(ipu, c, depth, accumulating));
      const double cycle = slowest + sync_ + copy_phase;
      if (c == S - 1) e.cycle_seconds = cycle;
      batch += cycle;
    }
    if (accumulating) {
      e.update_seconds = weight_update_seconds();
      batch += e.update_seconds;
    }
    e.step_seconds = static_cast<double>(batches) * batch;
    e.latency_seconds = static_cast<double>(S) * e.cycle_seconds;
    e.exact = reasons_.empty();
    for (const std::string& r : reasons_) e.inexact_reason += (e.inexact_reason.empty() ? "" : "; ") + r;
    return e;
  }

private:
  int physical(int replica, int virtual_ipu) const {
    const auto i = static_cast<std::size_t>(replica * width_ + virtual_ipu);
    return sc_.execution.placement.empty() ? static_cast<int>(i) : static_cast<int>(sc_.execution.placement[i]);
  }
  void inexact(const std::string& why) {
    if (std::find(reasons_.begin(), reasons_.end(), why) == reasons_.end()) reasons_.push_back(why);
  }

  double host_seconds(double bytes) const {
    return hw_.host_link.latency_s + whole(bytes) / hw_.host_link.bandwidth_bytes_per_s;
  }
  double memory_seconds(double bytes) const {
    return hw_.streaming_memory.latency_s + whole(bytes) / hw_.streaming_memory.bandwidth_bytes_per_s;
  }

  // One IPU's work in lockstep cycle c: host inputs, its active stages, host outputs.
  double segment_seconds(const PlanIpu& ipu, std::int64_t c, std::int64_t depth, bool accumulating) {
    const Execution& ex = sc_.execution;
    double compute = 0, io = 0;
    int inputs = 0, outputs = 0;
    for (int s : ipu.stages) {
      if (!(s <= c && c < s + depth)) continue;
      const PlanStage& st = plan_.stages[static_cast<std::size_t>(s)];
      if (!st.backward) compute += st.forward_seconds;
      if (st.backward || st.backward_seconds > 0)
        compute += st.backward_seconds + (recompute_ ? st.recompute_seconds : 0.0);
      if (plan_.training && !accumulating && (st.update_seconds > 0 || st.state_bytes > 0)) {
        compute += st.update_seconds + (st.state_bytes > 0 ? 2 * memory_seconds(st.state_bytes) : 0.0);
        if (replicas_ > 1) inexact("per-micro-batch weight updates with replicas: all-reduce not modelled");
      }
      if (ex.host_io && st.host_input_bytes > 0) io += host_seconds(st.host_input_bytes), ++inputs;
      if (ex.host_io && st.host_output_bytes > 0) io += host_seconds(st.host_output_bytes), ++outputs;
    }
    if ((inputs > 0 || outputs > 0) && hw_.host_link.shared_by > 1) note_host_sharing(ipu, c, depth);
    if (ex.io_tiles > 0 && io > 0) {
      inexact("host streams on I/O tiles overlap compute: taken as the larger of the two");
      return std::max(compute, io);
    }
    return compute + io;
  }

  // IPUs behind one host link streaming in the same cycle share it.
  void note_host_sharing(const PlanIpu& me, std::int64_t c, std::int64_t depth) {
    const int group = hw_.host_link.shared_by;
    for (int r = 0; r < replicas_; ++r)
      for (int r2 = 0; r2 < replicas_; ++r2)
        for (const PlanIpu& other : plan_.ipus) {
          if ((r2 == r && other.id == me.id) || physical(r, me.id) / group != physical(r2, other.id) / group) continue;
          for (int s : other.stages) {
            const PlanStage& st = plan_.stages[static_cast<std::size_t>(s)];
            if (s <= c && c < s + depth && (st.host_input_bytes > 0 || st.host_output_bytes > 0))
              inexact("IPUs behind one host link stream in the same cycle");
          }
        }
  }

  // Every copy of every replica moves at once in each cycle's copy phase.
  double copy_phase_seconds() {
    double longest = 0;
    LinkUse use;
    for (int r = 0; r < replicas_; ++r)
      for (const PlanCopy& c : plan_.copies) {
        const double d = transfer_seconds(physical(r, c.src_ipu), physical(r, c.dst_ipu), c.bytes, 0, use);
        longest = std::max(longest, d);
      }
    if (use.contended()) inexact("copies of one copy phase share an IPU-Link");
    return longest;
  }

  // Latency along the route plus the bytes at the route's narrowest link (SimGrid CM02).
  double transfer_seconds(int src, int dst, double bytes, double start, LinkUse& use) {
    double latency = 0, bandwidth = 0;
    const Route route = routes_.route(src, dst);
    for (const Hop& hop : route) {
      const LinkSpec& link = hw_.links[static_cast<std::size_t>(hop.link)];
      latency += link.latency_s;
      bandwidth = bandwidth == 0 ? link.bandwidth_bytes_per_s : std::min(bandwidth, link.bandwidth_bytes_per_s);
    }
    const double d = latency + whole(bytes) / bandwidth;
    for (const Hop& hop : route) use.add(2 * hop.link + (hop.forward ? 0 : 1), start, start + d);
    return d;
  }

  // ProgramBuilder::weight_updates, timed: all-reduce rings, then each IPU's update.
  double weight_update_seconds() {
    const Execution& ex = sc_.execution;
    const bool sharded_state = ex.replicated_tensor_sharding && replicas_ > 1;
    double t = sync_;
    if (replicas_ > 1) {
      t += collectives_seconds(true, !sharded_state) + sync_;
    }
    const auto& excluded = ex.weight_update_excluded_ipus;
    auto is_excluded = [&](int id) { return std::find(excluded.begin(), excluded.end(), id) != excluded.end(); };
    auto has_update = [](const PlanIpu& ipu, double f) { return f > 0 && (ipu.update_seconds > 0 || ipu.state_bytes > 0); };
    auto one = [&](const PlanIpu& ipu, double f) { return ipu.update_seconds * f + (ipu.state_bytes > 0 ? 2 * memory_seconds(ipu.state_bytes * f) : 0.0); };
    if (ex.weight_update_schedule == WeightUpdateSchedule::Serial) {
      for (const PlanIpu& ipu : plan_.ipus)
        if (has_update(ipu, 1)) t += one(ipu, 1) + sync_;
    } else {
      for (const PlanIpu& ipu : plan_.ipus)
        if (is_excluded(ipu.id) && has_update(ipu, 1)) t += one(ipu, 1) + sync_;
      const bool by_shape = ex.weight_update_schedule == WeightUpdateSchedule::OverlapMemoryOptimized;
      double together = 0;
      std::map<int, int> loads_per_memory;
      for (const PlanIpu& ipu : plan_.ipus) {
        const double f = by_shape ? ipu.shared_update_fraction : 1;
        if (is_excluded(ipu.id) || !has_update(ipu, f)) continue;
        together = std::max(together, one(ipu, f));
        if (ipu.state_bytes > 0 && hw_.streaming_memory.present)
          ++loads_per_memory[physical(0, ipu.id) / hw_.streaming_memory.shared_by];
      }
      for (auto [memory, loads] : loads_per_memory)
        if (loads > 1) inexact("overlapped weight updates share a Streaming Memory");
      t += together + sync_;
      if (by_shape)
        for (const PlanIpu& ipu : plan_.ipus)
          if (!is_excluded(ipu.id) && has_update(ipu, 1 - ipu.shared_update_fraction))
            t += one(ipu, 1 - ipu.shared_update_fraction) + sync_;
    }
    if (sharded_state) t += collectives_seconds(false, true) + sync_;
    return t;
  }

  // The replicas' rings, as collectives.cpp lays them out, timed step by step: a transfer
  // starts once both ends have reached the step; an IPU's step ends when its send and its
  // receive have both landed. Returns the time the last IPU finishes.
  double collectives_seconds(bool reduce_scatter, bool all_gather) {
    std::map<int, double> clock;  // physical IPU -> time since the phase began
    LinkUse use;
    auto ring = [&](int v, const std::vector<int>& members, double chunk) {
      const auto n = members.size();
      std::vector<double> send_end(n), recv_end(n);
      for (std::size_t i = 0; i < n; ++i) {
        const int a = physical(members[i], v), b = physical(members[(i + 1) % n], v);
        const double start = std::max(clock[a], clock[b]);
        const double end = start + transfer_seconds(a, b, chunk, start, use);
        send_end[i] = end;
        recv_end[(i + 1) % n] = end;
      }
      for (std::size_t i = 0; i < n; ++i) clock[physical(members[i], v)] = std::max(send_end[i], recv_end[i]);
    };
    for (const PlanIpu& ipu : plan_.ipus) {
      if (ipu.weight_bytes <= 0) continue;
      const auto racks = racks_of(ipu.id);
      const auto in_rack = static_cast<double>(racks.front().size());
      const auto across = static_cast<double>(racks.size());
      auto in_racks = [&] {
        for (const auto& members : racks)
          for (std::size_t step = 0; step + 1 < members.size(); ++step) ring(ipu.id, members, ipu.weight_bytes / in_rack);
      };
      auto across_racks = [&] {
        if (racks.size() < 2) return;
        for (std::size_t i = 0; i < racks.front().size(); ++i) {
          std::vector<int> members;
          for (const auto& rack : racks) members.push_back(rack[i]);
          for (std::size_t step = 0; step + 1 < racks.size(); ++step)
            ring(ipu.id, members, ipu.weight_bytes / in_rack / across);
        }
      };
      if (reduce_scatter) in_racks(), across_racks();
      if (all_gather) across_racks(), in_racks();
    }
    if (use.contended()) inexact("all-reduce rings share an IPU-Link");
    double end = 0;
    for (auto [ipu, t] : clock) end = std::max(end, t);
    return end;
  }

  std::vector<std::vector<int>> racks_of(int v) const {
    std::vector<int> ipus;
    for (int r = 0; r < replicas_; ++r) ipus.push_back(physical(r, v));
    return replicas_by_rack(ipus, hw_.rack_ipus);
  }

  const Scenario& sc_;
  const Plan& plan_;
  const HardwareConfig& hw_;
  RouteFinder routes_;
  int replicas_ = 1, width_ = 1;
  double sync_ = 0;
  bool recompute_ = false;
  std::vector<std::string> reasons_;
};

} // namespace

StepEstimate estimate_popart_step(const Scenario& scenario, const Plan& plan) {
  return PopartEvaluator(scenario, plan).run();
}

} // namespace ipusim
