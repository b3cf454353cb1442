// Collective blocks timed apart (sim/schedule/collective_dataflow.hpp) instead of by
// SimGrid transfers. Each member arriving at its block waits; the last one to arrive times
// every member's steps (each member's last step waits for every member's arrival, so none
// of them leaves its block before that moment), and each member then sleeps until its block ends and
// reports the block's steps and transfers with the times the dataflow gave them, as
// run_exchange would have. The n-th block a member begins belongs to the group's n-th
// instance (the copies' own order); the steady state compares how many each member began.
#include "sim/engine/engine_run.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim::engine_detail {

bool Run::run_collective_block(ActorState& st, std::size_t a) {
  if (collectives_.starts.empty()) return false;
  const auto& starts = collectives_.starts[a];
  const auto found = starts.find(st.cursor.index());
  if (found == starts.end()) return false;
  const auto [g, m] = found->second;
  const CollectiveGroup& group = collectives_.groups[g];
  GroupState& state = group_states_[g];
  const std::int64_t ordinal = state.joins[m]++;
  CollectiveInstance& instance = state.open[ordinal];
  if (!instance.go) {
    instance.entries.assign(group.members.size(), 0.0);
    instance.go = sg4::Semaphore::create(0);
  }
  instance.entries[m] = now();
  // Its mirrors arrive with it (sim/schedule/replica_mirrors.hpp).
  const std::vector<std::uint32_t>* mirrored =
      mirrors_.member_mirrors.empty() || mirrors_.member_mirrors[g].empty() ? nullptr : &mirrors_.member_mirrors[g][m];
  if (mirrored != nullptr)
    for (std::uint32_t mm : *mirrored) {
      ++state.joins[mm];
      instance.entries[mm] = now();
    }
  const std::size_t arrived = 1 + (mirrored != nullptr ? mirrored->size() : 0);
  st.current = Event{};
  st.current.start = now();
  st.running = true;
  st.doing = Doing::Collective;
  if ((instance.joined += arrived) < group.members.size()) {
    instance.go->acquire();
  } else {
    time_collective(g, state, instance);
    for (std::size_t i = 1; i < simulated_members_[g]; ++i) instance.go->release();
  }
  const double exit = instance.times.end[m].back();
  if (exit > now()) {
    st.doing = Doing::Timed;
    st.timed_start = now();
    sg4::this_actor::sleep_until(exit);
  }
  if (every_step_wanted_ || transfers_wanted_) {
    report_collective_steps(st, group.members[m], instance.times, m);
  } else {
    if (state.traffic.empty()) state.traffic.resize(group.members.size());
    if (mirrored != nullptr) report_mirrored_members(g, state, instance.times, m, st.cursor.micro_batch());
    report_collective_block(st, group.members[m], instance.times, m, state.traffic[m]);
  }
  st.running = false;
  st.doing = Doing::Nothing;
  if ((instance.left += arrived) == group.members.size()) state.open.erase(ordinal);
  return true;
}

// A mirror is exact while it leaves each block when its source does (it then runs on as the
// source does); 1e-9 of the block apart keeps every figure within 1e-9 of the full run's.
void Run::report_mirrored_members(std::size_t g, GroupState& state, const CollectiveTimes& times, std::size_t m,
                                  std::int64_t micro_batch) {
  const CollectiveGroup& group = collectives_.groups[g];
  const double exit = times.end[m].back();
  const double block = exit - times.start[m].front();
  for (std::uint32_t mm : mirrors_.member_mirrors[g][m]) {
    const double apart = std::fabs(times.end[mm].back() - exit);
    if (apart > 1e-9 * block && mirrors_diverged_.empty()) {
      const CollectiveMember& member = group.members[mm];
      mirrors_diverged_ = "IPU " + std::to_string(schedule_.programs[member.program].ipu) + " left a collective " +
                          std::to_string(apart) + " s apart from IPU " +
                          std::to_string(schedule_.programs[group.members[m].program].ipu) + ", the IPU it mirrors";
    }
    const Event e = collective_block_event(group.members[mm], times, mm, state.traffic[mm], micro_batch);
    if (!observer_reports_mirrors_) emit(e);
  }
}

// The dataflow depends only on when the members arrive relative to one another, and they
// mostly arrive alike every time (a data-parallel step's replicas all at once, at each weight
// update): such a run's times are the last run's moved to its earliest entry, not every
// transfer replayed again (on ResNet-50's Bow Pod256, 256 members and 67,584 transfers a run).
// Entries within a factor of two of the earliest come back exactly (Sterbenz).
void Run::time_collective(std::size_t g, GroupState& state, CollectiveInstance& instance) {
  const double base = *std::min_element(instance.entries.begin(), instance.entries.end());
  std::vector<double> relative(instance.entries.size());
  for (std::size_t m = 0; m < relative.size(); ++m) relative[m] = instance.entries[m] - base;
  if (relative != state.last.entries) {
    // Observers that take a block as one event need only when each member's block begins and ends.
    if (!time_by_classes(g, relative, state.last.times))
      collectives_.groups[g].evaluate(relative, state.last.times, every_step_wanted_ || transfers_wanted_);
    state.last.entries = std::move(relative);
  }
  const CollectiveTimes& last = state.last.times;
  CollectiveTimes& times = instance.times;
  auto moved = [base](const std::vector<double>& from, std::vector<double>& to) {
    to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) to[i] = base + from[i];
  };
  times.start.resize(last.start.size());
  times.end.resize(last.end.size());
  for (std::size_t m = 0; m < last.start.size(); ++m) {
    moved(last.start[m], times.start[m]);
    moved(last.end[m], times.end[m]);
  }
  moved(last.arrival, times.arrival);
}

// Mirrors arrive with their sources (run_collective_block), so a class enters as one: its
// representative replayed stands for every member (collective_dataflow.hpp, CollectiveQuotient).
bool Run::time_by_classes(std::size_t g, const std::vector<double>& relative, CollectiveTimes& times) const {
  const CollectiveQuotient& quotient = quotients_[g];
  if (quotient.group.members.empty() || every_step_wanted_ || transfers_wanted_) return false;
  std::vector<double> entries(quotient.group.members.size(), -1.0);
  for (std::size_t m = 0; m < relative.size(); ++m) {
    double& entry = entries[quotient.member_class[m]];
    if (entry >= 0 && entry != relative[m]) return false;
    entry = relative[m];
  }
  CollectiveTimes classes;
  quotient.group.evaluate(entries, classes, false);
  times.start.resize(relative.size());
  times.end.resize(relative.size());
  times.arrival.clear();
  for (std::size_t m = 0; m < relative.size(); ++m) {
    times.start[m] = classes.start[quotient.member_class[m]];
    times.end[m] = classes.end[quotient.member_class[m]];
  }
  return true;
}

namespace {

// The event of an exchange step of IPU `ipu`, from `start` to `end` (no bytes yet).
Event exchange_event(int ipu, const Step& step, std::int64_t micro_batch, double start, double end) {
  Event e;
  e.ipu = ipu;
  e.kind = EventKind::Exchange;
  e.stage = step.stage;
  e.micro_batch = micro_batch;
  e.pass = step.pass;
  e.start = start;
  e.end = end;
  return e;
}

} // namespace

// The block's steps as run_exchange reports them: each send's transfer, then the step's event;
// or, for observers that only add times up, the whole block as one event and its bytes a route.
void Run::report_collective_steps(ActorState& st, const CollectiveMember& member, const CollectiveTimes& times,
                                  std::size_t m) {
  for (std::size_t k = 0; k < member.steps.size(); ++k) {
    const Step& step = st.cursor.step();
    Event e = exchange_event(st.program->ipu, step, st.cursor.micro_batch(), times.start[m][k], times.end[m][k]);
    e.bytes = step.bytes;
    const DataflowStep& timed = member.steps[k];
    for (std::size_t i = 0; i < timed.sends.size(); ++i) {
      const Transfer& t = step.transfers[timed.sends[i].transfer];
      e.bytes += t.bytes;
      ++activities_;
      const double arrival = times.arrival[timed.first_flow + i];
      deliver(TransferNote{t.src_ipu, t.dst_ipu, t.copy, e.start + offset_, arrival + offset_, t.bytes,
                           &platform_.slots(t.src_ipu, t.dst_ipu)},
              true);
    }
    if (step.seconds > 0) ++activities_;
    emit(e);
    ++st.executed;
    st.cursor.advance();
  }
}

// A block's steps each begin where the one before ended (CollectiveGroup::evaluate), so one
// event from the first's start to the last's end carries the same exchange time; the links
// get each route's bytes summed over the block. Counts (steps, activities) are the steps'.
void Run::report_collective_block(ActorState& st, const CollectiveMember& member, const CollectiveTimes& times,
                                  std::size_t m, MemberTraffic& traffic) {
  const Event e = collective_block_event(member, times, m, traffic, st.cursor.micro_batch());
  for (std::size_t k = 0; k < member.steps.size(); ++k) {
    ++st.executed;
    st.cursor.advance();
  }
  emit(e);
}

// The block's steps are its program's template steps from `first` on, one after another.
Event Run::collective_block_event(const CollectiveMember& member, const CollectiveTimes& times, std::size_t m,
                                  MemberTraffic& traffic, std::int64_t micro_batch) {
  if (!traffic.ready) traffic = member_traffic(member);
  const Program& program = schedule_.programs[member.program];
  Event e = exchange_event(program.ipu, program.steps[member.first], micro_batch, times.start[m].front(),
                           times.end[m].back());
  e.bytes = traffic.bytes;
  activities_ += traffic.activities;
  for (TransferNote note : traffic.notes) {
    note.start = e.start + offset_;
    note.end = e.end + offset_;
    deliver(note, true);
  }
  return e;
}

// The member's routes, a note each with the bytes its block sends on it, and the block's bytes and activities.
Run::MemberTraffic Run::member_traffic(const CollectiveMember& member) const {
  MemberTraffic traffic;
  traffic.ready = true;
  std::vector<std::pair<std::size_t, std::size_t>> seen;  // (group route, note)
  const Program& program = schedule_.programs[member.program];
  for (std::size_t k = 0; k < member.steps.size(); ++k) {
    const Step& step = program.steps[member.first + k];
    traffic.bytes += step.bytes;
    for (const DataflowSend& send : member.steps[k].sends) {
      auto found = std::find_if(seen.begin(), seen.end(), [&](const auto& r) { return r.first == send.route; });
      const Transfer& t = step.transfers[send.transfer];
      if (found == seen.end()) {
        seen.emplace_back(send.route, traffic.notes.size());
        traffic.notes.push_back({t.src_ipu, t.dst_ipu, -1, 0, 0, 0, &platform_.slots(t.src_ipu, t.dst_ipu)});
        found = seen.end() - 1;
      }
      traffic.bytes += t.bytes;
      traffic.notes[found->second].bytes += t.bytes;
    }
    traffic.activities += member.steps[k].sends.size() + (step.seconds > 0 ? 1 : 0);
  }
  return traffic;
}

} // namespace ipusim::engine_detail
