#pragma once
// The SimGrid platform of a run: a host per IPU that runs a program, full-duplex IPU-Links
// with exact analytic timing, host links shared per gateway, Streaming Memory per machine.
// Engine-internal (it includes SimGrid); the benchmark's raw-SimGrid baseline builds the
// same platform through it.
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// Hosts compute at 1e12 "flop"/s so that a step of t seconds is an exec of t*1e12:
// large enough that SimGrid's work precision (maxmin/precision) is far below 1e-9 relative.
constexpr double kHostSpeed = 1e12;

// Only what the schedule uses is built: a SimGrid host per IPU that runs a program and a
// route per pair of IPUs that exchange data, so a large system costs what a run touches.
struct Platform {
  std::map<int, simgrid::s4u::Host*> ipus;  // by IPU id, the IPUs SimGrid runs programs on
  simgrid::s4u::Host* host = nullptr;
  std::map<int, simgrid::s4u::Host*> memory_of_ipu;       // the Streaming Memory behind each IPU with a program
  // Per IPU with a program: its memory's traffic slot (one), as a route.
  std::map<int, std::vector<int>> memory_slots_of_ipu;
  std::vector<std::string> link_names;  // directed: 2 per IPU-Link, then 2 per host link, then memories
  // Directed link slots along the route from src to dst; the host is -1.
  std::unordered_map<std::int64_t, std::vector<int>> route_slots;
  std::int64_t stride = 0;
  std::int64_t key(int src, int dst) const { return (src + 1) * stride + dst + 1; }
  const std::vector<int>& slots(int src, int dst) const { return route_slots.at(key(src, dst)); }
};

// Starts SimGrid's engine for exact analytic timing (docs/reference/simgrid-notes.md), quiet; the
// caller owns it. Under AddressSanitizer, with thread contexts (it cannot follow SimGrid's
// own stack switching).
simgrid::s4u::Engine* start_engine();

// What SimGrid itself must run, when not the whole schedule: hosts for the IPUs whose programs
// it runs, routes for the pairs whose copies it moves. Every other IPU, pair, host link and
// memory the schedule uses gets its link slots only, for the traffic reported on its behalf
// (collectives timed by their dataflow, units mirroring the first: sim/engine/engine.hpp).
struct PlatformNeeds {
  std::vector<char> simulated_ipu;                 // by IPU id
  std::vector<std::pair<int, int>> transfer_pairs;  // sorted, unique
};

Platform build_platform(const HardwareConfig& hardware, const Schedule& schedule, const PlatformNeeds* needs = nullptr);

} // namespace ipusim
