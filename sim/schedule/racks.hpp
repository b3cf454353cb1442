#pragma once
// Replicas grouped by rack (IPU-Link domain) for hierarchical collectives: the replica ids
// whose IPU lies in each rack, racks ascending, or one group of all replicas when they do
// not split evenly over racks.
#include <map>
#include <vector>

namespace ipusim {

// `physical[r]`: the IPU replica r uses for the virtual IPU in question.
inline std::vector<std::vector<int>> replicas_by_rack(const std::vector<int>& physical, int rack_ipus) {
  std::map<int, std::vector<int>> by_rack;
  for (std::size_t r = 0; r < physical.size(); ++r) by_rack[physical[r] / rack_ipus].push_back(static_cast<int>(r));
  std::vector<std::vector<int>> racks;
  for (auto& [rack, members] : by_rack) racks.push_back(members);
  for (const auto& members : racks)
    if (members.size() != racks.front().size()) {
      std::vector<int> all;
      for (std::size_t r = 0; r < physical.size(); ++r) all.push_back(static_cast<int>(r));
      return {all};
    }
  return racks;
}

} // namespace ipusim
