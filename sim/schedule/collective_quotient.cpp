// quotient_of: a group's members replayed one a class (collective_dataflow.hpp). On ResNet-50's
// Bow Pod256 the 256 members of the gradient ring fall into 4 classes (an IPU-M2000's four IPUs,
// each mirrored by the same IPU of the 63 other machines): 528 steps and 1,056 transfers
// replayed instead of 33,792 and 67,584.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/schedule/collective_dataflow.hpp"

namespace ipusim {

namespace {

constexpr std::uint32_t kNoClass = UINT32_MAX;

std::string member_text(std::size_t m) { return "member " + std::to_string(m); }

std::string shortest(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

// The group's flow index of member m's send i at step k.
std::size_t flow_of(const CollectiveGroup& group, std::size_t m, std::size_t k, std::size_t i) {
  return group.members[m].steps[k].first_flow + i;
}

// Checks each member's steps against its representative's and numbers every flow by its
// representative's flow (its class). "" or why the member does not run as its class.
std::string classify_flows(const CollectiveGroup& group, const std::vector<std::uint32_t>& rep,
                           std::vector<std::uint32_t>& flow_class) {
  flow_class.assign(group.flows, kNoClass);
  for (std::size_t m = 0; m < group.members.size(); ++m) {
    const std::size_t r = rep[m];
    const auto& steps = group.members[m].steps;
    const auto& model = group.members[r].steps;
    if (steps.size() != model.size()) return member_text(m) + " has another number of steps than its class";
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const DataflowStep& a = steps[k];
      const DataflowStep& b = model[k];
      if (a.seconds != b.seconds || a.sends.size() != b.sends.size() || a.receives.size() != b.receives.size())
        return member_text(m) + " step " + std::to_string(k) + " differs from its class's";
      for (std::size_t i = 0; i < a.sends.size(); ++i) {
        const DataflowSend& x = a.sends[i];
        const DataflowSend& y = b.sends[i];
        if (x.bytes != y.bytes || x.to_step != y.to_step || rep[x.to_member] != rep[y.to_member] ||
            group.route_latency[x.route] != group.route_latency[y.route] ||
            group.route_bandwidth[x.route] != group.route_bandwidth[y.route])
          return member_text(m) + " step " + std::to_string(k) + " sends otherwise than its class";
        flow_class[a.first_flow + i] = static_cast<std::uint32_t>(flow_of(group, r, k, i));
      }
    }
  }
  return "";
}

// Each member receives, at each step, transfers of the classes its representative receives, as
// many of each. "" or why not.
std::string check_receives(const CollectiveGroup& group, const std::vector<std::uint32_t>& rep,
                           const std::vector<std::uint32_t>& flow_class) {
  std::vector<std::uint32_t> mine, theirs;
  auto classes = [&](const DataflowStep& step, std::vector<std::uint32_t>& out) {
    out.clear();
    for (const DataflowReceive& x : step.receives) out.push_back(flow_class[flow_of(group, x.member, x.step, x.send)]);
    std::sort(out.begin(), out.end());
  };
  for (std::size_t m = 0; m < group.members.size(); ++m)
    for (std::size_t k = 0; k < group.members[m].steps.size(); ++k) {
      classes(group.members[m].steps[k], mine);
      classes(group.members[rep[m]].steps[k], theirs);
      if (mine != theirs) return member_text(m) + " step " + std::to_string(k) + " receives otherwise than its class";
    }
  return "";
}

// No link can be asked for more than it carries (collective_dataflow.hpp): per link, the sum
// over the members crossing it of the most one step of theirs sends across it, each transfer
// at its route's narrowest bandwidth, is at most the link's bandwidth. "" or the first link
// that could be oversubscribed.
std::string check_uncongested(const CollectiveGroup& group) {
  const std::size_t links = group.link_bandwidth.size();
  std::vector<double> demand(links, 0.0), step_demand(links, 0.0), most(links, 0.0);
  std::vector<std::size_t> crossed;  // links a member crosses, once each
  std::vector<char> seen(links, 0);
  for (const CollectiveMember& member : group.members) {
    crossed.clear();
    for (const DataflowStep& step : member.steps) {
      for (const DataflowSend& send : step.sends)
        for (int l : group.links(send)) step_demand[static_cast<std::size_t>(l)] += group.route_bandwidth[send.route];
      for (const DataflowSend& send : step.sends)
        for (int l : group.links(send)) {
          const auto i = static_cast<std::size_t>(l);
          most[i] = std::max(most[i], step_demand[i]);
          step_demand[i] = 0;
          if (seen[i] == 0) seen[i] = 1, crossed.push_back(i);
        }
    }
    for (std::size_t i : crossed) {
      demand[i] += most[i];
      most[i] = 0;
      seen[i] = 0;
    }
  }
  for (std::size_t l = 0; l < links; ++l)
    if (demand[l] > group.link_bandwidth[l])
      return "group link " + std::to_string(l) + " could be asked for " + shortest(demand[l]) + " B/s, above its " +
             shortest(group.link_bandwidth[l]);
  return "";
}

// The quotient group from the classes' representatives (members whose class is their own).
class QuotientBuilder {
public:
  // `flow_class`: per flow of the group, its class's flow (classify_flows).
  QuotientBuilder(const CollectiveGroup& group, const std::vector<std::uint32_t>& rep,
                  const std::vector<std::uint32_t>& flow_class, CollectiveQuotient& out)
      : group_(group), rep_(rep), flow_class_(flow_class), out_(out) {}

  void build() {
    CollectiveGroup& q = out_.group;
    out_.member_class.assign(group_.members.size(), kNoClass);
    std::vector<std::size_t> representatives;
    for (std::size_t m = 0; m < group_.members.size(); ++m)
      if (rep_[m] == m) {
        out_.member_class[m] = static_cast<std::uint32_t>(representatives.size());
        representatives.push_back(m);
      }
    for (std::size_t m = 0; m < group_.members.size(); ++m) out_.member_class[m] = out_.member_class[rep_[m]];
    std::size_t sends = 0, receives = 0;
    for (std::size_t r : representatives)
      for (const DataflowStep& step : group_.members[r].steps) sends += step.sends.size(), receives += step.receives.size();
    q.send_store.resize(sends);
    q.receive_store.resize(receives);
    // The representatives take their own routes (the group's, shared by their classes).
    q.link_bandwidth = group_.link_bandwidth;
    q.routes = group_.routes;
    q.route_latency = group_.route_latency;
    q.route_bandwidth = group_.route_bandwidth;
    // Each representative's flows are numbered anew, in the quotient's store order.
    std::vector<std::uint32_t> quotient_flow(group_.flows, kNoClass);
    for (std::size_t r : representatives)
      for (const DataflowStep& step : group_.members[r].steps)
        for (std::size_t i = 0; i < step.sends.size(); ++i)
          quotient_flow[step.first_flow + i] = static_cast<std::uint32_t>(q.flows++);
    q.settles.assign(q.flows, 0);
    std::size_t next_send = 0, next_receive = 0;
    for (std::size_t r : representatives) {
      const CollectiveMember& source = group_.members[r];
      CollectiveMember& member = q.members.emplace_back();
      member.program = source.program;
      member.first = source.first;
      for (const DataflowStep& step : source.steps) {
        DataflowStep& copy = member.steps.emplace_back();
        copy.seconds = step.seconds;
        copy.first_flow = step.sends.empty() ? 0 : quotient_flow[step.first_flow];
        copy.sends = {q.send_store.data() + next_send, step.sends.size()};
        copy.receives = {q.receive_store.data() + next_receive, step.receives.size()};
        next_send += step.sends.size();
        next_receive += step.receives.size();
        for (std::size_t i = 0; i < step.sends.size(); ++i) copy.sends[i] = send(step, i, out_.member_class);
        for (std::size_t j = 0; j < step.receives.size(); ++j) {
          const DataflowReceive& x = step.receives[j];
          copy.receives[j] = {out_.member_class[x.member], x.step, x.send};
          // Each receive of this class's flow settles one of the representative's: counted per flow.
          ++q.settles[quotient_flow[flow_class_[flow_of(group_, x.member, x.step, x.send)]]];
        }
      }
    }
  }

private:
  // A representative's send: to its receiver's class, on its own route.
  static DataflowSend send(const DataflowStep& step, std::size_t i, const std::vector<std::uint32_t>& member_class) {
    DataflowSend s = step.sends[i];
    s.to_member = member_class[s.to_member];
    return s;
  }

  const CollectiveGroup& group_;
  const std::vector<std::uint32_t>& rep_;
  const std::vector<std::uint32_t>& flow_class_;
  CollectiveQuotient& out_;
};

} // namespace

std::string quotient_of(const CollectiveGroup& group, const std::vector<std::uint32_t>& representative,
                        CollectiveQuotient& out) {
  out = CollectiveQuotient{};
  if (representative.size() != group.members.size()) return "the classes do not cover the group's members";
  for (std::size_t m = 0; m < representative.size(); ++m)
    if (representative[m] >= representative.size() || representative[representative[m]] != representative[m])
      return member_text(m) + " has no representative of its class";
  // The link check first: it refuses the Pod128's ring in one pass over its sends.
  if (std::string why = check_uncongested(group); !why.empty()) return why;
  std::vector<std::uint32_t> flow_class;
  if (std::string why = classify_flows(group, representative, flow_class); !why.empty()) return why;
  if (std::string why = check_receives(group, representative, flow_class); !why.empty()) return why;
  QuotientBuilder(group, representative, flow_class, out).build();
  return "";
}

} // namespace ipusim
