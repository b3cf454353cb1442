#pragma once
// Replicas that run alike, found before a run so that the engine simulates one machine's
// and reports the others from it (docs/benchmark.md, "Replicas simulated once").
//
// The system is cut into units: the smallest runs of consecutive IPUs that share nothing
// with the IPUs outside them but the gradient collectives (an IPU-M2000's four IPUs share
// its gateway's host link and its Streaming Memory). Unit k mirrors unit 0 when its
// programs are unit 0's moved k units on: the same steps, durations, bytes and loops, its
// copies between its own IPUs over routes alike hop by hop and used by no other unit, and
// its collective blocks at the same steps of the same groups. Between two collectives such
// a unit then runs as unit 0 does, shifted by nothing; at a collective each member's times
// come from the group's dataflow, which the engine checks member by member against its
// source's (Run::run_collective_block) and, where they differ, the run is made again in full.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/schedule/collective_dataflow.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

struct ReplicaMirrors {
  std::size_t units = 1;               // unit 0 is simulated; units 1 .. units-1 mirror it
  std::size_t programs_per_unit = 0;   // unit k's programs: [k * programs_per_unit, (k+1) * programs_per_unit)
  int ipus_per_unit = 0;               // and its IPUs: unit 0's moved by k * ipus_per_unit
  // Per group and member of a program of unit 0: its mirrors' members, unit 1 first.
  std::vector<std::vector<std::vector<std::uint32_t>>> member_mirrors;
  // Why no unit mirrors unit 0 (units == 1); empty when some do.
  std::string not_mirrored;
  bool mirrored() const { return units > 1; }
};

// The units mirroring unit 0 in this schedule on this hardware, given its collective blocks.
ReplicaMirrors find_replica_mirrors(const Schedule& schedule, const HardwareConfig& hardware,
                                    const CollectiveBlocks& blocks);

} // namespace ipusim
