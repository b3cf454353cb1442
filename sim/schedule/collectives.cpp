// Gradient collectives across replicas, as Graphcore's GCL runs them: rings. Within one
// rack (an IPU-Link domain) a ring reduce-scatter leaves each replica 1/R of the summed
// gradients and a ring all-gather spreads them back, 2(R-1) steps of B/R in all. GCL runs
// a pair of rings in opposite directions, each on half the data (its "bi-directional ring
// pair" and "meet-in-the-middle ring" methods, GCL User Guide 3.4; the pre-GCL poplibs
// ReplicatedCollectives.cpp picks one of the two for buffers this size), so every ring
// step sends B/2R each way over full-duplex links. Replicas in several racks joined by
// slower GW-Links reduce hierarchically: reduce-scatter inside each rack, then across the
// racks on the rack's share only, and the reverse to gather, so only B/R_rack of the data
// crosses the GW-Links.
#include <algorithm>
#include <map>

#include "sim/plan/routes.hpp"
#include "sim/schedule/racks.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

std::vector<std::vector<int>> ProgramBuilder::racks_of(int virtual_ipu) const {
  std::vector<int> physical;
  for (int r = 0; r < replicas_; ++r) physical.push_back(physical_of(r, virtual_ipu));
  return replicas_by_rack(physical, context_.scenario.hardware.rack_ipus);
}

void ProgramBuilder::ring_step(int virtual_ipu, const std::vector<int>& members, int level, double chunk) {
  const int n = static_cast<int>(members.size());
  const int width = width_;
  // Mailbox of the transfer replica r sends one way round at this level: after the pipeline's copies.
  auto mailbox = [&](int r, int way) {
    return replicas_ * copies_ + (((level * 2 + way) * width + virtual_ipu) * replicas_ + r);
  };
  const double half = chunk / 2;
  for (int i = 0; i < n; ++i) {
    const int r = members[static_cast<std::size_t>(i)];
    const int next = members[static_cast<std::size_t>((i + 1) % n)];
    const int previous = members[static_cast<std::size_t>((i + n - 1) % n)];
    Step s;
    s.kind = StepKind::Exchange;
    s.pass = Pass::AllReduce;
    s.transfers.reserve(4);
    const int me = physical_of(r, virtual_ipu);
    s.transfers.push_back({mailbox(r, 0), me, physical_of(next, virtual_ipu), half});
    s.transfers.push_back({mailbox(r, 1), me, physical_of(previous, virtual_ipu), half});
    s.transfers.push_back({mailbox(previous, 0), physical_of(previous, virtual_ipu), me, half});
    s.transfers.push_back({mailbox(next, 1), physical_of(next, virtual_ipu), me, half});
    push(index_.at(physical_of(r, virtual_ipu)), std::move(s));
  }
}

// Room in every replica's program for a reduce-scatter's or all-gather's ring steps (a
// replica takes part in its rack's ring and in the racks' ring of its position) and the few
// steps after them (the all-gather that follows, the syncs, the update), growing by at least
// half again: room for exactly the ring moved the whole program at every collective and at
// the sync after it (2 % of a Pod256 run).
void ProgramBuilder::reserve_ring_steps(int virtual_ipu, const std::vector<std::vector<int>>& racks) {
  const std::size_t steps = racks.front().size() - 1 + (racks.size() >= 2 ? racks.size() - 1 : 0);
  constexpr std::size_t kStepsAfter = 8;
  for (int r = 0; r < replicas_; ++r) {
    std::vector<Step>& program = schedule_.programs[index_.at(physical_of(r, virtual_ipu))].steps;
    const std::size_t needed = program.size() + steps + kStepsAfter;
    if (program.capacity() < needed) program.reserve(std::max(needed, program.capacity() + program.capacity() / 2));
  }
}

void ProgramBuilder::reduce_scatter(int virtual_ipu, double bytes) {
  if (replicas_ < 2 || bytes <= 0) return;
  const auto racks = racks_of(virtual_ipu);
  reserve_ring_steps(virtual_ipu, racks);
  ring_in_racks(virtual_ipu, racks, bytes);
  ring_across_racks(virtual_ipu, racks, bytes);
}

void ProgramBuilder::all_gather(int virtual_ipu, double bytes) {
  if (replicas_ < 2 || bytes <= 0) return;
  const auto racks = racks_of(virtual_ipu);
  reserve_ring_steps(virtual_ipu, racks);
  ring_across_racks(virtual_ipu, racks, bytes);
  ring_in_racks(virtual_ipu, racks, bytes);
}

void ProgramBuilder::ring_in_racks(int virtual_ipu, const std::vector<std::vector<int>>& racks, double bytes) {
  const auto in_rack = static_cast<int>(racks.front().size());
  for (const auto& members : racks)
    for (int step = 0; step + 1 < in_rack; ++step) ring_step(virtual_ipu, members, 0, bytes / in_rack);
}

void ProgramBuilder::ring_across_racks(int virtual_ipu, const std::vector<std::vector<int>>& racks, double bytes) {
  if (racks.size() < 2) return;
  // Replica i of every rack holds the same share: they form the racks' ring.
  const auto in_rack = static_cast<int>(racks.front().size());
  const auto across = static_cast<int>(racks.size());
  for (int i = 0; i < in_rack; ++i) {
    std::vector<int> members;
    for (const auto& rack : racks) members.push_back(rack[static_cast<std::size_t>(i)]);
    for (int step = 0; step + 1 < across; ++step) ring_step(virtual_ipu, members, 1, bytes / in_rack / across);
  }
}

// PopART issues a collective per weight tensor, not one per IPU (its IR holds a
// ReplicatedAllReduce per gradient; tensor_locations.rst): under replicated tensor sharding
// each tensor of at least minElementsForReplicatedTensorSharding = 8192 elements gets its own
// reduce-scatter and all-gather (SDK 2.5 merges only all-reduces; sessionoptions.hpp), the
// smaller ones an all-reduce each, or one in all with mergeAllReduceCollectives; LAMB and
// LARS then all-reduce two norms per sharded tensor (LambSquareOp, lamb.cpp). Without
// sharding every tensor is all-reduced (merged or not). The bytes all ride on the rings laid
// out above; each further collective pays its ring steps' latency: the slowest neighbour
// route's link latencies and the sync ending each step.
double collective_pairs(const Execution& ex, const PlanIpu& ipu, bool sharded_state) {
  const double sharded = sharded_state ? ipu.shardable_weight_tensors : 0.0;
  const double small = ipu.weight_tensors - sharded;
  const bool norms = ex.optimizer == Optimizer::Lamb || ex.optimizer == Optimizer::Lars;
  auto count = [&](double n) { return ex.merge_all_reduce_collectives ? std::min(n, 1.0) : n; };
  // The sharded tensors', the small tensors' all-reduces, and the norms' (two all-reduces per
  // sharded tensor, merged into two when allowed).
  return sharded + count(small) + (norms && sharded > 0 ? 2 * count(sharded) : 0.0);
}

void ProgramBuilder::per_tensor_collectives(const PlanIpu& ipu, bool sharded_state) {
  const Scenario& sc = context_.scenario;
  if (replicas_ < 2 || ipu.weight_tensors <= 0) return;
  const double pairs = collective_pairs(sc.execution, ipu, sharded_state);
  if (pairs <= 1) return;

  const auto racks = racks_of(ipu.id);
  RouteFinder routes(sc.hardware);
  auto hop_latency = [&](int a, int b) {
    double latency = 0;
    for (const Hop& h : routes.route(physical_of(a, ipu.id), physical_of(b, ipu.id)))
      latency += sc.hardware.links[static_cast<std::size_t>(h.link)].latency_s;
    return latency;
  };
  // One reduce-scatter and one all-gather: the ring steps within a rack, then across the racks.
  double seconds_per_pair = 0;
  {
    double in_rack = 0;
    for (const auto& members : racks)
      for (std::size_t i = 0; i < members.size(); ++i)
        in_rack = std::max(in_rack, hop_latency(members[i], members[(i + 1) % members.size()]));
    const auto n = static_cast<double>(racks.front().size());
    seconds_per_pair += 2 * (n - 1) * (in_rack + context_.sync_seconds);
    if (racks.size() > 1) {
      double across = 0;
      for (std::size_t k = 0; k < racks.size(); ++k)
        across = std::max(across, hop_latency(racks[k].front(), racks[(k + 1) % racks.size()].front()));
      seconds_per_pair += 2 * static_cast<double>(racks.size() - 1) * (across + context_.sync_seconds);
    }
  }
  Step s;
  s.kind = StepKind::Exchange;
  s.pass = Pass::AllReduce;
  s.seconds = (pairs - 1) * seconds_per_pair;
  append(ipu.id, s);
}

} // namespace ipusim
