#include "sim/engine/platform.hpp"

#include <xbt/log.h>

#include "sim/plan/routes.hpp"

namespace sg4 = simgrid::s4u;

namespace ipusim {

void configure_exact_timing(sg4::Engine&) {
  xbt_log_control_set("root.thres:critical");
  // Exact analytic timing: transfer = latency + bytes / bandwidth (simgrid-notes.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("surf/precision:1e-15");
}

Platform build_platform(const HardwareConfig& hw, const std::set<std::pair<int, int>>& ipu_pairs) {
  Platform p;
  const std::vector<std::vector<Route>> routes = compute_routes(hw);
  p.stride = hw.ipu_count + 1;
  p.route_slots.resize(static_cast<std::size_t>(p.stride * p.stride));
  auto slots = [&](int src, int dst) -> std::vector<int>& {
    return p.route_slots[static_cast<std::size_t>((src + 1) * p.stride + dst + 1)];
  };
  auto* zone = sg4::create_full_zone("system");
  for (int i = 0; i < hw.ipu_count; ++i) p.ipus.push_back(zone->create_host("ipu" + std::to_string(i), kHostSpeed));
  p.host = zone->create_host("host", kHostSpeed);

  std::vector<sg4::SplitDuplexLink*> links;
  for (std::size_t i = 0; i < hw.links.size(); ++i) {
    const LinkSpec& spec = hw.links[i];
    auto* link = zone->create_split_duplex_link("link" + std::to_string(i), spec.bandwidth_bytes_per_s);
    link->set_latency(spec.latency_s)->seal();
    links.push_back(link);
    p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), true}));
    p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), false}));
  }
  for (const auto& [a, b] : ipu_pairs) {
    if (a == b) continue;
    std::vector<sg4::LinkInRoute> path;
    std::vector<int> slot_list;
    for (const Hop& hop : routes[a][b]) {
      path.emplace_back(links[hop.link],
                        hop.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
      slot_list.push_back(2 * hop.link + (hop.forward ? 0 : 1));
    }
    zone->add_route(p.ipus[a]->get_netpoint(), p.ipus[b]->get_netpoint(), nullptr, nullptr, path, false);
    slots(a, b) = slot_list;
  }
  // One host link per group of `shared_by` IPUs (an M2000's IPU-Gateway): their streams share it.
  const int group = hw.host_link.shared_by;
  const int host_slot0 = static_cast<int>(p.link_names.size());
  sg4::SplitDuplexLink* link = nullptr;
  for (int i = 0; i < hw.ipu_count; ++i) {
    const int g = i / group;
    if (i % group == 0) {
      link = zone->create_split_duplex_link("host" + std::to_string(g), hw.host_link.bandwidth_bytes_per_s);
      link->set_latency(hw.host_link.latency_s)->seal();
      const std::string who = group == 1 ? "ipu" + std::to_string(i)
                                         : "ipu" + std::to_string(i) + "-" + std::to_string(i + group - 1);
      p.link_names.push_back("host->" + who);
      p.link_names.push_back(who + "->host");
    }
    zone->add_route(p.host->get_netpoint(), p.ipus[i]->get_netpoint(), nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::UP}}, false);
    zone->add_route(p.ipus[i]->get_netpoint(), p.host->get_netpoint(), nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::DOWN}}, false);
    slots(-1, i) = {host_slot0 + 2 * g};
    slots(i, -1) = {host_slot0 + 2 * g + 1};
  }
  // One Streaming Memory per group of `shared_by` IPUs: reads and writes share its bandwidth.
  if (hw.streaming_memory.present) {
    const int per = hw.streaming_memory.shared_by;
    sg4::Host* memory = nullptr;
    sg4::Link* channel = nullptr;
    for (int i = 0; i < hw.ipu_count; ++i) {
      if (i % per == 0) {
        const std::string who = per == 1 ? "ipu" + std::to_string(i)
                                         : "ipu" + std::to_string(i) + "-" + std::to_string(i + per - 1);
        memory = zone->create_host("memory" + std::to_string(i / per), kHostSpeed);
        channel = zone->create_link("memory-channel" + std::to_string(i / per), hw.streaming_memory.bandwidth_bytes_per_s)
                      ->set_latency(hw.streaming_memory.latency_s)
                      ->seal();
        p.link_names.push_back("streaming-memory(" + who + ")");
      }
      zone->add_route(memory->get_netpoint(), p.ipus[i]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(channel)}, true);
      p.memory_of_ipu.push_back(memory);
      p.memory_slots_of_ipu.push_back({static_cast<int>(p.link_names.size()) - 1});
    }
  }
  zone->seal();
  return p;
}

} // namespace ipusim
