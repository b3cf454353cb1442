#pragma once
// The only part of ipusim that sees SimGrid. It builds the platform from the
// hardware config (a host per IPU, full-duplex IPU-Links with exact analytic timing,
// a host link per IPU), runs one actor per IPU program, and returns what happened.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/base/forked.hpp"
#include "sim/io/hardware.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// Receive: waiting for an asynchronous copy to arrive (idle time, not work).
// StreamingMemory: optimizer state moving to or from Streaming Memory.
// HostRoundTrip: the IPUs waiting for the host between two runs of the device program.
enum class EventKind { Compute, HostInput, HostOutput, Exchange, Sync, Receive, StreamingMemory, HostRoundTrip };
std::string event_kind_name(EventKind kind);

struct Event {
  int ipu = 0;
  EventKind kind = EventKind::Compute;
  double start = 0, end = 0;
  int stage = -1;
  std::int64_t micro_batch = -1;
  Pass pass = Pass::None;
  double bytes = 0;
};

struct LinkTraffic {
  std::string name;   // "ipu0->ipu1", "host->ipu0": one direction of a full-duplex link
  double bytes = 0;
};

// One transfer over the links of its route (an inter-IPU copy or a host stream).
struct TransferRecord {
  int src = 0, dst = 0;       // IPU ids; -1 is the host, -2 the IPU's Streaming Memory
  int copy = -1;              // the plan's copy id; -1 for host streams
  double start = 0, end = 0;  // when the bytes moved (after both sides were ready)
  double bytes = 0;
  std::vector<int> links;     // indices into RunLog::links, along the route
};

struct RunLog {
  double end_time = 0;
  std::vector<Event> events;        // per IPU in program order, IPUs ascending
  std::vector<LinkTraffic> links;   // every directed link, in config order
  std::vector<TransferRecord> transfers;  // per recording IPU (the sender; the IPU for host streams), ascending
  std::uint64_t activities = 0;     // SimGrid activities run: execs, comms and sync sleeps
};

class RunObserver;

// Units of IPUs that run alike (sim/schedule/replica_mirrors.hpp): unit k's program p +
// k * programs_per_unit runs as unit 0's program p, on IPU k * ipus_per_unit further on.
struct MirroredUnits {
  std::size_t units = 1;
  std::size_t programs_per_unit = 0;
  int ipus_per_unit = 0;
};

// Periods of a loop the engine skipped (EngineOptions::steady_state): each of the `times`
// repeats reports what the last simulated period reported, the k-th k * period later and
// k * label_shift micro-batches further, while the loop moves on `iterations` per period.
struct RepeatedPeriods {
  int loop = 0;
  std::int64_t iterations = 0;
  std::int64_t label_shift = 0;
  double period = 0;
  std::int64_t times = 0;
  // Reports the k-th repeat (1 <= k <= times) to `observer`, event by event, in the order
  // the simulation reported the period.
  std::function<void(std::int64_t k, RunObserver& observer)> replay;
};

// Receives what a run does as it happens: each step's event when the step ends (per IPU
// in program order), each transfer when the IPU that made it collects it. Times are
// seconds from the start of the step, as the full simulation has them.
class RunObserver {
public:
  virtual ~RunObserver() = default;
  virtual void on_event(const Event& event) = 0;
  virtual void on_transfer(const TransferRecord& transfer) = 0;
  // Observers that ignore transfers spare the engine building their records.
  virtual bool wants_transfers() const { return true; }
  // Observers that only add up each IPU's times (not a trace) take a timed collective block,
  // whose steps follow one another without a gap, as one event spanning them all: on a Bow
  // Pod256 that is one event per replica and weight update instead of 132.
  virtual bool wants_every_step() const { return true; }
  // Skipped periods. By default each repeat is reported event by event (a trace needs
  // them all); observers that can add one period's contribution times the number of
  // periods override it, so that a run's cost does not grow with its length.
  virtual void on_repeat(const RepeatedPeriods& repeat) {
    for (std::int64_t k = 1; k <= repeat.times; ++k) repeat.replay(k, *this);
  }
  // Mirrored units (EngineOptions::mirror_replicas). By default the engine reports each
  // mirror's events as its source's moved to the mirror's IPU; an observer that gives the
  // mirrors its figures for their sources itself says so here, is told of the units once,
  // before any event, and receives unit 0's events alone: on a Bow Pod256 one event where
  // there were 64.
  virtual bool reports_mirrors() const { return false; }
  virtual void on_mirrors(const MirroredUnits& units) { (void)units; }
};

struct EngineOptions {
  // Steady state: when every IPU is inside a loop of its program (Repeat) and the whole
  // state of the simulation (positions, activities in progress with their ages and what
  // they have left, copies in flight, buffered copies) is the same as some iterations
  // earlier, shifted in time, every later period repeats it; the engine reports those
  // periods from the one it simulated and simulates only the end of the loop. Exact, not
  // an extrapolation. false simulates every iteration.
  bool steady_state = true;
  // The gradient collectives' exchanges timed by their dataflow where no link carries two
  // routes (sim/schedule/collective_dataflow.hpp): the same times as SimGrid's transfers,
  // without simulating them. false: always simulated (tests compare the two).
  bool collectives_by_dataflow = true;
  // Units of IPUs that run unit 0's programs on routes alike (sim/schedule/replica_mirrors.hpp)
  // reported from unit 0's simulation instead of simulated, where the observer only adds
  // times up (no trace) and the collectives are timed by their dataflow. Each member's exit
  // from each collective is checked against its source's; where one differs by more than
  // 1e-9 of the block, the run ends in MirrorsDiverged and must be made again without.
  bool mirror_replicas = true;
};

struct RunSummary {
  double end_time = 0;
  std::vector<LinkTraffic> links;  // every directed link, in config order
  std::uint64_t activities = 0;    // SimGrid activities of the full simulation (periods skipped included)
  std::int64_t steps_total = 0;      // program steps of the run, all IPUs
  std::int64_t steps_simulated = 0;  // of those, the ones SimGrid ran (the rest came from periods)
  // IPUs SimGrid ran (the first unit's when the others mirror it, EngineOptions::mirror_replicas).
  std::int64_t ipus_simulated = 0;
  // Loops long enough to skip periods of whose state did not repeat for most of their
  // iterations (contention that does not settle, IPUs at different rates): simulated in
  // full, or all but fewer than half their iterations. By name, without repeats.
  std::vector<std::string> not_periodic;
  // Groups of collective blocks timed by their dataflow (0: simulated), or why not.
  std::size_t collective_groups = 0;
  std::string collectives_not_timed;
};

// A simulation that cannot finish (deadlock, inconsistent programs) is an internal fault.
using EngineError = ChildProcessError;  // the engine runs in a forked child (sim/base/forked.hpp)

// A run whose mirrored units did not leave a collective when their source did
// (EngineOptions::mirror_replicas): what it reported is not the full simulation's.
class MirrorsDiverged : public EngineError {
public:
  using EngineError::EngineError;
};

// Runs the simulation in this process, telling `observer` what happens. SimGrid allows one
// engine per process: call it once, in a process of its own (run_forked), or, after
// prepare_engine_for_forks where engine_can_simulate_again, as often as needed; a run that
// failed ends the process's simulations (EngineError after it).
RunSummary run_engine_in_process(const Schedule& schedule, const HardwareConfig& hardware, RunObserver& observer,
                                 const EngineOptions& options = {});

// Starts SimGrid's engine in this process without simulating anything, so that every
// process forked from it afterwards (a sweep's points) starts with the engine ready and
// each runs its one simulation sooner. This process must not simulate itself.
void prepare_engine_for_forks();

// Whether this process may simulate again after a simulation: it needs SimGrid's engine
// started before the first (prepare_engine_for_forks) and a SimGrid whose clock can be set
// back (sim/engine/engine.cpp). A run then computes exactly what it would in a fresh process.
bool engine_can_simulate_again();

// About what a simulation of `schedule` allocates, for prefault_heap (sim/base/heap.hpp) to
// fault in at once: 300 bytes a template step of every program. Fitted to the simulation
// child's page faults, not a result: 375-380 bytes a step above a fixed 0.8 MB on ResNet-50
// and BERT on the Bow Pod16 to Pod256 (MLPerf v2.0 scenarios, 1,056 to 43,968 steps), taken
// lower so that a run that allocates less per step populates little it does not use.
double simulation_heap_bytes(const Schedule& schedule);

// Runs `child` in a forked simulation process (run_forked) and `parent` on what it sends. The
// child's heap is a fresh one, unless prepare_engine_for_forks started SimGrid's engine here;
// a fresh heap's pages are zero pages to fault in, so the child faults in what a simulation of
// `schedule` allocates at once (prefault_heap) before `child` runs; an inherited heap's pages
// are the parent's, shared, and are left as they are.
void fork_simulation(const Schedule& schedule, const std::function<void(ByteWriter&)>& child,
                     const std::function<void(ByteReader&)>& parent);

// Runs the simulation in a forked child process and returns its whole log, so callers
// may simulate as often as they like (tests, tools; `ipusim run` uses sim/simulate).
RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware, const EngineOptions& options = {});

} // namespace ipusim
