#include "sim/plan/routes.hpp"

#include <algorithm>
#include <deque>

#include "sim/io/input_error.hpp"

namespace ipusim {

std::vector<std::vector<Route>> compute_routes(const HardwareConfig& hw) {
  const int n = hw.ipu_count;
  std::vector<std::vector<Hop>> adjacency(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < hw.links.size(); ++i) {
    adjacency[hw.links[i].a].push_back({static_cast<int>(i), true});
    adjacency[hw.links[i].b].push_back({static_cast<int>(i), false});
  }
  auto far_end = [&](const Hop& h) { return h.forward ? hw.links[h.link].b : hw.links[h.link].a; };
  auto near_end = [&](const Hop& h) { return h.forward ? hw.links[h.link].a : hw.links[h.link].b; };
  for (auto& hops : adjacency)
    std::sort(hops.begin(), hops.end(), [&](const Hop& x, const Hop& y) { return far_end(x) < far_end(y); });

  // Links are full duplex, so the system is connected iff IPU 0 reaches every IPU. Check that
  // before the n x n table below, so a large ipuCount with few links fails fast.
  if (n > 0) {
    std::vector<int> reached(static_cast<std::size_t>(n), 0);
    std::vector<int> stack{0};
    reached[0] = 1;
    while (!stack.empty()) {
      const int at = stack.back();
      stack.pop_back();
      for (const Hop& h : adjacency[at])
        if (!reached[far_end(h)]) reached[far_end(h)] = 1, stack.push_back(far_end(h));
    }
    for (int dst = 1; dst < n; ++dst)
      if (!reached[dst])
        throw InputError(hw.file, "/links", "link.disconnected",
                         "IPU 0 cannot reach IPU " + std::to_string(dst) + " over the configured IPU-Links");
  }

  std::vector<std::vector<Route>> routes(static_cast<std::size_t>(n), std::vector<Route>(static_cast<std::size_t>(n)));
  for (int src = 0; src < n; ++src) {
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    std::vector<Hop> via(static_cast<std::size_t>(n));
    std::deque<int> queue{src};
    seen[src] = 1;
    while (!queue.empty()) {
      const int at = queue.front();
      queue.pop_front();
      for (const Hop& h : adjacency[at]) {
        const int next = far_end(h);
        if (seen[next]) continue;
        seen[next] = 1;
        via[next] = h;
        queue.push_back(next);
      }
    }
    for (int dst = 0; dst < n; ++dst) {
      if (dst == src) continue;
      if (!seen[dst])
        throw InputError(hw.file, "/links", "link.disconnected",
                         "IPU " + std::to_string(src) + " cannot reach IPU " + std::to_string(dst) +
                             " over the configured IPU-Links");
      Route r;
      for (int at = dst; at != src; at = near_end(via[at]))
        r.push_back(via[at]);
      std::reverse(r.begin(), r.end());
      routes[src][dst] = r;
    }
  }
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
