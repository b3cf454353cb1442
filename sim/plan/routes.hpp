#pragma once
// Routes between IPUs over the configured IPU-Links: fewest hops, ties broken
// towards lower IPU ids, so the same config always gives the same routes.
#include <map>
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"

namespace ipusim {

struct Hop {
  int link = 0;          // index into HardwareConfig::links
  bool forward = true;   // travelling from link.a to link.b
};

using Route = std::vector<Hop>;

// Throws InputError (link.disconnected) naming the config when some IPU cannot reach
// another. Time and memory linear in IPUs + links, whatever the system's size.
void check_connected(const HardwareConfig& hardware);

// Routes from the sources asked for, one breadth-first search per source (kept), so a
// run pays for the IPUs it uses, not for the whole system's n x n table.
class RouteFinder {
public:
  explicit RouteFinder(const HardwareConfig& hardware);  // kept by reference: it must outlive the finder
  explicit RouteFinder(HardwareConfig&&) = delete;
  // The hops from IPU src to IPU dst (empty when equal). The system must be connected.
  Route route(int src, int dst);

private:
  const HardwareConfig& hw_;
  std::vector<std::vector<Hop>> adjacency_;  // per IPU, by far end ascending
  std::map<int, std::vector<Hop>> via_;      // per searched source: the hop reaching each IPU
};

// routes[a][b] for every pair (n x n: for tests and small systems). Throws like check_connected.
std::vector<std::vector<Route>> compute_routes(const HardwareConfig& hardware);

// "ipu0->ipu1": the direction of a link a hop uses; links are full duplex.
std::string directed_link_name(const HardwareConfig& hardware, const Hop& hop);

} // namespace ipusim
