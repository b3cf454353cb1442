#include "sim/plan/tensor_parallel_cost.hpp"

#include <algorithm>
#include <map>
#include <variant>

#include "sim/plan/routes.hpp"

namespace ipusim {

double group_all_reduce_seconds(const HardwareConfig& hw, int first, int group, double bytes) {
  if (group < 2 || bytes <= 0) return 0;
  RouteFinder routes(hw);
  std::map<std::pair<int, bool>, int> load;  // directed link -> ring hops crossing it in one step
  double latency = 0;
  for (int i = 0; i < group; ++i) {
    const int me = first + i;
    for (int neighbour : {first + (i + 1) % group, first + (i + group - 1) % group}) {
      double route_latency = 0;
      for (const Hop& h : routes.route(me, neighbour)) {
        ++load[{h.link, h.forward}];
        route_latency += hw.links[static_cast<std::size_t>(h.link)].latency_s;
      }
      latency = std::max(latency, route_latency);
    }
  }
  const double half_chunk = bytes / group / 2;
  double transfer = 0;
  for (const auto& [link, hops] : load)
    transfer = std::max(transfer, hops * half_chunk / hw.links[static_cast<std::size_t>(link.first)].bandwidth_bytes_per_s);
  return 2.0 * (group - 1) * (transfer + latency + hw.sync_seconds(group));
}

OpCost tensor_parallel_collective_cost(const HardwareConfig& hw, const Model& model, const Op& op, bool backward,
                                       std::int64_t micro_batch_size) {
  auto number = [&](const char* key) {
    const auto it = op.attributes.find(key);
    if (it == op.attributes.end()) return 0.0;
    if (const auto* d = std::get_if<double>(&it->second)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
    return 0.0;
  };
  const double elements = number(backward ? "gradientReducedElements" : "reducedElements");
  const double bytes = elements * static_cast<double>(micro_batch_size) *
                       static_cast<double>(dtype_bytes(model.tensor(op.inputs.at(0)).dtype));
  OpCost c;
  c.exchange_cycles = group_all_reduce_seconds(hw, 0, static_cast<int>(number("group")), bytes) * hw.ipu.clock_hz;
  return c;
}

} // namespace ipusim
