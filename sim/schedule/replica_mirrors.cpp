#include "sim/schedule/replica_mirrors.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "sim/plan/routes.hpp"

namespace ipusim {

namespace {

bool same_step_apart_from_transfers(const Step& a, const Step& b) {
  return a.kind == b.kind && a.seconds == b.seconds && a.bytes == b.bytes && a.stage == b.stage &&
         a.micro_batch == b.micro_batch && a.pass == b.pass && a.overlapped == b.overlapped &&
         a.prefetched == b.prefetched && a.floor_seconds == b.floor_seconds && a.transfers.size() == b.transfers.size();
}

bool same_repeats(const std::vector<Repeat>& a, const std::vector<Repeat>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Repeat& x, const Repeat& y) {
    return x.first == y.first && x.length == y.length && x.times == y.times && x.stride == y.stride && x.loop == y.loop;
  });
}

// Checks the units against unit 0 and fills `mirrors.member_mirrors`; the reason when they differ.
class UnitComparison {
public:
  UnitComparison(const Schedule& schedule, const HardwareConfig& hw, const CollectiveBlocks& blocks,
                 ReplicaMirrors& mirrors)
      : schedule_(schedule), hw_(hw), blocks_(blocks), mirrors_(mirrors), finder_(hw) {}

  std::string compare() {
    const std::size_t n = mirrors_.programs_per_unit;
    for (std::size_t a = 0; a < n; ++a) {
      const Program& source = schedule_.programs[a];
      const auto ranges = blocks_.ranges(a);
      for (std::size_t k = 1; k < mirrors_.units; ++k) {
        const Program& mirror = schedule_.programs[a + k * n];
        const int shift = static_cast<int>(k) * mirrors_.ipus_per_unit;
        if (mirror.ipu != source.ipu + shift)
          return "IPU " + std::to_string(mirror.ipu) + " does not sit where IPU " + std::to_string(source.ipu) +
                 " does in its unit";
        if (mirror.steps.size() != source.steps.size() || !same_repeats(mirror.repeats, source.repeats))
          return "IPU " + std::to_string(mirror.ipu) + " runs another program than IPU " + std::to_string(source.ipu);
        if (std::string why = compare_blocks(a, a + k * n); !why.empty()) return why;
        if (std::string why = compare_steps(source, mirror, ranges, k); !why.empty()) return why;
      }
    }
    return {};
  }

private:
  // The mirror's blocks begin at the source's steps, in the same groups, as long.
  std::string compare_blocks(std::size_t source, std::size_t mirror) {
    if (blocks_.starts.empty()) return {};
    const auto& mine = blocks_.starts[source];
    const auto& theirs = blocks_.starts[mirror];
    const std::string who = "IPU " + std::to_string(schedule_.programs[mirror].ipu);
    if (mine.size() != theirs.size()) return who + " has other collective blocks than its unit 0 counterpart";
    for (auto i = mine.begin(), j = theirs.begin(); i != mine.end(); ++i, ++j) {
      const auto [g, m] = i->second;
      if (i->first != j->first || j->second.first != g ||
          blocks_.groups[g].members[j->second.second].steps.size() != blocks_.groups[g].members[m].steps.size())
        return who + " has other collective blocks than its unit 0 counterpart";
      auto& members = mirrors_.member_mirrors[g];
      if (members.empty()) members.resize(blocks_.groups[g].members.size());
      members[m].push_back(static_cast<std::uint32_t>(j->second.second));
    }
    return {};
  }

  std::string compare_steps(const Program& source, const Program& mirror,
                            const std::vector<std::pair<std::size_t, std::size_t>>& ranges, std::size_t k) {
    const int shift = static_cast<int>(k) * mirrors_.ipus_per_unit;
    // `ranges` ascend by first step and do not overlap: the one that may hold step s is the next.
    std::size_t next_range = 0;
    auto in_block = [&](std::size_t s) {
      while (next_range < ranges.size() && ranges[next_range].second <= s) ++next_range;
      return next_range < ranges.size() && s >= ranges[next_range].first;
    };
    for (std::size_t s = 0; s < source.steps.size(); ++s) {
      const Step& a = source.steps[s];
      const Step& b = mirror.steps[s];
      auto differs = [&](const char* how) {
        return "step " + std::to_string(s) + " of IPU " + std::to_string(mirror.ipu) + how + std::to_string(source.ipu) + "'s";
      };
      if (!same_step_apart_from_transfers(a, b)) return differs(" differs from IPU ");
      const bool block = in_block(s);
      for (std::size_t t = 0; t < a.transfers.size(); ++t) {
        const Transfer& x = a.transfers[t];
        const Transfer& y = b.transfers[t];
        if (x.bytes != y.bytes) return differs(" moves other bytes than IPU ");
        if (block) continue;  // the group's dataflow times it, member by member
        if (!inside_unit0(x.src_ipu) || !inside_unit0(x.dst_ipu))
          return "copy " + std::to_string(x.copy) + " leaves its unit outside a timed collective";
        if (y.src_ipu != x.src_ipu + shift || y.dst_ipu != x.dst_ipu + shift)
          return differs(" copies between other IPUs than IPU ");
        if (std::string why = compare_route(x.src_ipu, x.dst_ipu, k); !why.empty()) return why;
      }
    }
    return {};
  }

  bool inside_unit0(int ipu) const { return ipu >= 0 && ipu < mirrors_.ipus_per_unit; }

  // The mirror's route between its own IPUs is unit 0's hop for hop, on links no other unit uses.
  std::string compare_route(int src, int dst, std::size_t k) {
    if (src == dst) return {};
    const int shift = static_cast<int>(k) * mirrors_.ipus_per_unit;
    if (!checked_.insert({src, dst, static_cast<int>(k)}).second) return {};
    const Route ours = finder_.route(src, dst);
    const Route theirs = finder_.route(src + shift, dst + shift);
    const std::string which = "the route from IPU " + std::to_string(src + shift) + " to IPU " + std::to_string(dst + shift);
    if (ours.size() != theirs.size()) return which + " is not as long as its unit 0 counterpart";
    for (std::size_t h = 0; h < ours.size(); ++h) {
      const LinkSpec& x = hw_.links[static_cast<std::size_t>(ours[h].link)];
      const LinkSpec& y = hw_.links[static_cast<std::size_t>(theirs[h].link)];
      if (x.bandwidth_bytes_per_s != y.bandwidth_bytes_per_s || x.latency_s != y.latency_s)
        return which + " crosses other links than its unit 0 counterpart";
      for (const auto& [link, unit] : {std::pair{ours[h].link, 0}, std::pair{theirs[h].link, static_cast<int>(k)}}) {
        const auto [at, fresh] = link_unit_.emplace(link, unit);
        if (!fresh && at->second != unit) return which + " shares a link with another unit's";
      }
    }
    return {};
  }

  const Schedule& schedule_;
  const HardwareConfig& hw_;
  const CollectiveBlocks& blocks_;
  ReplicaMirrors& mirrors_;
  RouteFinder finder_;
  std::set<std::tuple<int, int, int>> checked_;  // (src, dst, unit) routes compared
  std::map<int, int> link_unit_;                  // link -> the unit whose copies use it
};

// IPUs per unit: whole host-link groups and whole Streaming Memory groups.
int unit_size(const HardwareConfig& hw) {
  int size = std::max(1, hw.host_link.shared_by);
  if (hw.streaming_memory.present) size = std::lcm(size, std::max(1, hw.streaming_memory.shared_by));
  return size;
}

} // namespace

ReplicaMirrors find_replica_mirrors(const Schedule& schedule, const HardwareConfig& hw, const CollectiveBlocks& blocks) {
  ReplicaMirrors mirrors;
  mirrors.programs_per_unit = schedule.programs.size();
  if (!blocks.not_timed.empty() && blocks.not_timed != kNoCollectiveCopies) {
    mirrors.not_mirrored = "the collectives are simulated transfer by transfer (" + blocks.not_timed + ")";
    return mirrors;
  }
  const int size = unit_size(hw);
  std::size_t first_unit = 0;
  while (first_unit < schedule.programs.size() && schedule.programs[first_unit].ipu < size) ++first_unit;
  const std::size_t n = first_unit;
  if (n == 0 || schedule.programs.size() % n != 0 || schedule.programs.size() == n) {
    mirrors.not_mirrored = "no unit of " + std::to_string(size) + " IPUs repeats the first one's programs";
    return mirrors;
  }
  mirrors.units = schedule.programs.size() / n;
  mirrors.programs_per_unit = n;
  mirrors.ipus_per_unit = size;
  mirrors.member_mirrors.resize(blocks.groups.size());
  if (std::string why = UnitComparison(schedule, hw, blocks, mirrors).compare(); !why.empty()) {
    ReplicaMirrors none;
    none.programs_per_unit = schedule.programs.size();
    none.not_mirrored = std::move(why);
    return none;
  }
  return mirrors;
}

}  // namespace ipusim
