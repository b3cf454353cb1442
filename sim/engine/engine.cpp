#include "sim/engine/engine.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <set>

#include "sim/base/heap.hpp"
#include "sim/engine/engine_run.hpp"

namespace ipusim {

std::string event_kind_name(EventKind kind) {
  switch (kind) {
  case EventKind::Compute: return "compute";
  case EventKind::HostInput: return "host-input";
  case EventKind::HostOutput: return "host-output";
  case EventKind::Exchange: return "exchange";
  case EventKind::Sync: return "sync";
  case EventKind::Receive: return "receive";
  case EventKind::StreamingMemory: return "streaming-memory";
  case EventKind::HostRoundTrip: return "host-round-trip";
  }
  return "?";
}

namespace engine_detail {

namespace {

// SimGrid's signals keep their callbacks for the life of the process: one, registered once,
// serves every run of a process that simulates several times.
bool deadlock_seen = false;

// Runs SimGrid until nothing is left to do; true when its actors were left blocked.
bool run_engine_to_the_end() {
  static const bool registered = [] {
    sg4::Engine::on_deadlock_cb([] { deadlock_seen = true; });
    return true;
  }();
  (void)registered;
  deadlock_seen = false;
  sg4::Engine::get_instance()->run();
  return deadlock_seen;
}

} // namespace

Run::Run(const Schedule& schedule, const HardwareConfig& hw, RunObserver& observer, const EngineOptions& options)
    : schedule_(schedule), observer_(observer), options_(options), transfers_wanted_(observer.wants_transfers()),
      every_step_wanted_(observer.wants_every_step()),
      arrivals_(copy_count(schedule)), host_link_(hw.host_link) {
  if (options.collectives_by_dataflow) {
    collectives_ = find_collective_blocks(schedule, hw);
    group_states_.resize(collectives_.groups.size());
    for (std::size_t g = 0; g < collectives_.groups.size(); ++g)
      group_states_[g].joins.assign(collectives_.groups[g].members.size(), 0);
  } else {
    collectives_.not_timed = "the full simulation (--exact-full) simulates every transfer";
  }
  set_up_actors(hw);
  PlatformNeeds needs;
  needs.simulated_ipu.assign(static_cast<std::size_t>(hw.ipu_count), 0);
  for (const ActorState& st : actors_) needs.simulated_ipu[static_cast<std::size_t>(st.program->ipu)] = 1;
  for_each_simulated_transfer([&](const Transfer& t) { needs.transfer_pairs.emplace_back(t.src_ipu, t.dst_ipu); });
  std::sort(needs.transfer_pairs.begin(), needs.transfer_pairs.end());
  needs.transfer_pairs.erase(std::unique(needs.transfer_pairs.begin(), needs.transfer_pairs.end()), needs.transfer_pairs.end());
  platform_ = build_platform(hw, schedule, &needs);
  link_bytes_.assign(platform_.link_names.size(), 0.0);

  int loops = static_cast<int>(schedule.loops.size());
  for (const Program& p : schedule.programs)
    for (const Repeat& r : p.repeats) loops = std::max(loops, r.loop + 1);
  std::vector<std::size_t> programs_with(static_cast<std::size_t>(loops), 0);
  for (const Program& p : schedule.programs) {
    std::set<int> mine;
    for (const Repeat& r : p.repeats) mine.insert(r.loop);
    for (int l : mine) ++programs_with[static_cast<std::size_t>(l)];
  }
  for (std::size_t count : programs_with) every_program_loops_.push_back(count == schedule.programs.size());
}

// An actor per program SimGrid runs: every program's, or the first unit's where the others
// mirror it (a trace needs every IPU's steps as SimGrid ran them, and the copies' own ids).
void Run::set_up_actors(const HardwareConfig& hw) {
  if (options_.mirror_replicas && !every_step_wanted_ && !transfers_wanted_)
    mirrors_ = find_replica_mirrors(schedule_, hw, collectives_);
  else
    mirrors_.programs_per_unit = schedule_.programs.size();
  activity_weight_ = mirrors_.units;
  if (mirrors_.mirrored() && observer_.reports_mirrors()) {
    observer_reports_mirrors_ = true;
    observer_.on_mirrors({mirrors_.units, mirrors_.programs_per_unit, mirrors_.ipus_per_unit});
  }
  find_quotients();
  simulated_members_.assign(collectives_.groups.size(), 0);
  for (std::size_t g = 0; g < collectives_.groups.size(); ++g)
    for (const CollectiveMember& member : collectives_.groups[g].members)
      if (member.program < mirrors_.programs_per_unit) ++simulated_members_[g];
  actors_.reserve(mirrors_.programs_per_unit);
  for (std::size_t p = 0; p < mirrors_.programs_per_unit; ++p) actors_.emplace_back(schedule_.programs[p]);
  barrier_ = sg4::Barrier::create(static_cast<unsigned>(actors_.size()));
}

// A mirrored group's classes, each a unit 0 member and the members mirroring it, where they
// can stand for their members (quotient_of); the others are replayed whole.
void Run::find_quotients() {
  quotients_.clear();
  quotients_.resize(collectives_.groups.size());
  if (!mirrors_.mirrored()) return;
  for (std::size_t g = 0; g < collectives_.groups.size(); ++g) {
    if (mirrors_.member_mirrors[g].empty()) continue;
    const std::size_t members = collectives_.groups[g].members.size();
    std::vector<std::uint32_t> representative(members, static_cast<std::uint32_t>(members));  // none yet
    for (std::size_t m = 0; m < mirrors_.member_mirrors[g].size(); ++m) {
      if (collectives_.groups[g].members[m].program >= mirrors_.programs_per_unit) continue;
      representative[m] = static_cast<std::uint32_t>(m);
      for (std::uint32_t mm : mirrors_.member_mirrors[g][m]) representative[mm] = static_cast<std::uint32_t>(m);
    }
    if (!quotient_of(collectives_.groups[g], representative, quotients_[g]).empty()) quotients_[g] = CollectiveQuotient{};
  }
}

RunSummary Run::run() {
  for (std::size_t a = 0; a < actors_.size(); ++a) {
    const int ipu = actors_[a].program->ipu;
    sg4::Actor::create("ipu" + std::to_string(ipu), platform_.ipus.at(ipu), [this, a] { actor_main(a); });
  }
  for_each_simulated_transfer([this](const Transfer& t) {
    arrivals_.connect(t.copy, platform_.ipus.at(t.src_ipu), platform_.ipus.at(t.dst_ipu));
  });

  const bool deadlocked = run_engine_to_the_end();

  std::string stuck;
  for (const ActorState& st : actors_)
    if (!st.finished)
      stuck += " IPU " + std::to_string(st.program->ipu) + " at step " + std::to_string(st.executed) + " of " +
               std::to_string(executed_steps(*st.program)) + ";";
  if (deadlocked || !stuck.empty())
    throw EngineError("the simulation deadlocked in schedule \"" + schedule_.name + "\":" + stuck);
  if (!mirrors_diverged_.empty()) throw MirrorsDiverged(mirrors_diverged_);
  for (std::size_t c = 0; c < arrivals_.size(); ++c)
    if (arrivals_.sent()[c] != arrivals_.taken()[c])
      throw EngineError("schedule \"" + schedule_.name + "\" sent copy " + std::to_string(c) + " " +
                        std::to_string(arrivals_.sent()[c]) + " time(s) but received it " +
                        std::to_string(arrivals_.taken()[c]) +
                        " time(s)");

  RunSummary summary;
  summary.end_time = now() + offset_;
  for (std::size_t i = 0; i < platform_.link_names.size(); ++i)
    summary.links.push_back({platform_.link_names[i], link_bytes_[i]});
  summary.activities = activities_;
  summary.collective_groups = collectives_.groups.size();
  summary.collectives_not_timed = collectives_.not_timed;
  for (const Program& p : schedule_.programs) summary.steps_total += executed_steps(p);
  for (const ActorState& st : actors_) summary.steps_simulated += st.executed;
  summary.ipus_simulated = static_cast<std::int64_t>(actors_.size());
  for (const Instance& i : instances_) {
    // Loops shorter than this gain little from skipping: not worth a note.
    constexpr std::int64_t kWorthSkipping = 16;
    const std::string& name = static_cast<std::size_t>(i.loop) < schedule_.loops.size()
                                  ? schedule_.loops[static_cast<std::size_t>(i.loop)]
                                  : "loop " + std::to_string(i.loop);
    // Simulated in full, or nearly: periods found only when the loop was mostly over
    // (GPipe's slowest stage alone at the end of its forwards) leave most of it simulated.
    if (options_.steady_state && 2 * i.skipped < i.times && i.times >= kWorthSkipping &&
        std::find(summary.not_periodic.begin(), summary.not_periodic.end(), name) == summary.not_periodic.end())
      summary.not_periodic.push_back(name);
  }
  return summary;
}

// The transfers of the simulated programs outside the collective blocks timed by their dataflow.
void Run::for_each_simulated_transfer(const std::function<void(const Transfer&)>& visit) const {
  for (std::size_t a = 0; a < actors_.size(); ++a) {
    const auto blocks = collectives_.ranges(a);
    const std::vector<Step>& steps = actors_[a].program->steps;
    std::size_t next = 0;  // the first block not ended before step s
    for (std::size_t s = 0; s < steps.size(); ++s) {
      while (next < blocks.size() && blocks[next].second <= s) ++next;
      if (next < blocks.size() && s >= blocks[next].first) continue;
      for (const Transfer& t : steps[s].transfers) visit(t);
    }
  }
}

void Run::emit(const Event& raw) {
  Event e = raw;
  e.start += offset_;
  e.end += offset_;
  deliver(e, true);
}

void Run::emit_with_mirrors(const Event& raw) {
  emit(raw);
  if (observer_reports_mirrors_) return;
  Event e = raw;
  e.start += offset_;
  e.end += offset_;
  for (std::size_t k = 1; k < mirrors_.units; ++k) {
    e.ipu = raw.ipu + static_cast<int>(k) * mirrors_.ipus_per_unit;
    deliver(e, true);
  }
}

void Run::deliver(const Event& e, bool keep) {
  observer_.on_event(e);
  if (keep && keeping_notes()) notes_.emplace_back(e);
}

void Run::deliver(const TransferNote& t, bool keep) {
  for (int slot : *t.slots) link_bytes_[static_cast<std::size_t>(slot)] += t.bytes;
  if (transfers_wanted_) observer_.on_transfer({t.src, t.dst, t.copy, t.start, t.end, t.bytes, *t.slots});
  if (keep && keeping_notes()) notes_.emplace_back(t);
}

void Run::report(const Pending& p) {
  activities_ += activity_weight_;
  TransferNote note{p.src, p.dst, p.copy, p.comm.start_time() + offset_ + p.shift,
                    p.comm.finish_time() + offset_ + p.shift, p.bytes, p.slots};
  deliver(note, true);
  // A mirror's transfer is its source's between its own IPUs, its host link or its memory.
  for (std::size_t k = 1; k < mirrors_.units; ++k) {
    const int shift = static_cast<int>(k) * mirrors_.ipus_per_unit;
    note.src = p.src >= 0 ? p.src + shift : p.src;
    note.dst = p.dst >= 0 ? p.dst + shift : p.dst;
    note.slots = p.src == -2 || p.dst == -2 ? &platform_.memory_slots_of_ipu.at(p.src == -2 ? note.dst : note.src)
                                            : &platform_.slots(note.src, note.dst);
    deliver(note, true);
  }
}

void Run::wait_for(ActorState& st, const Pending& p) {
  st.doing = Doing::Comms;
  st.waiting_on = {p};
  p.comm.wait();
  report(p);
  st.waiting_on.clear();
}

void Run::reap(ActorState& st) {
  // A finished comm has its finish time; waiting on it then takes no simulated time and
  // drops it from SimGrid's list of this actor's activities.
  for (auto* queue : {&st.sends, &st.streams})
    while (!queue->empty() && queue->front().comm.finish_time() >= 0) {
      queue->front().comm.wait();
      report(queue->front());
      queue->pop_front();
    }
}

// Host streams left running on the I/O tiles must land before the IPU syncs; the wait is
// host I/O the compute did not hide.
void Run::finish_streams(ActorState& st, const Event& next) {
  if (st.streams.empty()) return;
  Event wait = next;
  wait.kind = st.stream_kind;
  wait.start = now();
  st.doing = Doing::Comms;
  while (!st.streams.empty()) {
    st.streams.front().comm.wait();
    report(st.streams.front());
    st.streams.pop_front();
  }
  wait.end = now();
  wait.stage = -1;
  wait.micro_batch = -1;
  wait.bytes = 0;
  if (wait.end > wait.start) emit_with_mirrors(wait);
}

// The steps of execute, one per kind of step; each sets the kind of the step's event. Inline:
// this is the engine's hot path.

inline void Run::sleep_timed(ActorState& st, double seconds) {
  st.doing = Doing::Timed;
  st.timed_start = now();
  sg4::this_actor::sleep_for(seconds);
  activities_ += activity_weight_;
}

inline void Run::carry_or_wait(ActorState& st, Pending&& p, bool overlapped) {
  if (overlapped) {  // the I/O tiles carry it; waited for at the next sync
    if (st.streams.empty()) st.stream_kind = st.current.kind;
    st.streams.push_back(std::move(p));
  } else {
    wait_for(st, p);
  }
}

inline void Run::run_compute(ActorState& st, const Step& step) {
  st.current.kind = EventKind::Compute;
  if (step.seconds > 0) {
    st.doing = Doing::Timed;
    st.timed_start = now();
    sg4::this_actor::execute(step.seconds * kHostSpeed);
    activities_ += activity_weight_;
  }
}

inline void Run::run_host_stream(ActorState& st, const Step& step) {
  const int ipu = st.program->ipu;
  const bool in = step.kind == StepKind::HostInput;
  st.current.kind = in ? EventKind::HostInput : EventKind::HostOutput;
  if (step.prefetched) {
    // The host's leg filled the gateway's buffer ahead (its bandwidth bounds the run at the
    // round trip); the IPU waits for the gateway's own link, which no other IPU shares.
    sleep_timed(st, host_link_.latency_s + step.bytes / host_link_.gateway_bandwidth_bytes_per_s);
    return;
  }
  sg4::Host* me = platform_.ipus.at(ipu);
  const int src = in ? -1 : ipu, dst = in ? ipu : -1;
  Pending p{in ? sg4::Comm::sendto_async(platform_.host, me, static_cast<std::uint64_t>(step.bytes))
               : sg4::Comm::sendto_async(me, platform_.host, static_cast<std::uint64_t>(step.bytes)),
            src, dst, -1, step.bytes, static_cast<int>(st.cursor.index()), &platform_.slots(src, dst)};
  carry_or_wait(st, std::move(p), step.overlapped);
}

// Optimizer state to or from the IPU's Streaming Memory; overlapped: phased execution's I/O tiles carry it.
inline void Run::run_state_transfer(ActorState& st, const Step& step) {
  const int ipu = st.program->ipu;
  sg4::Host* me = platform_.ipus.at(ipu);
  st.current.kind = EventKind::StreamingMemory;
  sg4::Host* memory = platform_.memory_of_ipu.at(ipu);
  const bool load = step.kind == StepKind::StateLoad;
  Pending p{load ? sg4::Comm::sendto_async(memory, me, static_cast<std::uint64_t>(step.bytes))
                 : sg4::Comm::sendto_async(me, memory, static_cast<std::uint64_t>(step.bytes)),
            load ? -2 : ipu, load ? ipu : -2, -1, step.bytes, 0,
            &platform_.memory_slots_of_ipu.at(ipu)};
  carry_or_wait(st, std::move(p), step.overlapped);
}

inline void Run::run_exchange(ActorState& st, const Step& step) {
  const int ipu = st.program->ipu;
  Event& e = st.current;
  e.kind = EventKind::Exchange;
  // Sends first: a receive waits until its transfer has been sent, and the IPU it comes
  // from may be waiting for this one's.
  std::vector<sg4::CommPtr> comms;
  st.waiting_on.clear();
  for (std::size_t i = 0; i < step.transfers.size(); ++i) {
    const Transfer& t = step.transfers[i];
    if (t.src_ipu != ipu) continue;
    st.waiting_on.push_back({arrivals_.put(t.copy, t.bytes), t.src_ipu, t.dst_ipu, t.copy, t.bytes, static_cast<int>(i),
                             &platform_.slots(t.src_ipu, t.dst_ipu)});
    // A send behind its copy's last transfer on the route starts when that one arrives, which
    // waits for nothing the other IPUs do.
    arrivals_.wait_started(t.copy, st.waiting_on.back().comm);
    comms.push_back(*st.waiting_on.back().comm.started());
    e.bytes += t.bytes;
  }
  for (const Transfer& t : step.transfers)
    if (t.dst_ipu == ipu)
      if (sg4::CommPtr arriving = arrivals_.take(t.copy)) comms.push_back(std::move(arriving));
  st.doing = Doing::Comms;
  sg4::Comm::wait_all(comms);
  for (const Pending& p : st.waiting_on) report(p);
  st.waiting_on.clear();
  if (step.seconds > 0) sleep_timed(st, step.seconds);  // the latency of collectives whose bytes ride on other steps
}

inline void Run::start_sends(ActorState& st, const Step& step) {
  st.current.kind = EventKind::Exchange;
  for (const Transfer& t : step.transfers) {
    st.sends.push_back({arrivals_.put(t.copy, t.bytes), t.src_ipu, t.dst_ipu, t.copy, t.bytes, t.copy,
                        &platform_.slots(t.src_ipu, t.dst_ipu)});
  }
}

inline void Run::take_receives(ActorState& st, const Step& step) {
  st.current.kind = EventKind::Receive;
  st.doing = Doing::Receive;
  for (st.taken = 0; st.taken < step.transfers.size(); ++st.taken) {
    const Transfer& t = step.transfers[st.taken];
    if (sg4::CommPtr arriving = arrivals_.take(t.copy)) arriving->wait();
  }
}

// Every IPU's streams end and all meet at a barrier; the step's event starts as they leave it
// (waiting for the others is idle time, not the step's).
inline void Run::meet_at_barrier(ActorState& st, EventKind kind) {
  Event& e = st.current;
  finish_streams(st, e);
  st.doing = Doing::Barrier;
  barrier_->wait();
  e.kind = kind;
  e.start = now();
}

inline void Run::run_host_round_trip(ActorState& st, const Step& step) {
  meet_at_barrier(st, EventKind::HostRoundTrip);
  // The host streamed the run's data at its own pace meanwhile; a shorter run waits for it.
  const double behind = std::max(0.0, last_round_trip_ + step.floor_seconds - (now() + offset_));
  if (behind + step.seconds > 0) sleep_timed(st, behind + step.seconds);
  barrier_->wait();  // every IPU leaves together, and after each has read the old time
  if (&st == &actors_.front()) last_round_trip_ = now() + offset_;
}

inline void Run::run_sync(ActorState& st, const Step& step) {
  meet_at_barrier(st, EventKind::Sync);
  if (step.seconds > 0) sleep_timed(st, step.seconds);
}

void Run::execute(ActorState& st, const Step& step) {
  switch (step.kind) {
  case StepKind::Compute: run_compute(st, step); break;
  case StepKind::HostInput:
  case StepKind::HostOutput: run_host_stream(st, step); break;
  case StepKind::StateLoad:
  case StepKind::StateStore: run_state_transfer(st, step); break;
  case StepKind::Exchange: run_exchange(st, step); break;
  case StepKind::Send: start_sends(st, step); break;
  case StepKind::Receive: take_receives(st, step); break;
  case StepKind::HostRoundTrip: run_host_round_trip(st, step); break;
  case StepKind::Sync: run_sync(st, step); break;
  }
}

void Run::actor_main(std::size_t a) {
  ActorState& st = actors_[a];
  ProgramCursor& cursor = st.cursor;
  while (!cursor.done()) {
    reap(st);
    if (cursor.first_new_frame() < cursor.frames().size()) on_iterations_begun(st, a);
    if (run_collective_block(st, a)) continue;
    const Step& step = cursor.step();
    Event& e = st.current;
    e = Event{};
    e.ipu = st.program->ipu;
    e.stage = step.stage;
    e.micro_batch = cursor.micro_batch();
    e.pass = step.pass;
    e.bytes = step.bytes;
    e.start = now();
    st.running = true;
    execute(st, step);
    e.end = now();
    st.running = false;
    st.doing = Doing::Nothing;
    emit_with_mirrors(e);
    ++st.executed;
    cursor.advance();
  }
  Event last;
  last.ipu = st.program->ipu;
  finish_streams(st, last);
  st.doing = Doing::Comms;
  while (!st.sends.empty()) {
    arrivals_.wait_started(st.sends.front().copy, st.sends.front().comm);
    st.sends.front().comm.wait();
    report(st.sends.front());
    st.sends.pop_front();
  }
  st.doing = Doing::Nothing;
  st.finished = true;
}

} // namespace engine_detail

namespace {

// SimGrid has no call that sets its clock back, and an engine cannot be started twice in one
// process. The clock is simgrid::kernel::EngineImpl::now_ (SimGrid 3.32,
// src/kernel/EngineImpl.cpp), private to s4u but a symbol libsimgrid exports; found at run
// time, so that a SimGrid without it only loses the reuse. A run that starts at 0 with no
// activity left from the last one computes exactly what it would in a fresh process: SimGrid's
// models keep no time of their own between activities.
double* simgrid_clock() {
  static double* const clock =
      static_cast<double*>(::dlsym(RTLD_DEFAULT, "_ZN7simgrid6kernel10EngineImpl4now_E"));
  return clock;
}

enum class EngineUse { Fresh, Used, Spoiled };
EngineUse engine_use = EngineUse::Fresh;

// Sets SimGrid's clock back to 0 after a run, or says why the engine cannot run again.
void rewind_engine() {
  if (engine_use == EngineUse::Fresh) return;
  if (engine_use == EngineUse::Spoiled)
    throw EngineError("SimGrid's engine in this process stopped in a failed simulation and cannot simulate again");
  double* clock = simgrid_clock();
  if (clock == nullptr) throw EngineError("this SimGrid does not let a process simulate twice (its clock is not found)");
  *clock = 0;
  if (simgrid::s4u::Engine::get_clock() != 0)
    throw EngineError("SimGrid's clock did not go back to 0: this process cannot simulate twice");
}

} // namespace

bool engine_can_simulate_again() {
  return simgrid::s4u::Engine::is_initialized() && simgrid_clock() != nullptr && engine_use != EngineUse::Spoiled;
}

void prepare_engine_for_forks() {
  if (!simgrid::s4u::Engine::is_initialized()) start_engine();  // kept for the forked processes
}

double simulation_heap_bytes(const Schedule& schedule) {
  constexpr double kBytesPerStep = 300;
  double steps = 0;
  for (const Program& p : schedule.programs) steps += static_cast<double>(p.steps.size());
  return kBytesPerStep * steps;
}

void fork_simulation(const Schedule& schedule, const std::function<void(ByteWriter&)>& child,
                     const std::function<void(ByteReader&)>& parent) {
  const ChildHeap heap = simgrid::s4u::Engine::is_initialized() ? ChildHeap::Inherited : ChildHeap::Fresh;
  run_forked(
      [&](ByteWriter& out) {
        if (heap == ChildHeap::Fresh) prefault_heap(simulation_heap_bytes(schedule));
        child(out);
      },
      parent, "the simulation process", heap);
}

RunSummary run_engine_in_process(const Schedule& schedule, const HardwareConfig& hw, RunObserver& observer,
                                 const EngineOptions& options) {
  // An engine prepared before forking is this process's own copy; otherwise this run owns one.
  std::unique_ptr<simgrid::s4u::Engine> owned;
  if (!simgrid::s4u::Engine::is_initialized()) owned.reset(start_engine());
  rewind_engine();
  engine_use = EngineUse::Spoiled;  // until the run ends well
  engine_detail::Run run(schedule, hw, observer, options);
  try {
    RunSummary summary = run.run();
    engine_use = owned ? EngineUse::Spoiled : EngineUse::Used;  // an engine of its own ends with the run
    return summary;
  } catch (const MirrorsDiverged&) {
    // It ran to its end, so the engine is sound: kept for the run made again without mirrors
    // (SimGrid cannot start a second engine in this process, nor in a child forked from it).
    (void)owned.release();
    engine_use = EngineUse::Used;
    throw;
  }
}

} // namespace ipusim
