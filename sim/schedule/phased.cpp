// Phased execution, PopART's VirtualGraphMode::ExecutionPhases (docs/phased.md). The plan's
// stages are the execution phases: forward 0..L, then the backward phases 2L-s in reverse, run
// in that order for every micro-batch, one phase at a time. Each phase loads what it uses from
// Streaming Memory: its weights, when training the gradient accumulators of the weights it
// reads, and in a backward phase the activations its forward phase stored. Preload (PopART's
// default I/O schedule) loads them while the phase before runs: on another IPU (stages 2,
// "ping-pong") that IPU is free to load; on the same IPU only I/O tiles (numIOTiles) let the load
// run beside the compute, else it follows it. OnDemand loads just before the phase. After the
// accumulation loop each phase's weights are updated: weights, accumulators and optimizer state
// in, update, weights and state out. Replicated tensor sharding (PopXL's remote tensor sharding):
// each replica keeps 1/R of every weight and of its optimizer state in Streaming Memory, loads its
// shard and all-gathers the phase's weights over IPU-Links before the phase runs; the update
// reduce-scatters the gradients and updates and stores the replica's shard only.
#include <string>
#include <vector>

#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// What one phase moves between Streaming Memory and its IPU per micro-batch, by I/O schedule.
struct PhaseIoBytes {
  double preload = 0;    // loaded in the phase before (Preload)
  double on_demand = 0;  // loaded just before the phase (OnDemand)
  double store = 0;      // stored after the phase
};

double weight_bytes_read(const Model& m, const PlanStage& forward) {
  double bytes = 0;
  for (const auto& w : forward.weights_read) bytes += static_cast<double>(m.tensor(w).bytes());
  return bytes;
}

// Replicas sharing each weight's Streaming Memory copy (replicated tensor sharding), else 1.
double weight_shards(const Execution& ex) {
  return ex.replicated_tensor_sharding && ex.replicas > 1 ? static_cast<double>(ex.replicas) : 1.0;
}

// Under replicated tensor sharding a phase gathers its weights from the replicas' shards first.
void gather_weights(ProgramBuilder& b, const ScheduleContext& ctx, const PlanStage& st) {
  if (weight_shards(ctx.scenario.execution) <= 1) return;
  const Plan& plan = ctx.plan;
  b.gather_sharded_weights(st.ipu, weight_bytes_read(ctx.scenario.model, plan.stages[static_cast<std::size_t>(st.forward_stage)]));
}

// What a forward phase stores for its backward: what the backward reads, or under recomputation
// what re-running the forward needs (the phase's inputs and checkpoints).
double stash_bytes(const ScheduleContext& ctx, const PlanStage& forward) {
  const Model& m = ctx.scenario.model;
  double bytes = 0;
  for (const auto& t : ctx.recompute() ? forward.recompute_stash_tensors : forward.stash_tensors)
    bytes += m.tensor(t).bytes_per_micro_batch(ctx.scenario.execution.micro_batch_size);
  return bytes;
}

std::vector<PhaseIoBytes> phase_io(const ScheduleContext& ctx) {
  const Model& m = ctx.scenario.model;
  const Execution& ex = ctx.scenario.execution;
  const PhaseSettings& settings = ex.phases;
  const Plan& plan = ctx.plan;
  const bool accumulates = ex.training && ex.gradient_accumulation > 1;
  std::vector<PhaseIoBytes> out(plan.stages.size());
  auto add = [](PhaseIoBytes& io, PhaseIo schedule, double bytes) {
    (schedule == PhaseIo::Preload ? io.preload : io.on_demand) += bytes;
  };
  for (const PlanStage& st : plan.stages) {
    PhaseIoBytes& io = out[static_cast<std::size_t>(st.id)];
    const PlanStage& forward = plan.stages[static_cast<std::size_t>(st.forward_stage)];
    const double weights = weight_bytes_read(m, forward);
    const bool backward = st.backward || st.backward_seconds > 0;
    add(io, settings.weights, weights / weight_shards(ex));
    if (backward && accumulates) {  // the gradients of the weights it reads add into their accumulators
      add(io, settings.accumulators, weights);
      io.store += weights;
    }
    if (!ex.training) continue;
    const double stash = stash_bytes(ctx, forward);
    if (st.backward) add(io, settings.activations, stash);
    else if (st.id != plan.loss_stage) io.store += stash;
  }
  return out;
}

// One micro-batch through every phase.
void run_phases(ProgramBuilder& b, const ScheduleContext& ctx, const std::vector<PhaseIoBytes>& io) {
  const Plan& plan = ctx.plan;
  const bool io_tiles = ctx.scenario.execution.io_tiles > 0;
  const PlanStage& first = plan.stages.front();
  // Nothing runs before the first phase: all it needs is loaded on demand.
  b.streaming_memory(first.ipu, true, io[0].preload + io[0].on_demand, first.id, Pass::Forward);
  for (const PlanStage& st : plan.stages) {
    const auto k = static_cast<std::size_t>(st.id);
    const PlanStage* next = k + 1 < plan.stages.size() ? &plan.stages[k + 1] : nullptr;
    const Pass pass = st.backward ? Pass::Backward : Pass::Forward;
    const Pass next_pass = next && next->backward ? Pass::Backward : Pass::Forward;
    if (next && next->ipu != st.ipu) b.streaming_memory(next->ipu, true, io[k + 1].preload, next->id, next_pass);
    else if (next && io_tiles) b.streaming_memory(st.ipu, true, io[k + 1].preload, next->id, next_pass, true);
    gather_weights(b, ctx, st);
    b.host_input(st, 0);
    b.compute(st, 0);
    b.host_output(st, 0);
    b.streaming_memory(st.ipu, false, io[k].store, st.id, pass);
    if (next && next->ipu == st.ipu && !io_tiles) b.streaming_memory(st.ipu, true, io[k + 1].preload, next->id, next_pass);
    // Phases synchronise at every boundary (PopART's ReplicaAndLadder sync), copies or not.
    std::vector<const PlanCopy*> outgoing;  // the loss phase sends gradients
    for (const PlanCopy& c : plan.copies)
      if (c.from_stage == st.id) outgoing.push_back(&c);
    if (!outgoing.empty()) b.exchange(outgoing);
    else b.sync_all(ctx.sync_seconds);
    if (next) b.streaming_memory(next->ipu, true, io[k + 1].on_demand, next->id, next_pass);
  }
}

// The weight update of each phase after the accumulation loop, phase by phase on each IPU (IPUs
// in parallel): the weights, their accumulators and the optimizer state in, the update, weights
// and state out.
void update_phases(ProgramBuilder& b, const ScheduleContext& ctx) {
  const Execution& ex = ctx.scenario.execution;
  const double accumulators = ex.gradient_accumulation > 1 ? 1.0 : 0.0;
  const double shards = weight_shards(ex);
  for (const PlanStage& st : ctx.plan.stages) {
    if (st.weight_bytes <= 0) continue;
    b.phase_update(st, st.weight_bytes * (1 / shards + accumulators) + st.state_bytes,
                   st.weight_bytes / shards + st.state_bytes);
  }
  b.sync_all(ctx.sync_seconds);
}

// What crosses a phase boundary per micro-batch: the copies into or out of `stage`.
double boundary_bytes(const Plan& plan, int stage, bool into) {
  double bytes = 0;
  for (const PlanCopy& c : plan.copies)
    if ((into ? c.to_stage : c.from_stage) == stage) bytes += c.bytes;
  return bytes;
}

// PopXL's order: each phase runs all the step's micro-batches (batch_serialise, steps = G). Its
// weights load once (preloaded as in run_phases); per micro-batch it loads what the phase before
// stored for it (its input, or its gradient, and in a backward phase the activations its forward
// phase stored) and stores its own, on the I/O tiles beside the compute when there are any
// (io_overlapped). A backward phase's accumulators live on chip for its loop only, and its update
// follows its loop: optimizer state in, update, weights and state out.
void run_serialised_phases(ProgramBuilder& b, const ScheduleContext& ctx) {
  const Model& m = ctx.scenario.model;
  const Execution& ex = ctx.scenario.execution;
  const Plan& plan = ctx.plan;
  const bool io_tiles = ex.io_tiles > 0;
  const bool preload = ex.phases.weights == PhaseIo::Preload;
  const auto weights = [&](const PlanStage& st) {  // from Streaming Memory: the replica's shard
    return weight_bytes_read(m, plan.stages[static_cast<std::size_t>(st.forward_stage)]) / weight_shards(ex);
  };
  b.streaming_memory(plan.stages.front().ipu, true, weights(plan.stages.front()), 0, Pass::Forward);
  for (const PlanStage& st : plan.stages) {
    const auto k = static_cast<std::size_t>(st.id);
    const PlanStage* next = k + 1 < plan.stages.size() ? &plan.stages[k + 1] : nullptr;
    const Pass pass = st.backward ? Pass::Backward : Pass::Forward;
    const Pass next_pass = next && next->backward ? Pass::Backward : Pass::Forward;
    const bool beside = next && preload && (next->ipu != st.ipu || io_tiles);  // loads while this phase runs
    // On the other IPU (ping-pong) the next phase's weights load a G-th per micro-batch, and with
    // several IPUs each iteration ends at a free barrier: the same transfer beside the same
    // compute, and every IPU takes part in the loop, so its periods repeat and are not simulated
    // one by one.
    const bool spread = beside && next->ipu != st.ipu;
    // With I/O tiles the barrier also bounds each micro-batch by its slower half, compute or
    // Streaming Memory (PopXL's io_overlapped loop, whose steady state stores micro-batch i-2
    // and loads i while i-1 computes; its first and last iterations are not modelled apart).
    const bool barrier = plan.ipus.size() > 1 || io_tiles;
    if (beside && !spread) b.streaming_memory(next->ipu, true, weights(*next), next->id, next_pass, true);
    const double stash = ex.training ? stash_bytes(ctx, plan.stages[static_cast<std::size_t>(st.forward_stage)]) : 0;
    const double loads = boundary_bytes(plan, st.id, true) + (st.backward ? stash : 0);
    const double stores = boundary_bytes(plan, st.id, false) + (!st.backward && st.id != plan.loss_stage ? stash : 0);
    gather_weights(b, ctx, st);
    b.repeat("micro-batches of phase " + std::to_string(st.id), ctx.depth(), 1, [&] {
      b.streaming_memory(st.ipu, true, loads, st.id, pass, io_tiles);
      if (io_tiles) b.streaming_memory(st.ipu, false, stores, st.id, pass, true);
      b.host_input(st, 0);
      b.compute(st, 0);
      b.host_output(st, 0);
      if (!io_tiles) b.streaming_memory(st.ipu, false, stores, st.id, pass);
      if (spread) b.streaming_memory(next->ipu, true, weights(*next) / static_cast<double>(ctx.depth()), next->id, next_pass);
      if (barrier) b.sync_all(0);
    });
    if (ex.training && st.weight_bytes > 0)
      b.phase_update(st, st.state_bytes, st.weight_bytes / weight_shards(ex) + st.state_bytes);
    b.sync_all(ctx.sync_seconds);
    if (next && !beside) b.streaming_memory(next->ipu, true, weights(*next), next->id, next_pass);
  }
}

Schedule build_phased(const ScheduleContext& ctx) {
  const Execution& ex = ctx.scenario.execution;
  const std::vector<PhaseIoBytes> io = phase_io(ctx);
  // Recomputation: each backward phase re-runs its forward phase first.
  ProgramBuilder b(ctx, "phased", ctx.recompute());
  b.repeat("batches", ctx.batches(), ctx.depth(), [&] {
    if (ex.phases.serialise_micro_batches) {
      run_serialised_phases(b, ctx);
      return;
    }
    b.repeat("micro-batches", ctx.depth(), 1, [&] { run_phases(b, ctx, io); });
    if (ex.training) update_phases(b, ctx);
  });
  // Stored activations wait in Streaming Memory, not on the IPU: no stash.
  Schedule schedule = b.finish(ctx.batches() * ctx.depth(), 0, std::vector<int>(static_cast<std::size_t>(ctx.plan.forward_stage_count), 0));
  schedule.one_stage_at_a_time = true;
  return schedule;
}

} // namespace

const ScheduleInfo& phased_schedule() {
  static const ScheduleInfo info = [] {
    ScheduleInfo s{"phased", "PopART's execution phases: one phase at a time, its weights streamed in from Streaming Memory",
                   &build_phased, "PopART and PopXL (execution phases)"};
    s.pipeline = false;
    return s;
  }();
  return info;
}

} // namespace ipusim
