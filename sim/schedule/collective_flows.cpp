// CollectiveGroup::evaluate: one run of a group's blocks replayed as SimGrid's CM02 model
// runs its transfers (network_cm02.cpp and the max-min solver of SimGrid 3.32, with
// ipusim's settings: latency and bandwidth factors 1, weight-S 0, no TCP-gamma bound, no
// cross-traffic). A transfer first waits out its route's latency without using bandwidth,
// then shares its links: each link's bandwidth goes to the transfers crossing it in
// proportion to 1 / penalty, the penalty being the route's latency, every transfer bounded
// by its narrowest link, filled progressively from the most contended link. Rates change
// only when a transfer joins or leaves, and then only for those sharing links with it.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>

#include "sim/schedule/collective_dataflow.hpp"

namespace ipusim {

namespace {

struct Happening {
  enum Kind : std::uint8_t { StepStart, LatencyOver, Arrival };
  double time = 0;
  std::uint64_t order = 0;  // ties keep the order they were scheduled in
  Kind kind = StepStart;
  std::size_t first = 0, second = 0;  // StepStart: member, step; else flow, its version
  bool operator>(const Happening& o) const { return time != o.time ? time > o.time : order > o.order; }
};

class FlowReplay {
public:
  FlowReplay(const CollectiveGroup& group, CollectiveTimes& times, bool every_step)
      : group_(group), times_(times), every_step_(every_step) {
    flows_.resize(group.flows);
    on_link_.resize(group.link_bandwidth.size());
    capacity_.resize(group.link_bandwidth.size());
    usage_.resize(group.link_bandwidth.size());
    unfixed_.resize(group.link_bandwidth.size());
    link_mark_.assign(group.link_bandwidth.size(), 0);
    flow_mark_.assign(group.flows, 0);
    outstanding_.resize(group.members.size());
    for (std::size_t m = 0; m < group.members.size(); ++m) {
      const auto& steps = group.members[m].steps;
      outstanding_[m].resize(steps.size());
      started_.emplace_back(steps.size(), 0);
      for (std::size_t k = 0; k < steps.size(); ++k) {
        outstanding_[m][k] = steps[k].sends.size() + steps[k].receives.size();
        for (std::size_t i = 0; i < steps[k].sends.size(); ++i) {
          Flow& f = flows_[steps[k].first_flow + i];
          f.send = &steps[k].sends[i];
          f.latency = group.route_latency[f.send->route];
          f.bandwidth = group.route_bandwidth[f.send->route];
          f.member = static_cast<std::uint32_t>(m);  // members and steps fit: collective_blocks.cpp narrows them
          f.step = static_cast<std::uint32_t>(k);
        }
      }
    }
    times_.start.resize(group.members.size());
    times_.end.resize(group.members.size());
    for (std::size_t m = 0; m < group.members.size(); ++m) {
      const std::size_t kept = every_step ? group.members[m].steps.size() : 1;
      times_.start[m].assign(kept, 0.0);
      times_.end[m].assign(kept, 0.0);
    }
    if (every_step) times_.arrival.assign(group.flows, 0.0);
    else times_.arrival.clear();
  }

  void run(const std::vector<double>& entries) {
    for (std::size_t m = 0; m < entries.size(); ++m) schedule(entries[m], Happening::StepStart, m, 0);
    while (!queue_.empty()) {
      const Happening h = queue_.top();
      queue_.pop();
      switch (h.kind) {
      case Happening::StepStart: start_step(h.first, h.second, h.time); break;
      case Happening::LatencyOver: latency_over(h.first, h.time); break;
      case Happening::Arrival:
        if (flows_[h.first].version == h.second && !flows_[h.first].done) arrive(h.first, h.time);
        break;
      }
    }
  }

private:
  // 64 bytes: a Pod256's rings have 33,792 flows a run.
  struct Flow {
    const DataflowSend* send = nullptr;
    std::uint32_t member = 0, step = 0;
    double remaining = 0, rate = 0, last = 0;  // bytes left as of `last`, moving at `rate`
    std::uint32_t version = 0;  // of its scheduled arrival: a change of rate reschedules it
    bool sharing = false, done = false;
    double latency = 0, bandwidth = 0;  // its route's
    double penalty() const { return latency > 0 ? latency : 1.0; }
  };

  void schedule(double time, Happening::Kind kind, std::size_t first, std::size_t second) {
    queue_.push({time, next_order_++, kind, first, second});
  }

  void start_step(std::size_t m, std::size_t k, double now) {
    if (every_step_ || k == 0) times_.start[m][every_step_ ? k : 0] = now;
    started_[m][k] = 1;
    const DataflowStep& step = group_.members[m].steps[k];
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      Flow& f = flows_[step.first_flow + i];
      f.remaining = f.send->bytes;
      schedule(now + f.latency, Happening::LatencyOver, step.first_flow + i, 0);
    }
    if (outstanding_[m][k] == 0) complete_step(m, k, now);
  }

  void latency_over(std::size_t id, double now) {
    Flow& f = flows_[id];
    if (f.remaining <= 0 || group_.links(*f.send).empty()) {
      arrive(id, now);
      return;
    }
    f.sharing = true;
    f.last = now;
    for (int l : group_.links(*f.send)) on_link_[static_cast<std::size_t>(l)].push_back(id);
    reshare(group_.links(*f.send), now);
  }

  void arrive(std::size_t id, double now) {
    Flow& f = flows_[id];
    f.done = true;
    if (every_step_) times_.arrival[id] = now;
    if (f.sharing) {
      f.sharing = false;
      for (int l : group_.links(*f.send)) {
        auto& on = on_link_[static_cast<std::size_t>(l)];
        const auto found = std::find(on.begin(), on.end(), id);
        if (found != on.end()) on.erase(found);  // a route crosses a link once: always found
      }
      reshare(group_.links(*f.send), now);
    }
    if (--outstanding_[f.member][f.step] == 0 && started(f.member, f.step)) complete_step(f.member, f.step, now);
    const std::size_t to = f.send->to_member, at = f.send->to_step;
    if ((outstanding_[to][at] -= group_.settles.empty() ? 1 : group_.settles[id]) == 0 && started(to, at))
      complete_step(to, at, now);
  }

  bool started(std::size_t m, std::size_t k) const { return started_[m][k] != 0; }

  void complete_step(std::size_t m, std::size_t k, double now) {
    const DataflowStep& step = group_.members[m].steps[k];
    const double end = step.seconds > 0 ? now + step.seconds : now;
    const bool last = k + 1 == group_.members[m].steps.size();
    if (every_step_ || last) times_.end[m][every_step_ ? k : 0] = end;
    if (!last) schedule(end, Happening::StepStart, m, k + 1);
  }

  // The flows sharing links, transitively, with `links`: their bytes moved so far counted, their
  // rates set anew by weighted max-min, their arrivals rescheduled.
  void reshare(const std::vector<int>& links, double now);
  // The links and sharing flows reachable from `links` (component_links_, component_flows_).
  void gather_component(const std::vector<int>& links);
  // Progressive filling of the component: the link that fills first at the lowest level (rate x
  // penalty) fixes its flows at that level, unless some of them reach their own bound before it.
  void fill_progressively();
  // Fixes the open flows that `level` saturates (or their bound, where lower); false if none.
  bool fix_level(double level);

  const CollectiveGroup& group_;
  CollectiveTimes& times_;
  const bool every_step_;  // every step's times and every arrival kept, or each block's ends only
  std::vector<Flow> flows_;
  std::vector<std::vector<std::size_t>> on_link_;  // per group link: the flows sharing it
  std::vector<std::vector<std::size_t>> outstanding_;  // per member and step: transfers not yet arrived
  std::vector<std::vector<char>> started_;
  std::priority_queue<Happening, std::vector<Happening>, std::greater<>> queue_;
  // reshare's scratch, per link and flow.
  std::vector<double> capacity_, usage_;
  std::vector<std::size_t> unfixed_;
  std::vector<std::uint64_t> link_mark_, flow_mark_;
  std::vector<std::size_t> component_flows_, open_, still_open_;
  std::vector<int> component_links_;
  std::uint64_t visit_ = 0;
  std::uint64_t next_order_ = 0;
};

void FlowReplay::reshare(const std::vector<int>& links, double now) {
  gather_component(links);
  for (std::size_t id : component_flows_) {
    Flow& f = flows_[id];
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.last));
    f.last = now;
  }
  fill_progressively();
  for (std::size_t id : component_flows_) {
    Flow& f = flows_[id];
    ++f.version;
    schedule(f.rate > 0 ? now + f.remaining / f.rate : now, Happening::Arrival, id, f.version);
  }
}

void FlowReplay::gather_component(const std::vector<int>& links) {
  std::vector<std::size_t>& flows = component_flows_;
  std::vector<int>& component = component_links_;
  flows.clear();
  component.assign(links.begin(), links.end());
  ++visit_;
  for (int l : component) link_mark_[static_cast<std::size_t>(l)] = visit_;
  for (std::size_t i = 0; i < component.size(); ++i)
    for (std::size_t id : on_link_[static_cast<std::size_t>(component[i])]) {
      if (flow_mark_[id] == visit_) continue;
      flow_mark_[id] = visit_;
      flows.push_back(id);
      for (int l : group_.links(*flows_[id].send))
        if (link_mark_[static_cast<std::size_t>(l)] != visit_) {
          link_mark_[static_cast<std::size_t>(l)] = visit_;
          component.push_back(l);
        }
    }
}

void FlowReplay::fill_progressively() {
  for (int l : component_links_) {
    capacity_[static_cast<std::size_t>(l)] = group_.link_bandwidth[static_cast<std::size_t>(l)];
    usage_[static_cast<std::size_t>(l)] = 0;
    unfixed_[static_cast<std::size_t>(l)] = 0;
  }
  for (std::size_t id : component_flows_)
    for (int l : group_.links(*flows_[id].send)) {
      usage_[static_cast<std::size_t>(l)] += 1.0 / flows_[id].penalty();
      ++unfixed_[static_cast<std::size_t>(l)];
    }
  open_ = component_flows_;
  while (!open_.empty()) {
    double level = std::numeric_limits<double>::infinity();
    for (int l : component_links_)
      if (unfixed_[static_cast<std::size_t>(l)] > 0)
        level = std::min(level, capacity_[static_cast<std::size_t>(l)] / usage_[static_cast<std::size_t>(l)]);
    if (!fix_level(level)) break;  // cannot happen: some link always saturates
  }
}

bool FlowReplay::fix_level(double level) {
  auto saturating = [&](std::size_t id) {
    for (int l : group_.links(*flows_[id].send)) {
      const auto i = static_cast<std::size_t>(l);
      if (unfixed_[i] > 0 && capacity_[i] / usage_[i] <= level * (1 + 1e-12)) return true;
    }
    return false;
  };
  double bound_level = std::numeric_limits<double>::infinity();
  for (std::size_t id : open_)
    if (saturating(id)) bound_level = std::min(bound_level, flows_[id].bandwidth * flows_[id].penalty());
  const bool bounded = bound_level < level;
  still_open_.clear();
  for (std::size_t id : open_) {
    Flow& f = flows_[id];
    const double at_bound = f.bandwidth * f.penalty();
    const bool fix = saturating(id) && (!bounded || at_bound <= bound_level * (1 + 1e-12));
    if (!fix) {
      still_open_.push_back(id);
      continue;
    }
    f.rate = bounded ? f.bandwidth : std::min(f.bandwidth, level / f.penalty());
    for (int l : group_.links(*f.send)) {
      const auto i = static_cast<std::size_t>(l);
      capacity_[i] = std::max(0.0, capacity_[i] - f.rate);
      usage_[i] -= 1.0 / f.penalty();
      --unfixed_[i];
    }
  }
  if (still_open_.size() == open_.size()) return false;
  open_.swap(still_open_);
  return true;
}

} // namespace

void CollectiveGroup::evaluate(const std::vector<double>& entries, CollectiveTimes& times, bool every_step) const {
  FlowReplay replay(*this, times, every_step);
  replay.run(entries);
}

} // namespace ipusim
