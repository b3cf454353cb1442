// Finding a schedule's collective blocks and the groups they form (collective_dataflow.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "sim/plan/routes.hpp"
#include "sim/schedule/collective_dataflow.hpp"

namespace ipusim {

namespace {

bool in_collective(const Step& step) { return step.kind == StepKind::Exchange && step.pass == Pass::AllReduce; }

struct Block {
  std::size_t program = 0, first = 0, length = 0;
};

// Where a copy is sent or received inside a block: the block, the step within it, the
// transfer within the step.
struct CopyEnd {
  std::uint32_t block = 0, step = 0, transfer = 0;
  bool send = false;
};
// A copy may serve several blocks of one program (a reduce-scatter and, after the update, its
// all-gather): its uses are told apart by the blocks' first step, which must be the same step
// in the sender's and the receiver's programs, their loops alike, so that the n-th run of
// one block meets the n-th run of the other. A use's `count` sends and as many receives, each
// in program order, are at `sends` and `receives` in CopyUses::ends.
struct CopyUse {
  std::size_t sends = 0, receives = 0, count = 0;
};
// Every use of the blocks' copies, by copy and the blocks' first step: flat, because a
// Pod256's rings have 67,584 copies a run (a map of lists was a tenth of its run).
struct CopyUses {
  std::vector<CopyEnd> ends;
  std::vector<CopyUse> uses;
  const CopyEnd& send(const CopyUse& use, std::size_t n) const { return ends[use.sends + n]; }
  const CopyEnd& receive(const CopyUse& use, std::size_t n) const { return ends[use.receives + n]; }
};

bool same_loops(const Program& a, const Program& b) {
  if (a.repeats.size() != b.repeats.size()) return false;
  for (std::size_t i = 0; i < a.repeats.size(); ++i)
    if (a.repeats[i].first != b.repeats[i].first || a.repeats[i].length != b.repeats[i].length ||
        a.repeats[i].times != b.repeats[i].times)
      return false;
  return true;
}


// Maximal runs of all-reduce exchanges holding transfers; "" or why they cannot be timed apart.
std::string find_blocks(const Schedule& schedule, std::vector<Block>& blocks) {
  for (std::size_t p = 0; p < schedule.programs.size(); ++p) {
    const Program& program = schedule.programs[p];
    for (std::size_t i = 0; i < program.steps.size();) {
      if (!in_collective(program.steps[i])) {
        ++i;
        continue;
      }
      std::size_t end = i;
      bool transfers = false;
      while (end < program.steps.size() && in_collective(program.steps[end]))
        transfers |= !program.steps[end++].transfers.empty();
      for (const Repeat& r : program.repeats)
        if ((r.first > i && r.first < end) || (r.first + r.length > i && r.first + r.length < end))
          return "a loop begins or ends inside IPU " + std::to_string(program.ipu) + "'s all-reduce steps";
      if (transfers) blocks.push_back({p, i, end - i});
      i = end;
    }
  }
  return "";
}

// The directed links that transfers outside the blocks use, and the copies they carry
// (flags by slot and by copy id).
void outside_traffic(const Schedule& schedule, const std::vector<Block>& blocks, PathTable& routes,
                     std::vector<char>& slots, std::vector<char>& copies) {
  std::vector<std::vector<char>> inside(schedule.programs.size());
  for (std::size_t p = 0; p < schedule.programs.size(); ++p) inside[p].assign(schedule.programs[p].steps.size(), 0);
  for (const Block& b : blocks)
    for (std::size_t s = b.first; s < b.first + b.length; ++s) inside[b.program][s] = 1;
  for (std::size_t p = 0; p < schedule.programs.size(); ++p) {
    const Program& program = schedule.programs[p];
    for (std::size_t s = 0; s < program.steps.size(); ++s) {
      if (inside[p][s] != 0) continue;
      for (const Transfer& t : program.steps[s].transfers) {
        copies[static_cast<std::size_t>(t.copy)] = 1;
        if (t.src_ipu == t.dst_ipu) continue;
        for (int slot : routes.path(t.src_ipu, t.dst_ipu).slots) slots[static_cast<std::size_t>(slot)] = 1;
      }
    }
  }
}

// Calls f(block, step within it, transfer within the step, transfer) for every transfer of the blocks.
template <class F>
void for_each_block_transfer(const Schedule& schedule, const std::vector<Block>& blocks, F&& f) {
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Program& program = schedule.programs[blocks[b].program];
    for (std::size_t k = 0; k < blocks[b].length; ++k) {
      const auto& transfers = program.steps[blocks[b].first + k].transfers;
      for (std::size_t t = 0; t < transfers.size(); ++t) f(b, k, t, transfers[t]);
    }
  }
}

// Indices into a group's members, steps and sends, kept in 32 bits (collective_dataflow.hpp).
std::uint32_t narrow(std::size_t i) {
  if (i > UINT32_MAX) throw std::length_error("an all-reduce block with over 2^32 steps, members or transfers");
  return static_cast<std::uint32_t>(i);
}

// The blocks' copy ends grouped by copy (a counting sort, which keeps program order), then
// within a copy by the blocks' first step, sends before receives, keeping program order (a
// ring member's copy to its neighbour serves every step of its block: hundreds of ends).
// "" or why the blocks' transfers cannot be timed apart.
std::string sort_copy_ends(const Schedule& schedule, const std::vector<Block>& blocks,
                           const std::vector<char>& outside, std::vector<CopyEnd>& ends,
                           std::vector<std::size_t>& copy_start) {
  std::string why;
  copy_start.assign(outside.size() + 1, 0);
  for_each_block_transfer(schedule, blocks, [&](std::size_t b, std::size_t, std::size_t, const Transfer& x) {
    const int ipu = schedule.programs[blocks[b].program].ipu;
    if (!why.empty()) return;
    if (x.src_ipu == x.dst_ipu || (x.src_ipu != ipu && x.dst_ipu != ipu))
      why = "an all-reduce step of IPU " + std::to_string(ipu) + " lists another pair's transfer";
    else if (outside[static_cast<std::size_t>(x.copy)] != 0)
      why = "an all-reduce copy is also sent outside the all-reduce steps";
    else
      ++copy_start[static_cast<std::size_t>(x.copy) + 1];
  });
  if (!why.empty()) return why;
  std::partial_sum(copy_start.begin(), copy_start.end(), copy_start.begin());
  ends.resize(copy_start.back());
  std::vector<std::size_t> next(copy_start.begin(), copy_start.end() - 1);
  for_each_block_transfer(schedule, blocks, [&](std::size_t b, std::size_t k, std::size_t t, const Transfer& x) {
    const bool send = x.src_ipu == schedule.programs[blocks[b].program].ipu;
    ends[next[static_cast<std::size_t>(x.copy)]++] = {narrow(b), narrow(k), narrow(t), send};
  });
  auto before = [&](const CopyEnd& a, const CopyEnd& b) {
    const std::size_t fa = blocks[a.block].first, fb = blocks[b.block].first;
    return fa != fb ? fa < fb : a.send && !b.send;
  };
  for (std::size_t c = 0; c + 1 < copy_start.size(); ++c) {
    const auto first = ends.begin() + static_cast<std::ptrdiff_t>(copy_start[c]);
    const auto last = ends.begin() + static_cast<std::ptrdiff_t>(copy_start[c + 1]);
    if (last - first > 16) {
      std::stable_sort(first, last, before);
      continue;
    }
    for (auto i = first; i != last; ++i)
      for (auto j = i; j != first && before(*j, *(j - 1)); --j) std::iter_swap(j, j - 1);
  }
  return "";
}

// Copies used by the blocks, checked: each sent by one block and received by another, as
// often, and by nothing else. "" or why not.
std::string use_copies(const Schedule& schedule, const std::vector<Block>& blocks, const std::vector<char>& outside,
                       CopyUses& copies) {
  std::vector<std::size_t> copy_start;
  if (std::string why = sort_copy_ends(schedule, blocks, outside, copies.ends, copy_start); !why.empty()) return why;
  const std::vector<CopyEnd>& ends = copies.ends;
  for (std::size_t c = 0; c + 1 < copy_start.size(); ++c)
    for (std::size_t i = copy_start[c]; i < copy_start[c + 1];) {
      const std::size_t first = blocks[ends[i].block].first;
      std::size_t receives = i;
      while (receives < copy_start[c + 1] && blocks[ends[receives].block].first == first && ends[receives].send)
        ++receives;
      std::size_t end = receives;
      while (end < copy_start[c + 1] && blocks[ends[end].block].first == first) ++end;
      if (receives - i != end - receives || receives == i)
        return "an all-reduce copy is sent and received a different number of times";
      const CopyUse& use = copies.uses.emplace_back(CopyUse{i, receives, receives - i});
      for (std::size_t n = 0; n < use.count; ++n) {
        if (copies.send(use, n).block != copies.send(use, 0).block) return "an all-reduce copy has two senders";
        if (copies.receive(use, n).block != copies.receive(use, 0).block) return "an all-reduce copy has two receivers";
      }
      if (!same_loops(schedule.programs[blocks[copies.send(use, 0).block].program],
                      schedule.programs[blocks[copies.receive(use, 0).block].program]))
        return "an all-reduce copy joins programs with different loops";
      i = end;
    }
  return "";
}

std::size_t find_root(std::vector<std::size_t>& parent, std::size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

// Blocks joined by a copy or by a link their transfers share (of the system's `slots` directed
// links); "" or why they cannot be timed apart.
std::string join_blocks(const Schedule& schedule, const std::vector<Block>& blocks, const CopyUses& copies,
                        const std::vector<char>& outside_slots, PathTable& routes, std::vector<std::size_t>& parent) {
  parent.resize(blocks.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto join = [&](std::size_t a, std::size_t b) { parent[find_root(parent, a)] = find_root(parent, b); };
  for (const CopyUse& use : copies.uses) join(copies.send(use, 0).block, copies.receive(use, 0).block);
  // Per directed link slot: the first block whose transfers take it, or none.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> block_on_slot(outside_slots.size(), kNone);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Program& program = schedule.programs[blocks[b].program];
    const RoutePath* path = nullptr;  // a ring member sends to the same neighbour at every step
    int path_dst = -1;
    for (std::size_t k = blocks[b].first; k < blocks[b].first + blocks[b].length; ++k)
      for (const Transfer& t : program.steps[k].transfers) {
        if (t.src_ipu != program.ipu) continue;
        if (path == nullptr || t.dst_ipu != path_dst) path = &routes.path(t.src_ipu, t.dst_ipu), path_dst = t.dst_ipu;
        for (int slot : path->slots) {
          if (outside_slots[static_cast<std::size_t>(slot)] != 0)
            return "a link carries both a collective's and other copies (the pipeline's)";
          std::size_t& first = block_on_slot[static_cast<std::size_t>(slot)];
          if (first == kNone) {
            first = b;
            continue;
          }
          // Blocks at one step of their programs run together; others (a reduce-scatter and
          // its all-gather) may overlap where members run apart, and would need timing together.
          if (blocks[first].first != blocks[b].first)
            return "two collectives at different steps of a program (a reduce-scatter and its all-gather) share a link";
          join(first, b);
        }
      }
  }
  return "";
}

// (member, step) pairs of a group in an order where every step comes after the steps it waits for.
using StepOrder = std::vector<std::pair<std::size_t, std::size_t>>;

// The group's steps in an order that respects what each waits for; false on a cycle.
bool order_steps(const CollectiveGroup& group, StepOrder& order) {
  std::vector<std::size_t> next(group.members.size(), 0);
  auto ready = [&](std::size_t m) {
    for (const DataflowReceive& r : group.members[m].steps[next[m]].receives)
      if (r.step > next[r.member]) return false;  // its sender has not begun that step
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t m = 0; m < group.members.size(); ++m)
      while (next[m] < group.members[m].steps.size() && ready(m)) {
        order.emplace_back(m, next[m]++);
        progress = true;
      }
  }
  for (std::size_t m = 0; m < group.members.size(); ++m)
    if (next[m] < group.members[m].steps.size()) return false;
  return true;
}

// Whether every member's last step waits (through the others) for every member's arrival.
// Per (member, step), as bits over the members: whose arrival its end waits for.
bool all_wait_for_all(const CollectiveGroup& group, const StepOrder& order) {
  const std::size_t n = group.members.size(), words = (n + 63) / 64;
  std::vector<std::size_t> first(n + 1, 0);  // a member's first step among all, in words
  for (std::size_t m = 0; m < n; ++m) first[m + 1] = first[m] + group.members[m].steps.size() * words;
  std::vector<std::uint64_t> end(first[n], 0);
  auto end_of = [&](std::size_t m, std::size_t k) { return end.data() + first[m] + k * words; };
  // What a step's start waits for: its member's previous step's end, or its member's arrival.
  auto start_of = [&](std::size_t m, std::size_t k, std::uint64_t* into) {
    if (k > 0) {
      const std::uint64_t* previous = end_of(m, k - 1);
      for (std::size_t w = 0; w < words; ++w) into[w] |= previous[w];
    } else {
      into[m / 64] |= std::uint64_t{1} << (m % 64);
    }
  };
  for (const auto& [m, k] : order) {
    std::uint64_t* bits = end_of(m, k);
    start_of(m, k, bits);
    for (const DataflowReceive& r : group.members[m].steps[k].receives) start_of(r.member, r.step, bits);
  }
  for (std::size_t m = 0; m < n; ++m) {
    const std::uint64_t* last = end_of(m, group.members[m].steps.size() - 1);
    for (std::size_t i = 0; i < n; ++i)
      if ((last[i / 64] >> (i % 64) & 1u) == 0) return false;
  }
  return true;
}

// Builds the groups' members and sends (route, latency, narrowest link, whole bytes).
class GroupBuilder {
public:
  GroupBuilder(const Schedule& schedule, const HardwareConfig& hw, const std::vector<Block>& blocks,
               std::vector<std::size_t>& parent, PathTable& routes, CollectiveBlocks& result)
      : schedule_(schedule), hw_(hw), blocks_(blocks), routes_(routes), result_(result), place_(blocks.size()) {
    std::size_t steps = 0, transfers = 0;
    for (const Block& b : blocks) {
      steps += b.length;
      for (std::size_t k = b.first; k < b.first + b.length; ++k) transfers += schedule.programs[b.program].steps[k].transfers.size();
    }
    first_step_.reserve(blocks.size());
    step_first_transfer_.reserve(steps);
    send_index_.reserve(transfers);
    for (const Block& b : blocks) {
      first_step_.push_back(step_first_transfer_.size());
      const Program& program = schedule.programs[b.program];
      for (std::size_t k = b.first; k < b.first + b.length; ++k) {
        step_first_transfer_.push_back(send_index_.size());
        send_index_.resize(send_index_.size() + program.steps[k].transfers.size());
      }
    }
    std::map<std::size_t, std::size_t> group_of_root;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const auto [it, fresh] = group_of_root.emplace(find_root(parent, b), result.groups.size());
      if (fresh) result.groups.emplace_back();
      CollectiveGroup& g = result.groups[it->second];
      place_[b] = {it->second, g.members.size()};
      CollectiveMember member;
      member.program = blocks[b].program;
      member.first = blocks[b].first;
      member.steps.resize(blocks[b].length);
      g.members.push_back(std::move(member));
    }
    link_ids_.resize(result.groups.size());
    route_ids_.resize(result.groups.size());
  }

  // Each step's sends, and room for its receives (match fills it), in its group's stores.
  void add_sends() {
    std::vector<std::size_t> sends_of(result_.groups.size(), 0), receives_of(result_.groups.size(), 0);
    for_each_block_step([&](std::size_t g, std::size_t, const Program& program, const Step& step, DataflowStep&) {
      const std::size_t sends = sends_in(program, step);
      sends_of[g] += sends;
      receives_of[g] += step.transfers.size() - sends;
    });
    for (std::size_t g = 0; g < result_.groups.size(); ++g) {
      result_.groups[g].send_store.resize(sends_of[g]);
      result_.groups[g].receive_store.resize(receives_of[g]);
      result_.groups[g].flows = sends_of[g];  // a flow per send, numbered as the store holds them
      sends_of[g] = receives_of[g] = 0;  // from here on, each store's next free place
    }
    for_each_block_step([&](std::size_t g, std::size_t step_at, const Program& program, const Step& step, DataflowStep& out) {
      CollectiveGroup& group = result_.groups[g];
      const std::size_t sends = sends_in(program, step);
      out.seconds = step.seconds;
      out.first_flow = sends_of[g];
      out.sends = {group.send_store.data() + sends_of[g], sends};
      out.receives = {group.receive_store.data() + receives_of[g], 0};  // grows as match finds them
      sends_of[g] += sends;
      receives_of[g] += step.transfers.size() - sends;
      std::size_t* index = send_index_.data() + step_first_transfer_[step_at];
      for (std::size_t t = 0, next = 0; t < step.transfers.size(); ++t)
        if (step.transfers[t].src_ipu == program.ipu) {
          index[t] = next;
          out.sends[next++] = send(g, t, step.transfers[t]);
        }
    });
  }

  // The n-th receive of a copy takes its n-th send; both ends learn of each other.
  void match(const CopyUses& copies) {
    for (const CopyUse& use : copies.uses)
      for (std::size_t n = 0; n < use.count; ++n) {
        const CopyEnd& r = copies.receive(use, n);
        const CopyEnd& s = copies.send(use, n);
        CollectiveGroup& group = result_.groups[place_[r.block].first];
        const std::size_t index = send_index_[step_first_transfer_[first_step_[s.block] + s.step] + s.transfer];
        DataflowSend& sent = group.members[place_[s.block].second].steps[s.step].sends[index];
        sent.to_member = narrow(place_[r.block].second);
        sent.to_step = r.step;
        // Its step has room for every transfer it receives (add_sends).
        std::span<DataflowReceive>& receives = group.members[place_[r.block].second].steps[r.step].receives;
        receives = {receives.data(), receives.size() + 1};
        receives.back() = {narrow(place_[s.block].second), s.step, narrow(index)};
      }
  }

  const std::vector<std::pair<std::size_t, std::size_t>>& places() const { return place_; }

private:
  static std::size_t sends_in(const Program& program, const Step& step) {
    std::size_t sends = 0;
    for (const Transfer& t : step.transfers) sends += t.src_ipu == program.ipu ? 1 : 0;
    return sends;
  }

  // Calls f(group, the step's index among all blocks' steps, program, template step, its
  // dataflow step) for every step of every block, in block order.
  template <class F>
  void for_each_block_step(F&& f) {
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const Program& program = schedule_.programs[blocks_[b].program];
      const auto [g, m] = place_[b];
      for (std::size_t k = 0; k < blocks_[b].length; ++k)
        f(g, first_step_[b] + k, program, program.steps[blocks_[b].first + k], result_.groups[g].members[m].steps[k]);
    }
  }

  DataflowSend send(std::size_t g, std::size_t t, const Transfer& x) {
    DataflowSend s;
    s.transfer = narrow(t);
    s.bytes = std::floor(x.bytes);  // Comm::sendto_async takes an integer size
    s.route = narrow(route(g, x.src_ipu, x.dst_ipu));
    return s;
  }

  // The group's route from `src` to `dst` (its links numbered in the group), added the first time.
  std::size_t route(std::size_t g, int src, int dst) {
    CollectiveGroup& group = result_.groups[g];
    const std::int64_t key = static_cast<std::int64_t>(src) * (hw_.ipu_count + 1) + dst;
    auto& ids_of_routes = route_ids_[g];
    if (const auto found = ids_of_routes.find(key); found != ids_of_routes.end()) return found->second;  // no node built
    const std::size_t id_of_route = group.routes.size();
    ids_of_routes.emplace(key, id_of_route);
    const RoutePath& path = routes_.path(src, dst);
    group.route_latency.push_back(path.latency);
    group.route_bandwidth.push_back(path.bandwidth);
    std::vector<int>& ids = link_ids_[g];
    if (ids.empty()) ids.assign(2 * hw_.links.size(), -1);  // per directed link slot
    std::vector<int>& links = group.routes.emplace_back();
    for (int slot : path.slots) {
      int& id = ids[static_cast<std::size_t>(slot)];
      if (id < 0) {
        id = static_cast<int>(group.link_bandwidth.size());
        group.link_bandwidth.push_back(hw_.links[static_cast<std::size_t>(slot / 2)].bandwidth_bytes_per_s);
      }
      links.push_back(id);
    }
    return id_of_route;
  }

  const Schedule& schedule_;
  const HardwareConfig& hw_;
  const std::vector<Block>& blocks_;
  PathTable& routes_;
  CollectiveBlocks& result_;
  std::vector<std::pair<std::size_t, std::size_t>> place_;  // (group, member) per block
  std::vector<std::vector<int>> link_ids_;  // per group: directed link slot -> group link, or -1
  std::vector<std::unordered_map<std::int64_t, std::size_t>> route_ids_;  // per group: (src, dst) -> route
  // Per block step (first_step_[block] + step) its first transfer in send_index_; there, per
  // transfer, its index among the step's sends.
  std::vector<std::size_t> first_step_, step_first_transfer_, send_index_;
};

} // namespace

std::vector<std::pair<std::size_t, std::size_t>> CollectiveBlocks::ranges(std::size_t program) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (starts.empty()) return out;
  for (const auto& [first, at] : starts[program])
    out.emplace_back(first, first + groups[at.first].members[at.second].steps.size());
  return out;
}

CollectiveBlocks find_collective_blocks(const Schedule& schedule, const HardwareConfig& hw) {
  CollectiveBlocks result;
  auto refuse = [&](std::string why) {
    result.groups.clear();
    result.starts.clear();
    result.not_timed = std::move(why);
    return std::move(result);  // the caller returns it at once
  };
  std::vector<Block> blocks;
  if (std::string why = find_blocks(schedule, blocks); !why.empty()) return refuse(why);
  if (blocks.empty()) return refuse(kNoCollectiveCopies);
  PathTable routes(hw);
  std::vector<char> outside_slots(2 * hw.links.size(), 0);  // directed: two per IPU-Link
  std::vector<char> outside_copies(copy_count(schedule), 0);
  outside_traffic(schedule, blocks, routes, outside_slots, outside_copies);
  std::vector<std::pair<std::size_t, std::size_t>> places;
  // The copies' ends and the builder's indices are freed before the checks below allocate: on
  // a Pod256 they are megabytes, and fresh pages are what this costs most (a fault each).
  {
    CopyUses copies;
    if (std::string why = use_copies(schedule, blocks, outside_copies, copies); !why.empty()) return refuse(why);
    std::vector<std::size_t> parent;
    if (std::string why = join_blocks(schedule, blocks, copies, outside_slots, routes, parent); !why.empty())
      return refuse(why);
    GroupBuilder builder(schedule, hw, blocks, parent, routes, result);
    builder.add_sends();
    builder.match(copies);
    places = builder.places();
  }
  for (CollectiveGroup& g : result.groups) {
    StepOrder order;
    if (!order_steps(g, order)) return refuse("the all-reduce steps wait for each other in a cycle");
    if (!all_wait_for_all(g, order)) return refuse("some IPU leaves its all-reduce steps before another has begun them");
  }
  result.starts.resize(schedule.programs.size());
  for (std::size_t b = 0; b < blocks.size(); ++b) result.starts[blocks[b].program][blocks[b].first] = places[b];
  return result;
}

} // namespace ipusim
