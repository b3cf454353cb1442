#pragma once
// Routes between IPUs over the configured IPU-Links: fewest hops, ties broken
// towards lower IPU ids, so the same config always gives the same routes.
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"

namespace ipusim {

struct Hop {
  int link = 0;          // index into HardwareConfig::links
  bool forward = true;   // travelling from link.a to link.b
};

using Route = std::vector<Hop>;

// routes[a][b]: the hops from IPU a to IPU b (empty when a == b). Throws InputError
// naming the config when some IPU cannot reach another.
std::vector<std::vector<Route>> compute_routes(const HardwareConfig& hardware);

// "ipu0->ipu1": the direction of a link a hop uses; links are full duplex.
std::string directed_link_name(const HardwareConfig& hardware, const Hop& hop);

} // namespace ipusim
