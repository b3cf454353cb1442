#pragma once
// Per-IPU programs: what the engine runs. Each IPU executes its steps in order.
// A Sync is a barrier of every IPU in the schedule followed by the sync's cost, so
// every program holds the same number of Sync steps. An Exchange moves this IPU's
// share of inter-IPU copies (sends and receives) concurrently and ends when all are done.
// Send and Receive are the asynchronous GPU-style pair: a Send starts a copy and moves
// on; a Receive waits until that copy has arrived (the receiving IPU takes every copy
// the moment it is sent, like a pre-allocated buffer).
//
// Programs are compact: `steps` is a template and `repeats` mark ranges of it that run
// many times (a schedule's main cycle, one per micro-batch), so a program's size does
// not grow with the number of micro-batches. ProgramCursor walks the executed steps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/pass.hpp"
#include "sim/plan/stage_mirror.hpp"
#include "sim/plan/stash_peaks.hpp"

namespace ipusim {

// StateLoad / StateStore move optimizer state between Streaming Memory and the IPU.
// HostRoundTrip: the end of one run of the device program; every IPU waits for the host.
enum class StepKind { Compute, HostInput, HostOutput, Sync, Exchange, Send, Receive, StateLoad, StateStore, HostRoundTrip };

struct Transfer {
  int copy = 0;        // the plan's copy id
  int src_ipu = 0;
  int dst_ipu = 0;
  double bytes = 0;
};

struct Step {
  StepKind kind = StepKind::Compute;
  // Compute: its duration; Sync: the cost paid once all IPUs have arrived; Exchange: paid
  // after its transfers (collectives' latency).
  double seconds = 0;
  double bytes = 0;    // host streams and Streaming Memory transfers
  int stage = -1;
  std::int64_t micro_batch = -1;
  Pass pass = Pass::None;  // a backward split by a zero-bubble order is InputGradient or WeightGradient
  // Host streams with I/O tiles (numIOTiles): the stream runs alongside compute and the IPU
  // waits for it only at its next sync.
  bool overlapped = false;
  // Host streams prefetched into the IPU-Gateway's buffer: the IPU waits only for the
  // gateway's leg; the host's own leg runs in the background (see floor_seconds).
  bool prefetched = false;
  // HostRoundTrip: the host needs at least this long per run for its legs of the prefetched
  // streams (the busiest host link's bytes over its bandwidth); a shorter run waits for it.
  double floor_seconds = 0;
  std::vector<Transfer> transfers;  // Exchange, Send, Receive: src_ipu == this IPU sends
};

// Template steps [first, first + length) run `times` times in a row; in iteration i a
// step's micro-batch is its own plus i * stride. Repeats nest (an inner range lies inside
// an outer one) and are listed outer before inner, by `first`. `loop` names the
// schedule-level loop the range belongs to: every program's part of one loop shares it.
struct Repeat {
  std::size_t first = 0;
  std::size_t length = 0;
  std::int64_t times = 1;
  std::int64_t stride = 0;
  int loop = 0;
};

struct Program {
  Program() = default;
  Program(int ipu_id, std::vector<Step> template_steps, std::vector<Repeat> step_repeats = {})
      : ipu(ipu_id), steps(std::move(template_steps)), repeats(std::move(step_repeats)) {}

  int ipu = 0;                   // the physical IPU
  int replica = 0;               // which replica's pipeline it runs,
  int virtual_ipu = 0;           // and which of that pipeline's IPUs (virtualGraph): ipu unless placed
  std::vector<Step> steps;       // the template; each step runs once unless a repeat covers it
  std::vector<Repeat> repeats;
};

struct Schedule {
  std::string name;
  std::vector<Program> programs;     // one per physical IPU used (all replicas), ascending IPU id
  std::vector<std::string> loops;    // what each Repeat::loop id repeats ("main cycles"), for notes
  int replicas = 1;
  std::int64_t micro_batches = 0;    // per step and replica, all batches included
  int cycles = 0;                    // lockstep cycles per batch (0 when the schedule has none)
  double sync_seconds = 0;           // the cost of one inter-IPU sync among these IPUs
  // Micro-batches whose activations forward stage s keeps for its backward, by the
  // schedule's own rule (docs/reference/popart-semantics.md); indexed by forward stage.
  std::vector<int> stash_depth;
  std::vector<StageMirror> mirrors;  // forward stages also run on another IPU (DualPipe), with their stash
  // Schedules run from an order: per IPU, the moments its stashes could peak together (the
  // memory model's IPU stash); empty: every stage at its own depth, as stash_depth says.
  std::vector<IpuStashPeaks> stash_at_once;
  bool recompute = false;  // backward stages re-run their forward: stashes hold what crosses an IPU boundary
  bool one_stage_at_a_time = false;  // sharded and tf-sequential: an IPU waits while another runs its stage
};

// The copy ids a schedule's transfers use are 0 .. copy_count - 1.
inline std::size_t copy_count(const Schedule& schedule) {
  int copies = 0;
  for (const Program& p : schedule.programs)
    for (const Step& s : p.steps)
      for (const Transfer& t : s.transfers) copies = copies > t.copy + 1 ? copies : t.copy + 1;
  return static_cast<std::size_t>(copies);
}

} // namespace ipusim
