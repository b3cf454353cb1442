#include "sim/plan/routes.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

int far_end(const HardwareConfig& hw, const Hop& h) { return h.forward ? hw.links[h.link].b : hw.links[h.link].a; }
int near_end(const HardwareConfig& hw, const Hop& h) { return h.forward ? hw.links[h.link].a : hw.links[h.link].b; }

std::vector<std::vector<Hop>> adjacency_of(const HardwareConfig& hw) {
  std::vector<std::vector<Hop>> adjacency(static_cast<std::size_t>(hw.ipu_count));
  for (std::size_t i = 0; i < hw.links.size(); ++i) {
    adjacency[hw.links[i].a].push_back({static_cast<int>(i), true});
    adjacency[hw.links[i].b].push_back({static_cast<int>(i), false});
  }
  for (auto& hops : adjacency)
    std::sort(hops.begin(), hops.end(),
              [&](const Hop& x, const Hop& y) { return far_end(hw, x) < far_end(hw, y); });
  return adjacency;
}

} // namespace

void check_connected(const HardwareConfig& hw) {
  // Links are full duplex, so the system is connected iff IPU 0 reaches every IPU.
  const int n = hw.ipu_count;
  if (n <= 0) return;
  const auto adjacency = adjacency_of(hw);
  std::vector<char> reached(static_cast<std::size_t>(n), 0);
  std::vector<int> stack{0};
  reached[0] = 1;
  while (!stack.empty()) {
    const int at = stack.back();
    stack.pop_back();
    for (const Hop& h : adjacency[at])
      if (!reached[far_end(hw, h)]) reached[far_end(hw, h)] = 1, stack.push_back(far_end(hw, h));
  }
  for (int dst = 1; dst < n; ++dst)
    if (!reached[dst])
      throw InputError(hw.file, "/links", "link.disconnected",
                       "IPU 0 cannot reach IPU " + std::to_string(dst) + " over the configured IPU-Links");
}

RouteFinder::RouteFinder(const HardwareConfig& hardware) : hw_(hardware), adjacency_(adjacency_of(hardware)) {}

Route RouteFinder::route(int src, int dst) {
  // Callers check their IPUs against the system first (physical_ipus); an IPU outside it
  // would index past the tables below.
  if (src < 0 || dst < 0 || src >= hw_.ipu_count || dst >= hw_.ipu_count)
    throw std::logic_error("a route from IPU " + std::to_string(src) + " to IPU " + std::to_string(dst) + " of \"" +
                           hw_.name + "\", which has " + std::to_string(hw_.ipu_count) + " IPUs");
  auto found = via_.find(src);
  if (found == via_.end()) {
    std::vector<char> seen(static_cast<std::size_t>(hw_.ipu_count), 0);
    std::vector<Hop> via(static_cast<std::size_t>(hw_.ipu_count));
    std::deque<int> queue{src};
    seen[src] = 1;
    while (!queue.empty()) {
      const int at = queue.front();
      queue.pop_front();
      for (const Hop& h : adjacency_[at]) {
        const int next = far_end(hw_, h);
        if (seen[next]) continue;
        seen[next] = 1;
        via[next] = h;
        queue.push_back(next);
      }
    }
    found = via_.emplace(src, std::move(via)).first;
  }
  Route r;
  for (int at = dst; at != src; at = near_end(hw_, found->second[at])) r.push_back(found->second[at]);
  std::reverse(r.begin(), r.end());
  return r;
}

PathTable::PathTable(const HardwareConfig& hardware) : hw_(hardware), finder_(hardware) {}

RoutePath PathTable::find(int src, int dst) {
  RoutePath p;
  for (const Hop& hop : finder_.route(src, dst)) {
    const LinkSpec& link = hw_.links[static_cast<std::size_t>(hop.link)];
    p.latency += link.latency_s;
    p.bandwidth = p.slots.empty() ? link.bandwidth_bytes_per_s : std::min(p.bandwidth, link.bandwidth_bytes_per_s);
    p.slots.push_back(directed_link_slot(hop));
  }
  return p;
}

const RoutePath& PathTable::path(int src, int dst) {
  const auto n = static_cast<std::size_t>(hw_.ipu_count);
  const std::size_t key = static_cast<std::size_t>(src) * n + static_cast<std::size_t>(dst);
  if (hw_.ipu_count > kDenseIpus) {
    auto found = sparse_.find(static_cast<std::int64_t>(key));
    if (found == sparse_.end()) {
      found_.push_back(find(src, dst));
      found = sparse_.emplace(static_cast<std::int64_t>(key), &found_.back()).first;
    }
    return *found->second;
  }
  if (dense_.empty()) dense_.assign(n * n, nullptr);
  const RoutePath*& path = dense_[key];
  if (path == nullptr) {
    found_.push_back(find(src, dst));
    path = &found_.back();
  }
  return *path;
}

std::vector<std::vector<Route>> compute_routes(const HardwareConfig& hw) {
  check_connected(hw);
  const auto n = static_cast<std::size_t>(hw.ipu_count);
  RouteFinder finder(hw);
  std::vector<std::vector<Route>> routes(n, std::vector<Route>(n));
  for (int src = 0; src < hw.ipu_count; ++src)
    for (int dst = 0; dst < hw.ipu_count; ++dst)
      if (src != dst) routes[src][dst] = finder.route(src, dst);
  return routes;
}

std::string directed_link_name(const HardwareConfig& hw, const Hop& hop) {
  const LinkSpec& l = hw.links[hop.link];
  const int from = hop.forward ? l.a : l.b;
  const int to = hop.forward ? l.b : l.a;
  const std::string direction = "ipu" + std::to_string(from) + "->ipu" + std::to_string(to);
  return l.name.empty() ? direction : l.name + " " + direction;
}

} // namespace ipusim
