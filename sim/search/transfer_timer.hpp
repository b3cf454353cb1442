#pragma once
// What the planner's evaluators share: transfers timed as SimGrid's CM02 model times a lone
// flow (the route's latencies plus the whole bytes over its narrowest link), the routes
// cached per system, a record of which directed links are busy when (to say when two
// transfers would share one, which the evaluators then do not model), and the weight-update
// phase as ProgramBuilder::weight_updates lays it out (ring collectives across the replicas,
// each IPU's state load, compute and store, serially or overlapped).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"

namespace ipusim {

// Why an estimate is approximate: where transfers would share a link or a memory.
enum Contention : unsigned {
  kNoContention = 0,
  kSharedHostLink = 1u << 0,         // IPUs behind one host link stream in the same cycle
  kSharedCopyLinks = 1u << 1,        // copies of one copy phase (or in flight at once) share an IPU-Link
  kSharedStreamingMemory = 1u << 2,  // overlapped weight updates load state from one Streaming Memory
  kCrossingRings = 1u << 3,          // all-reduce rings share an IPU-Link
  kIoTiles = 1u << 4,                // host streams on I/O tiles overlap compute
  kStageUpdatesWithReplicas = 1u << 5,  // per-micro-batch weight updates with replicas
};
std::string contention_reason(unsigned contention);

// One system's routes, kept across the candidates of a search.
class RouteTable {
public:
  explicit RouteTable(const HardwareConfig& hardware) : hw_(hardware), paths_(hardware) {}
  explicit RouteTable(HardwareConfig&&) = delete;
  using Path = RoutePath;
  const Path& path(int src, int dst) { return paths_.path(src, dst); }
  const HardwareConfig& hardware() const { return hw_; }
  // Whether the evaluators using this table find out where transfers would share a link (copies
  // or all-reduce rings: a note on the estimate, not a term of it). The planner's search turns
  // it off: it reports only the answers it re-estimates, and on a POD256 the check took a third
  // of its time.
  bool note_link_sharing = true;
  // One IPU column's collectives (its replicas' rings and further collectives' latency), by
  // what they depend on: virtual IPU, pipeline width, replicas, group size, weight bytes,
  // collective pairs, reduce-scatter, all-gather, sync. A search times the same column for many
  // candidates (the same block of layers under other micro-batches, G, schedules, settings).
  using RingColumn = std::tuple<int, int, int, std::int64_t, double, double, bool, bool, double>;
  std::map<RingColumn, double> ring_column_seconds;
  // A copy in every replica at once, the slowest of them, by pipeline width, replicas, group
  // size, source and destination virtual IPUs and bytes (the search's copy phases repeat them).
  using ReplicatedCopy = std::tuple<int, int, std::int64_t, int, int, double>;
  std::map<ReplicatedCopy, double> copy_seconds;

private:
  const HardwareConfig& hw_;
  PathTable paths_;
};

// Busy intervals per directed link: two transfers overlapping on one link share its bandwidth.
class LinkUse {
public:
  void add(const std::vector<int>& slots, double start, double end) {
    for (int slot : slots) busy_.push_back({slot, start, end});
  }
  bool contended();  // sorts what was added
  void clear() { busy_.clear(); }  // keeps the memory

private:
  struct Span {
    int slot;
    double start, end;
  };
  std::vector<Span> busy_;  // one vector: a POD256's rings add tens of thousands a candidate
};

// The IPU that runs virtual IPU `virtual_ipu` of replica `replica` when no placement is given:
// the replicas side by side, `width` virtual IPUs each, and with tensor parallelism a virtual
// IPU a group of `group` consecutive IPUs named by its first (physical_ipus' rule, which the
// engine runs).
inline int unplaced_ipu(int replica, int virtual_ipu, int width, std::int64_t group) {
  return static_cast<int>((static_cast<std::int64_t>(replica) * width + virtual_ipu) * std::max<std::int64_t>(1, group));
}

class TransferTimer {
public:
  // `plan`'s virtual IPUs in `execution.replicas` replicas, on the IPUs `execution.placement` names.
  TransferTimer(const Execution& execution, const Plan& plan, RouteTable& routes);

  int physical(int replica, int virtual_ipu) const;
  int replicas() const { return replicas_; }
  double sync() const { return sync_; }
  // A host stream as the IPU waits for it: through the IPU-Gateway when prefetched.
  double host_seconds(double bytes) const;
  bool prefetched() const;
  // Notes kSharedHostLink when the replicas' copies of `virtual_ipus` (IPUs streaming at once;
  // one listed twice streams twice) sit behind one host link.
  void note_host_streams(const std::vector<int>& virtual_ipus);
  // The step the engine ends with: no shorter than the host's legs of the prefetched streams
  // of `micro_batches` micro-batches, then the host's turn (ProgramBuilder::host_round_trip).
  double step_seconds(double device, std::int64_t micro_batches) const;
  double memory_seconds(double bytes) const;
  // The transfer from `src` to `dst`, starting at `start`, noted in `use`.
  double transfer_seconds(int src, int dst, double bytes, double start, LinkUse& use);
  // `copy` in every replica, all starting at 0: the slowest (each noted in `use`).
  double copy_seconds(const PlanCopy& copy, LinkUse& use);
  // The weight-update phase of one batch (ProgramBuilder::weight_updates); `all_at_once` as there.
  double weight_update_seconds(bool all_at_once);

  unsigned contention = kNoContention;

private:
  double collectives_seconds(bool reduce_scatter, bool all_gather);
  std::vector<std::vector<int>> racks_of(int virtual_ipu) const;

  const Execution& ex_;
  const Plan& plan_;
  const HardwareConfig& hw_;
  RouteTable& routes_;
  int replicas_ = 1, width_ = 1;
  double sync_ = 0;
};

} // namespace ipusim
