#pragma once
// The gradient collectives timed apart from the network simulation.
//
// A collective block is a run of consecutive all-reduce Exchange steps in one program (a
// ring's reduce-scatter and all-gather steps, ProgramBuilder::reduce_scatter/all_gather);
// the blocks that send each other copies, or share a link, form a group, one block per
// member IPU. Where the links a group uses carry nothing else, its transfers depend only on
// when its members arrive, and CollectiveGroup::evaluate replays them as SimGrid's CM02
// model would (docs/reference/simgrid-notes.md): a transfer starts when its sender begins
// the step, waits out its route's latency, then shares each link of its route max-min
// fairly with the others there, weighted by the inverse of its route's latency (CM02's
// sharing penalty) and bounded by its narrowest link; a step ends once its sends and
// receives have arrived, plus its own seconds (Run::run_exchange). find_collective_blocks
// also checks that every member's last step waits for every member's first, so that the
// whole block's times are known once the last member arrives. Where a check fails it says
// why, and the engine simulates the collectives' transfers in SimGrid.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// A transfer a member sends in a step (a Pod256's rings have 67,584 a run: kept small).
struct DataflowSend {
  std::uint32_t transfer = 0;               // index into Step::transfers
  std::uint32_t to_member = 0, to_step = 0;  // who receives it, in which of its steps
  std::uint32_t route = 0;                  // its route: CollectiveGroup::routes[route]
  double bytes = 0;                         // whole bytes, as SimGrid moves them
};
// A transfer a member receives in a step: the sending member, its step, and which of its sends.
struct DataflowReceive {
  std::uint32_t member = 0, step = 0, send = 0;
};
// A step's sends and receives, held flat by its group (CollectiveGroup::send_store and
// receive_store): 48 bytes a step, where two inline vectors took 136 (a Pod256's rings have
// 33,792 steps a run, each page of them a fault in the simulation's process).
struct DataflowStep {
  std::span<DataflowSend> sends;
  std::span<DataflowReceive> receives;
  double seconds = 0;  // paid after the transfers (Step::seconds)
  std::size_t first_flow = 0;  // its sends' index among the group's transfers
};

struct CollectiveMember {
  std::size_t program = 0;  // index into Schedule::programs
  std::size_t first = 0;    // the block's first template step
  std::vector<DataflowStep> steps;
};

// One run of a group's blocks, in the caller's clock: per member and step its start and
// end; per transfer (DataflowStep::first_flow + send) when it arrived. Timed for whole blocks
// only (CollectiveGroup::evaluate's `every_step` false), each member has one start, its
// first step's, and one end, its last step's, and no transfer is listed.
struct CollectiveTimes {
  std::vector<std::vector<double>> start, end;
  std::vector<double> arrival;
};

struct CollectiveGroup {
  CollectiveGroup() = default;
  CollectiveGroup(CollectiveGroup&&) noexcept = default;  // moving keeps the stores the steps' spans see
  CollectiveGroup& operator=(CollectiveGroup&&) noexcept = default;
  CollectiveGroup(const CollectiveGroup&) = delete;  // a copy's steps would see the original's
  CollectiveGroup& operator=(const CollectiveGroup&) = delete;

  std::vector<CollectiveMember> members;
  // Every step's sends and receives, member by member and step by step: DataflowStep's spans.
  std::vector<DataflowSend> send_store;
  std::vector<DataflowReceive> receive_store;
  std::vector<double> link_bandwidth;  // per group link
  // Per route its sends take (a ring step's send takes its member's route every step): the
  // group links along it.
  std::vector<std::vector<int>> routes;
  std::vector<double> route_latency;    // per route: its links' latencies summed
  std::vector<double> route_bandwidth;  // per route: its narrowest link's
  std::size_t flows = 0;  // transfers of one run
  // A quotient's only (CollectiveQuotient), empty in a group of the schedule's own transfers
  // where each is 1: per transfer, how many of its receiver's receives its arrival settles.
  std::vector<std::uint32_t> settles;
  const std::vector<int>& links(const DataflowSend& send) const { return routes[send.route]; }
  // The times of every member's steps when member m arrives at its block at entries[m]; with
  // `every_step` false, only when each member's block begins and ends (see CollectiveTimes).
  void evaluate(const std::vector<double>& entries, CollectiveTimes& times, bool every_step = true) const;
};

struct CollectiveBlocks {
  std::vector<CollectiveGroup> groups;
  // Per program: a block's first template step -> (group, member).
  std::vector<std::map<std::size_t, std::pair<std::size_t, std::size_t>>> starts;
  // Why the collectives are left to the network simulation; empty when `groups` time them.
  std::string not_timed;
  // The template steps of a program's blocks, as [first, end) ranges, ascending.
  std::vector<std::pair<std::size_t, std::size_t>> ranges(std::size_t program) const;
};

// A group whose members fall into classes that run alike (a member and the members mirroring
// it, sim/schedule/replica_mirrors.hpp), replayed with one member a class. quotient_of accepts
// the classes where (1) every member has its class representative's steps, seconds, bytes and
// route latencies and bandwidths, sends to the same classes at the same steps and receives
// from them as many transfers, and (2) no link can be asked for more than it carries: for each
// link, its bandwidth is at least the sum over the members sending across it of the most a
// step of theirs sends across it (each route's narrowest bandwidth; a member's steps follow one
// another, their transfers never in flight together). Then every transfer moves at its route's
// narrowest bandwidth from its latency's end, whoever else is in flight, and a class's members
// begin and end each step together: the representatives, replayed over their own routes alone
// (each receive settled by its sender class's transfer, CollectiveGroup::settles), time them
// all. Where a link could be oversubscribed, link sharing might tell the members apart, and
// the group is replayed whole.
struct CollectiveQuotient {
  CollectiveGroup group;
  std::vector<std::uint32_t> member_class;  // per member of the whole group: its member of `group`
};

// `representative[m]`: the member whose class m belongs to (itself for a representative). ""
// and `out` filled, or why the classes cannot stand for their members.
std::string quotient_of(const CollectiveGroup& group, const std::vector<std::uint32_t>& representative,
                        CollectiveQuotient& out);

// The reason when the schedule has no collective copies at all (nothing to replay).
inline constexpr const char* kNoCollectiveCopies = "no all-reduce copies";

// The schedule's collective blocks, or none with the reason (see above).
CollectiveBlocks find_collective_blocks(const Schedule& schedule, const HardwareConfig& hardware);

} // namespace ipusim
