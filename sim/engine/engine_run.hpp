#pragma once
// Engine internals shared by engine.cpp (the IPU actors running their programs) and
// steady_state.cpp (finding a loop's period and reporting the repeated periods without
// simulating them). Includes SimGrid.
#include <simgrid/s4u.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "sim/engine/copy_arrivals.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/platform.hpp"
#include "sim/schedule/collective_dataflow.hpp"
#include "sim/schedule/program_cursor.hpp"
#include "sim/schedule/replica_mirrors.hpp"

namespace ipusim::engine_detail {

namespace sg4 = simgrid::s4u;

// A transfer this IPU started and has not reported yet.
struct Pending {
  SendHandle comm;
  int src = 0, dst = 0, copy = -1;
  double bytes = 0;
  int tag = 0;  // which transfer of its step (or the copy): states compare by it
  const std::vector<int>* slots = nullptr;
  // Added to its reported times: the transfers of an IPU that waited through skipped
  // periods happened before them.
  double shift = 0;
};

// Collective: arrived at its all-reduce block, waiting for the group's last member (collectives.cpp).
enum class Doing { Nothing, Timed, Comms, Barrier, Receive, Collective };

struct ActorState {
  explicit ActorState(const Program& p) : program(&p), cursor(p) {}
  const Program* program;
  ProgramCursor cursor;
  std::int64_t executed = 0;  // steps run (simulated)
  Event current;              // the step under way, in SimGrid's clock
  bool running = false;       // `current` is a started step
  Doing doing = Doing::Nothing;
  double timed_start = 0;     // of the exec or sleep under way
  std::size_t taken = 0;      // copies of the current Receive already taken
  std::vector<Pending> waiting_on;  // blocking transfers it sends: a host stream, state, an exchange's sends
  std::deque<Pending> sends;        // asynchronous copies in flight or not yet reported
  std::deque<Pending> streams;      // host streams left running on the I/O tiles
  EventKind stream_kind = EventKind::HostInput;  // of the first such stream since the last sync
  bool finished = false;
};

// What the run reported, kept while a loop's period is being looked for, so that its
// periods can be reported again later. Times are the reported ones (the full run's).
struct TransferNote {
  int src = 0, dst = 0, copy = -1;
  double start = 0, end = 0, bytes = 0;
  const std::vector<int>* slots = nullptr;
};
struct ReplayNote;
using Note = std::variant<Event, TransferNote, std::shared_ptr<const ReplayNote>>;
// `window` again `times` times, the k-th copy `k * period` later and its micro-batches `k * label_shift` further.
struct ReplayNote {
  std::vector<Note> window;
  std::int64_t times = 0;
  double period = 0;
  std::int64_t label_shift = 0;
  int loop = 0;
  std::int64_t iterations = 0;         // of the loop per period
  std::vector<double> period_link_bytes;  // per link slot, what one period carries
};

// The state of one IPU at a snapshot, relative to the snapshot's time.
struct ActorSnapshot {
  std::size_t index = 0;
  std::vector<ProgramCursor::Frame> frames;
  Doing doing = Doing::Nothing;
  bool running = false;
  std::size_t taken = 0;
  double step_age = 0;   // since the step under way began: its event's start, reported later
  double timed_age = 0;
  struct Activity {
    int tag;
    double started_ago, finished_ago, remaining;  // finished_ago < 0: still running
  };
  std::vector<Activity> activities;
};

struct Snapshot {
  int loop = 0;
  double raw_time = 0, time = 0;  // SimGrid's clock, and the full run's
  std::uint64_t mark = 0;         // notes reported before it
  std::uint64_t activities = 0;
  std::vector<ActorSnapshot> actors;
  std::vector<std::int64_t> sent, taken;  // per copy: its backlog is sent - taken
  std::vector<std::int64_t> joins;        // per collective group and member: its blocks begun
};

// Two snapshots a whole number of periods apart, and how many periods may be skipped
// before a copy's backlog that only drains runs dry.
struct Period {
  std::int64_t iterations = 0;  // 0: the states differ
  std::int64_t max_periods = 0;
  std::vector<std::pair<std::size_t, std::int64_t>> drained;  // copies taken per period from queues nothing adds to
};

class Run {
public:
  Run(const Schedule& schedule, const HardwareConfig& hardware, RunObserver& observer, const EngineOptions& options);
  RunSummary run();

  // The actor of program `a`.
  void actor_main(std::size_t a);

private:
  // engine.cpp
  void execute(ActorState& st, const Step& step);
  // The steps execute runs, by kind (inline, in engine.cpp).
  void run_compute(ActorState& st, const Step& step);
  void run_host_stream(ActorState& st, const Step& step);     // HostInput, HostOutput
  void run_state_transfer(ActorState& st, const Step& step);  // StateLoad, StateStore
  void run_exchange(ActorState& st, const Step& step);
  void start_sends(ActorState& st, const Step& step);          // Send
  void take_receives(ActorState& st, const Step& step);        // Receive
  void run_host_round_trip(ActorState& st, const Step& step);
  void run_sync(ActorState& st, const Step& step);
  void meet_at_barrier(ActorState& st, EventKind kind);
  // `seconds` of simulated waiting, as a timed activity of the IPU.
  void sleep_timed(ActorState& st, double seconds);
  // A transfer the I/O tiles carry (`overlapped`: waited for at the next sync), else waited for now.
  void carry_or_wait(ActorState& st, Pending&& p, bool overlapped);
  void reap(ActorState& st);  // reports the transfers of `st` that have finished, oldest first
  void report(const Pending& p);  // and its mirrors' (ReplicaMirrors)
  void wait_for(ActorState& st, const Pending& p);  // a blocking transfer: wait, then report it
  void finish_streams(ActorState& st, const Event& next);
  void set_up_actors(const HardwareConfig& hw);
  void for_each_simulated_transfer(const std::function<void(const Transfer&)>& visit) const;
  void emit(const Event& raw);
  // The step's event, then its mirrors' (ReplicaMirrors) unless the observer reports them.
  void emit_with_mirrors(const Event& raw);
  void deliver(const Event& e, bool keep);
  void deliver(const TransferNote& t, bool keep);
  double now() const { return sg4::Engine::get_clock(); }

  // collectives.cpp
  // Runs the collective block starting at the actor's step, if one does: waits for the
  // group's last member, then reports the block's steps as the dataflow times them.
  bool run_collective_block(ActorState& st, std::size_t a);
  void report_collective_steps(ActorState& st, const CollectiveMember& member, const CollectiveTimes& times,
                               std::size_t m);
  // A member's block as every run of it reports it: the same steps and bytes each time.
  struct MemberTraffic {
    bool ready = false;
    std::vector<TransferNote> notes;  // per route it sends on, with the block's bytes on it
    double bytes = 0;                 // the block's, as its steps' events would sum them
    std::uint64_t activities = 0;     // its sends and its steps that take seconds
  };
  MemberTraffic member_traffic(const CollectiveMember& member) const;
  void report_collective_block(ActorState& st, const CollectiveMember& member, const CollectiveTimes& times,
                               std::size_t m, MemberTraffic& traffic);
  // Member m's block as one event from `times`, its routes' notes delivered; `micro_batch`
  // is the block's (its source's cursor, for a mirrored member).
  Event collective_block_event(const CollectiveMember& member, const CollectiveTimes& times, std::size_t m,
                               MemberTraffic& traffic, std::int64_t micro_batch);

  // steady_state.cpp
  // Actor `a` began iterations of loops; the first actor inside a loop takes its snapshots.
  void on_iterations_begun(ActorState& st, std::size_t a);
  // Whether actor `a` is the lowest-numbered actor inside an instance of `loop` (the one
  // whose iterations mark the loop's periods); a new reference forgets the old snapshots.
  bool is_reference(std::size_t a, int loop);
  Snapshot take_snapshot(int loop) const;
  // Whether some IPU holds more transfers than a snapshot is taken with (steady_state.cpp).
  bool holds_too_many_transfers() const;
  // The iterations of `loop` every IPU inside it moved on from `older` to `newer`, the IPUs
  // outside it waiting unchanged.
  Period period_between(const Snapshot& older, const Snapshot& newer, int loop) const;
  // Whether one IPU is in the same state in both snapshots but `period` iterations of `loop`
  // further (the first IPU inside the loop sets `period` and the loop's `stride`), or waits
  // outside the loop unchanged, nothing of its own moving.
  static bool moved_alike(const Program& program, const ActorSnapshot& older, const ActorSnapshot& newer, int loop,
                          double clock, std::int64_t& period, std::int64_t& stride);
  // Skips the whole periods that fit before an IPU would leave the loop; false when none fits.
  bool skip_periods(const Snapshot& older, const Snapshot& newer, const Period& period);
  // The notes between two snapshots as `periods` repeats of `iterations` of the loop, and
  // the bytes one period puts on each link.
  std::shared_ptr<ReplayNote> period_replay(const Snapshot& older, const Snapshot& newer, std::int64_t periods,
                                            std::int64_t iterations, std::int64_t stride) const;
  // Every IPU inside the loop (at `depth` in its frames) `skipped` iterations on; the waits and
  // transfers of those outside it dated `skipped_time` earlier.
  void move_past_skipped(const std::vector<std::size_t>& depth, std::int64_t skipped, std::int64_t stride,
                         double skipped_time);
  // Tells `observer` about the repeats of `replay`, all shifted by (time_shift, label_shift).
  void report_repeats(const ReplayNote& replay, double time_shift, std::int64_t label_shift, RunObserver& observer);
  void trim_notes();
  bool keeping_notes() const { return !snapshots_.empty(); }

  const Schedule& schedule_;
  RunObserver& observer_;
  const EngineOptions options_;
  const bool transfers_wanted_;
  const bool every_step_wanted_;
  Platform platform_;
  std::vector<ActorState> actors_;
  CopyArrivals arrivals_;
  sg4::BarrierPtr barrier_;
  std::vector<double> link_bytes_;
  std::uint64_t activities_ = 0;
  double offset_ = 0;  // the full run's time minus SimGrid's, after skipped periods
  const HostLinkSpec host_link_;
  double last_round_trip_ = 0;  // when the IPUs last got the host's go-ahead, in the full run's time

  // Collectives timed by their dataflow (sim/schedule/collective_dataflow.hpp).
  CollectiveBlocks collectives_;
  struct CollectiveInstance {
    std::vector<double> entries;
    std::size_t joined = 0, left = 0;
    sg4::SemaphorePtr go;  // released for the members that wait once the last arrives
    CollectiveTimes times;
  };
  // The last run a group's dataflow timed, from its earliest entry: the entries and the times
  // less that entry.
  struct RelativeRun {
    std::vector<double> entries;
    CollectiveTimes times;
  };
  struct GroupState {
    std::vector<std::int64_t> joins;                 // per member: blocks begun; the n-th joins instance n
    std::map<std::int64_t, CollectiveInstance> open;  // instances some member has begun and not all left
    RelativeRun last;
    std::vector<MemberTraffic> traffic;  // per member, once a block was reported whole
  };
  std::vector<GroupState> group_states_;
  void time_collective(std::size_t g, GroupState& state, CollectiveInstance& instance);
  // The group's times from its quotient where its classes enter as one; false where they do not.
  bool time_by_classes(std::size_t g, const std::vector<double>& relative, CollectiveTimes& times) const;
  // Units reported from unit 0's simulation (EngineOptions::mirror_replicas).
  ReplicaMirrors mirrors_;
  // The observer gives the mirrors its figures for their sources (RunObserver::reports_mirrors):
  // only unit 0's events are reported.
  bool observer_reports_mirrors_ = false;
  // Per group: its members replayed one a class, each unit 0 member standing for its mirrors
  // (collective_dataflow.hpp, CollectiveQuotient); no members where the classes cannot stand
  // for them, and the group is replayed whole.
  std::vector<CollectiveQuotient> quotients_;
  void find_quotients();
  std::uint64_t activity_weight_ = 1;          // an activity of unit 0 stands for this many
  std::vector<std::size_t> simulated_members_;  // per group: its members in unit 0
  std::string mirrors_diverged_;                // the first member that left a block apart from its source
  // Member m's mirrors leave the block: each checked against m, its links' bytes added and, unless
  // the observer reports the mirrors, its event reported from its own times.
  void report_mirrored_members(std::size_t g, GroupState& state, const CollectiveTimes& times, std::size_t m,
                               std::int64_t micro_batch);

  // Steady state.
  std::vector<bool> every_program_loops_;  // by loop id: every program has a Repeat of it
  std::map<int, std::deque<Snapshot>> snapshots_;  // by loop, oldest first
  std::map<int, std::size_t> reference_;           // by loop: the actor taking its snapshots
  std::deque<Note> notes_;
  std::uint64_t notes_base_ = 0;  // number of notes dropped from the front
  struct Instance {
    int loop;
    std::int64_t times;
    std::int64_t skipped = 0;  // iterations the steady state skipped
  };
  std::vector<Instance> instances_;  // loops the reference IPU entered, in order
};

} // namespace ipusim::engine_detail
