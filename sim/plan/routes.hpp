#pragma once
// Routes between IPUs over the configured IPU-Links: fewest hops, ties broken
// towards lower IPU ids, so the same config always gives the same routes.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
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

// A route as a transfer sees it: the latencies of its links summed, its narrowest link's
// bandwidth, and the directed links it crosses. Both the planner's evaluators and the
// collective replay time a lone transfer from this, as SimGrid's CM02 model does.
struct RoutePath {
  double latency = 0, bandwidth = 0;
  std::vector<int> slots;  // directed links: directed_link_slot(hop)
  // A lone transfer of `whole_bytes` on this route.
  double seconds(double whole_bytes) const { return latency + (slots.empty() ? 0.0 : whole_bytes / bandwidth); }
};

// A directed link's index: 2 x link + (0 forward, 1 backward).
inline int directed_link_slot(const Hop& hop) { return 2 * hop.link + (hop.forward ? 0 : 1); }

// Paths by (source, destination), found when first asked for: the all-reduce rings of a POD256
// ask for thousands (a map's lookups were half of the planner's time there), so systems up to
// kDenseIpus IPUs find them by a dense src x IPUs + dst table of pointers (a run uses a few
// hundred of the POD256's 65,536 pairs: a table of whole paths was 2.6 MB to clear and fault
// in); larger ones by a hash map. A path's reference stays valid for the table's life.
class PathTable {
public:
  explicit PathTable(const HardwareConfig& hardware);  // kept by reference: it must outlive the table
  explicit PathTable(HardwareConfig&&) = delete;
  const RoutePath& path(int src, int dst);

private:
  static constexpr int kDenseIpus = 512;
  RoutePath find(int src, int dst);

  const HardwareConfig& hw_;
  RouteFinder finder_;
  std::deque<RoutePath> found_;  // never moved: dense_ and sparse_ point into it
  std::vector<const RoutePath*> dense_;  // per (src, dst), or null
  std::unordered_map<std::int64_t, const RoutePath*> sparse_;
};

// routes[a][b] for every pair (n x n: for tests and small systems). Throws like check_connected.
std::vector<std::vector<Route>> compute_routes(const HardwareConfig& hardware);

// "ipu0->ipu1": the direction of a link a hop uses; links are full duplex.
std::string directed_link_name(const HardwareConfig& hardware, const Hop& hop);

} // namespace ipusim
