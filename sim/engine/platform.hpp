#pragma once
// The SimGrid platform of a hardware config: a host per IPU, full-duplex IPU-Links with
// exact analytic timing, host links shared per gateway, Streaming Memory per machine.
// Engine-internal (it includes SimGrid); the benchmark's raw-SimGrid baseline builds the
// same platform through it.
#include <simgrid/s4u.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/hardware.hpp"

namespace ipusim {

// Hosts compute at 1e12 "flop"/s so that a step of t seconds is an exec of t*1e12:
// large enough that SimGrid's work precision (maxmin/precision) is far below 1e-9 relative.
constexpr double kHostSpeed = 1e12;

struct Platform {
  std::vector<simgrid::s4u::Host*> ipus;
  simgrid::s4u::Host* host = nullptr;
  std::vector<simgrid::s4u::Host*> memory_of_ipu;  // the Streaming Memory behind each IPU (none: empty)
  std::vector<std::vector<int>> memory_slots_of_ipu;  // its traffic slot (one), as a route
  std::vector<std::string> link_names;               // directed: 2 per IPU-Link, then 2 per host link, then memories
  // Directed link slots along the route from src to dst; the host is -1.
  const std::vector<int>& slots(int src, int dst) const {
    return route_slots[static_cast<std::size_t>((src + 1) * stride + dst + 1)];
  }

  std::vector<std::vector<int>> route_slots;  // indexed [(src+1)*(n+1)+dst+1]
  int stride = 0;
};

// Sets the engine options for exact analytic timing (simgrid-notes.md); call once, before
// building the platform.
void configure_exact_timing(simgrid::s4u::Engine& engine);

// Routes between two IPUs are added only for the pairs in `ipu_pairs` (the copies a
// schedule makes): a POD's full N^2 table would cost more than the run.
Platform build_platform(const HardwareConfig& hardware, const std::set<std::pair<int, int>>& ipu_pairs);

} // namespace ipusim
