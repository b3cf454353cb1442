#include "sim/engine/platform.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>
#include <utility>

#include "sim/plan/routes.hpp"

namespace sg4 = simgrid::s4u;

namespace ipusim {

#if defined(__SANITIZE_ADDRESS__)
#define IPUSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPUSIM_ASAN 1
#endif
#endif

sg4::Engine* start_engine() {
  char name[] = "ipusim";
#ifdef IPUSIM_ASAN
  // Chosen on the command line, before the engine sets up its contexts.
  char quiet[] = "--log=xbt_cfg.thres:warning";  // SimGrid announces every setting it is given
  char factory[] = "--cfg=contexts/factory:thread";
  int argc = 3;
  char* argv[] = {name, quiet, factory, nullptr};
#else
  int argc = 1;
  char* argv[] = {name, nullptr};
#endif
  auto* engine = new sg4::Engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  // Exact analytic timing: transfer = latency + bytes / bandwidth (docs/reference/simgrid-notes.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("surf/precision:1e-15");
#ifndef IPUSIM_ASAN
  // An actor's stack is 8 MiB by default, taken from the heap per IPU (256 on a Pod256) and
  // fenced by a guard page; 1 MiB is four times what the whole test suite runs in (it passes
  // with 256 KiB) and saves a twentieth of a Pod256 run. AddressSanitizer's frames are
  // larger: its thread contexts keep the default.
  sg4::Engine::set_config("contexts/stack-size:1024");
#endif
  return engine;
}

namespace {

// The zone of a run's platform. The first run of a process makes the root zone, which sets
// up SimGrid's models; a later run (a process that simulates several times, sim/engine/engine.hpp)
// gets a zone of its own beside it, on the root's models, its resources' names made unique
// by a prefix (SimGrid refuses a second host or link of one name; the names reach no output).
sg4::NetZone* new_platform_zone(std::string& prefix) {
  static int built = 0;
  if (built++ == 0) return sg4::create_full_zone("system");
  prefix = "run" + std::to_string(built) + ".";
  auto* zone = sg4::create_full_zone(prefix + "system");
  const auto* root = sg4::Engine::get_instance()->get_netzone_root()->get_impl();
  auto* impl = zone->get_impl();
  impl->set_network_model(root->get_network_model());
  impl->set_cpu_pm_model(root->get_cpu_pm_model());
  impl->set_cpu_vm_model(root->get_cpu_vm_model());
  impl->set_disk_model(root->get_disk_model());
  impl->set_host_model(root->get_host_model());
  return zone;
}

} // namespace

namespace {

// What a platform is built from, and the zone it is built in.
struct PlatformBuilder {
  const HardwareConfig& hw;
  const Schedule& schedule;
  const PlatformNeeds* needs;
  sg4::NetZone* zone;
  std::string prefix;

  bool simulated(int ipu) const { return needs == nullptr || needs->simulated_ipu[static_cast<std::size_t>(ipu)] != 0; }
  bool moved(const std::pair<int, int>& pair) const {
    return needs == nullptr || std::binary_search(needs->transfer_pairs.begin(), needs->transfer_pairs.end(), pair);
  }
  // "ipu4" or, for a group of IPUs, "ipu4-7".
  static std::string group_name(int first, int size) {
    return size == 1 ? "ipu" + std::to_string(first) : "ipu" + std::to_string(first) + "-" + std::to_string(first + size - 1);
  }

  // The pairs of IPUs that exchange data. A ring's steps name the same few neighbours many
  // times (a bidirectional ring step four pairs): each program's pairs are kept once while they are few.
  std::vector<std::pair<int, int>> exchanging_pairs() const {
    std::vector<std::pair<int, int>> pairs;
    for (const Program& program : schedule.programs) {
      const std::size_t mine = pairs.size();
      for (const Step& step : program.steps)
        for (const Transfer& t : step.transfers) {
          const std::pair<int, int> pair(t.src_ipu, t.dst_ipu);
          constexpr std::size_t kFew = 16;
          const auto from = pairs.begin() + static_cast<std::ptrdiff_t>(mine);
          if (pairs.size() - mine > kFew || std::find(from, pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
        }
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    return pairs;
  }

  // The IPU-Links: every one named in the log, only those a route takes built.
  void add_ipu_links(Platform& p) const {
    std::vector<sg4::SplitDuplexLink*> links(hw.links.size(), nullptr);
    for (std::size_t i = 0; i < hw.links.size(); ++i) {
      p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), true}));
      p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), false}));
    }
    auto link_of = [&](int i) {
      sg4::SplitDuplexLink*& link = links[static_cast<std::size_t>(i)];
      if (link == nullptr) {
        const LinkSpec& spec = hw.links[static_cast<std::size_t>(i)];
        link = zone->create_split_duplex_link(prefix + "link" + std::to_string(i), spec.bandwidth_bytes_per_s);
        link->set_latency(spec.latency_s)->seal();
      }
      return link;
    };
    RouteFinder finder(hw);
    for (const auto& pair : exchanging_pairs()) {
      const auto [a, b] = pair;
      if (a == b) continue;
      const Route route = finder.route(a, b);
      std::vector<int> slots;
      for (const Hop& hop : route) slots.push_back(directed_link_slot(hop));
      p.route_slots[p.key(a, b)] = std::move(slots);
      if (!moved(pair)) continue;
      std::vector<sg4::LinkInRoute> path;
      for (const Hop& hop : route)
        path.emplace_back(link_of(hop.link), hop.forward ? sg4::LinkInRoute::Direction::UP
                                                         : sg4::LinkInRoute::Direction::DOWN);
      zone->add_route(p.ipus.at(a)->get_netpoint(), p.ipus.at(b)->get_netpoint(), nullptr, nullptr, path, false);
    }
  }

  // One host link per group of `shared_by` IPUs (an M2000's IPU-Gateway): their streams share it.
  // Every group gets its link (and its name in the log), used or not, as the config lists them.
  void add_host_links(Platform& p) const {
    const int group = hw.host_link.shared_by;
    const int host_slot0 = static_cast<int>(p.link_names.size());
    std::map<int, sg4::SplitDuplexLink*> host_links;
    for (int first = 0; first < hw.ipu_count; first += group) {
      p.link_names.push_back("host->" + group_name(first, group));
      p.link_names.push_back(group_name(first, group) + "->host");
    }
    for (const Program& program : schedule.programs) {
      const int i = program.ipu, g = i / group;
      p.route_slots[p.key(-1, i)] = {host_slot0 + 2 * g};
      p.route_slots[p.key(i, -1)] = {host_slot0 + 2 * g + 1};
      if (!simulated(i)) continue;
      sg4::Host* ipu = p.ipus.at(i);
      sg4::SplitDuplexLink*& link = host_links[g];
      if (link == nullptr) {
        link = zone->create_split_duplex_link(prefix + "host" + std::to_string(g), hw.host_link.bandwidth_bytes_per_s);
        link->set_latency(hw.host_link.latency_s)->seal();
      }
      zone->add_route(p.host->get_netpoint(), ipu->get_netpoint(), nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, false);
      zone->add_route(ipu->get_netpoint(), p.host->get_netpoint(), nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::DOWN}}, false);
    }
  }

  // One Streaming Memory per group of `shared_by` IPUs: reads and writes share its bandwidth.
  // Every group is named in the log, as the host links; only the groups a run uses are built.
  void add_streaming_memory(Platform& p) const {
    if (!hw.streaming_memory.present) return;
    const int per = hw.streaming_memory.shared_by;
    const int memory_slot0 = static_cast<int>(p.link_names.size());
    for (int first = 0; first < hw.ipu_count; first += per)
      p.link_names.push_back("streaming-memory(" + group_name(first, per) + ")");
    std::map<int, std::pair<sg4::Host*, sg4::Link*>> memories;
    for (const Program& program : schedule.programs) {
      const int i = program.ipu, g = i / per;
      p.memory_slots_of_ipu[i] = {memory_slot0 + g};
      if (!simulated(i)) continue;
      sg4::Host* ipu = p.ipus.at(i);
      auto& [memory, channel] = memories[g];
      if (memory == nullptr) {
        memory = zone->create_host(prefix + "memory" + std::to_string(g), kHostSpeed);
        channel = zone->create_link(prefix + "memory-channel" + std::to_string(g), hw.streaming_memory.bandwidth_bytes_per_s)
                      ->set_latency(hw.streaming_memory.latency_s)
                      ->seal();
      }
      zone->add_route(memory->get_netpoint(), ipu->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(channel)}, true);
      p.memory_of_ipu[i] = memory;
    }
  }
};

} // namespace

Platform build_platform(const HardwareConfig& hw, const Schedule& schedule, const PlatformNeeds* needs) {
  Platform p;
  p.stride = hw.ipu_count + 1;
  PlatformBuilder build{hw, schedule, needs, nullptr, {}};
  build.zone = new_platform_zone(build.prefix);
  for (const Program& program : schedule.programs)
    if (build.simulated(program.ipu))
      p.ipus.emplace(program.ipu, build.zone->create_host(build.prefix + "ipu" + std::to_string(program.ipu), kHostSpeed));
  p.host = build.zone->create_host(build.prefix + "host", kHostSpeed);
  build.add_ipu_links(p);
  build.add_host_links(p);
  build.add_streaming_memory(p);
  // SimGrid seals a zone's hosts by looking them up from the root zone, which does not hold a
  // later run's zone: its hosts are sealed here (sealing twice does nothing).
  for (const auto& [_, ipu] : p.ipus) ipu->seal();
  p.host->seal();
  for (const auto& [_, memory] : p.memory_of_ipu) memory->seal();
  build.zone->seal();
  return p;
}

} // namespace ipusim
