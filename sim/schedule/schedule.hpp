#pragma once
// Schedules turn a plan into per-IPU programs. They are chosen by name (the
// scenario's "schedule" for pipelined runs; "sharded" and "phased" for those modes) from the
// registry below. A schedule is one unit: its file defines its ScheduleInfo (builder, depth
// and placement rule, stash depths, which exact evaluator times it, its traits), or, for a
// what-if schedule run from an order, its OrderScheduleInfo (order.hpp: generator and
// placement), and the registry (schedule.cpp) lists it; the planner, the estimate, the lowering
// and the outputs ask the registry, never a name.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

struct OrderScheduleInfo;  // order.hpp

struct ScheduleContext {
  const Scenario& scenario;
  const Plan& plan;
  double sync_seconds;  // one inter-IPU sync among the plan's IPUs

  bool recompute() const { return scenario.execution.recomputation == Recomputation::Pipeline; }
  // Micro-batches per weight update (training) or per step (inference), and how many such batches a step runs.
  std::int64_t depth() const {
    return scenario.execution.training ? scenario.execution.gradient_accumulation : scenario.execution.batches_per_step;
  }
  std::int64_t batches() const { return scenario.execution.training ? scenario.execution.batches_per_step : 1; }
  // Forward (activation) or gradient copies out of / into a plan stage; the loss stage has both.
  std::vector<const PlanCopy*> copies_from(int stage, bool gradient) const;
  std::vector<const PlanCopy*> copies_into(int stage, bool gradient) const;
};

// Checks shared by every pipelined schedule: the graph's pipelining-only rules, virtual graphs,
// and more than one IPU unless `one_ipu_allowed` (TensorFlow pipelines on one IPU to recompute
// stage by stage).
void check_pipelinable(const ScheduleContext& context, bool one_ipu_allowed = false);
// An InputError about the pipeline depth, pointing at G (training) or batchesPerStep.
[[noreturn]] void depth_error(const ScheduleContext& context, const std::string& rule, const std::string& message);

// Reduce-scatter / all-gather pairs PopART issues for one IPU's weights in a weight update
// (per tensor, or merged; collectives.cpp). Each beyond the first pays its ring steps' latency.
double collective_pairs(const Execution& execution, const PlanIpu& ipu, bool sharded_state);

// How the planner's exact evaluator (sim/search/evaluator.cpp) times a schedule. None: the
// planner does not search it; the engine runs it.
enum class StepModel { None, PopartCycles, TensorFlowSteps, AllForwardsFirst, OneForwardOneBackward };
// What the split search's step-time bound takes per micro-batch (sim/search/split_search.cpp):
// the busiest IPU's work (the IPUs overlap), every IPU's work (one stage at a time), or the
// busiest IPU's forward and backward work apart (all forwards in forward steps, then all backwards).
enum class SplitBound { BusiestIpu, EveryIpu, PassesApart };

struct ScheduleInfo {
  std::string name;
  std::string description;
  Schedule (*build)(const ScheduleContext& context);
  // Which IPU framework runs it ("PopART and PopTorch", ...); empty for a what-if schedule, one
  // from the GPU literature that no IPU framework implements (outputs and the planner say so).
  std::string run_by;
  // A pipeline schedule (execution.schedule); sharded and phased are the schedules of their modes.
  bool pipeline = true;
  // Training: micro-batches forward stage s of N keeps for its backward at `depth` micro-batches
  // per batch (docs/reference/popart-semantics.md). nullptr: none, or read from its order.
  int (*stash_depth)(int s, int N, std::int64_t depth) = nullptr;
  // The depth and placement rule its builder enforces, for the planner: P forward stages,
  // `depth` micro-batches per batch (PopART without gradient accumulation: batchesPerStep).
  bool (*accepts)(int P, bool ipu_holds_two_stages, std::int64_t depth, bool training) = nullptr;
  StepModel step_model = StepModel::None;
  SplitBound split_bound = SplitBound::BusiestIpu;
  // PopART's lockstep cycles, each ending in a sync; without gradient accumulation a training
  // step is one pipeline of batchesPerStep micro-batches, the weights updated every micro-batch.
  bool lockstep_cycles = false;
  // The weight update follows accumulateOuterFragmentSettings (Serial, Overlap*); false: every
  // IPU updates at once (GPU-style schedules).
  bool follows_weight_update_setting = true;
  // The order it runs from (build_from_order: the what-if orders, and training 1F1B with stages
  // sharing an IPU); nullptr when it has none.
  const OrderScheduleInfo* order = nullptr;
  // How its framework cuts annotated pipeline stages (sim/plan/plan.hpp).
  AnnotatedStages annotated_stages = AnnotatedStages::MergedOnIpu;

  bool what_if() const { return run_by.empty(); }
  // Forward stages that wait for nothing downstream: where a stage outpaces the next, its copies
  // back up for the whole step (GPipe; 1F1B in inference, which has no backward to wait for).
  bool forwards_run_ahead(bool training) const {
    return step_model == StepModel::AllForwardsFirst || (step_model == StepModel::OneForwardOneBackward && !training);
  }
};

// Every schedule, pipeline and mode schedules, in the order `ipusim list` shows them.
const std::vector<ScheduleInfo>& schedules();
std::string schedule_names();
// The pipeline schedules IPU frameworks run, by framework, from the registry: "PopART and
// PopTorch: popart; TensorFlow for IPU: tf-grouped, tf-interleaved, tf-sequential".
std::string framework_schedules();
// The registry's entry of that name; nullptr when there is none.
const ScheduleInfo* find_schedule(const std::string& name);
// The entry of a name known to be registered (checked at load); std::invalid_argument otherwise.
const ScheduleInfo& schedule_info(const std::string& name);

// The scenario's pipeline schedule must be known even for sharded-only runs.
void check_schedule_name(const Scenario& scenario);

// The plan of the scenario for its modes, or for `modes` (the run's, when a flag chose them),
// its annotated stages cut as the framework of its schedule cuts them (an unknown name: as
// PopART, until make_schedule refuses it).
Plan make_plan(const Scenario& scenario, const ModelGraph& graph);
Plan make_plan(const Scenario& scenario, const ModelGraph& graph, const std::vector<Mode>& modes);

// Builds the program for a run in `mode`; throws InputError when the scenario asks
// for something the schedule cannot do (unknown name, too shallow a pipeline...).
Schedule make_schedule(Mode mode, const Scenario& scenario, const Plan& plan);

// Micro-batches each forward stage stashes under PopART's schedule (its registry entry's rule).
std::vector<int> popart_stash_depth(const Plan& plan);
// Micro-batches forward stage s keeps for its backward under `schedule`, by its registry entry:
// popart 2(L-s)+1 (none for the loss stage L), tf-grouped 2(N-1-s), tf-interleaved N-1-s,
// tf-sequential 1 (none for the last), gpipe every micro-batch of the batch (`depth`),
// 1f1b min(N-s, depth); none in inference, nor for a schedule whose depths come from its order.
std::vector<int> stash_depths(const std::string& schedule, int forward_stages, std::int64_t depth, bool training);
// TensorFlow's lockstep steps of one batch, for the planner's evaluator: which forward stage
// runs which micro-batch in which pass, in runs of `times` repeats of `body`, each repeat one
// micro-batch further ("tf-grouped", "tf-interleaved"; anything else: "tf-sequential").
struct LockstepTask {
  int stage;  // forward stage index
  std::int64_t micro_batch;
  bool backward;
};
struct LockstepRun {
  std::vector<std::vector<LockstepTask>> body;
  std::int64_t times = 1;
};
std::vector<LockstepRun> tf_lockstep_runs(const std::string& schedule, int forward_stages, std::int64_t depth,
                                          bool training);
// TensorFlow's depth and placement rules as its builders enforce them, for the planner's
// evaluator: throws InputError (pipeline.depth at `file`'s `depth_pointer`,
// pipeline.interleaved-shared-ipu at `model_file`'s /ops).
void check_tensorflow_pipeline(const std::string& schedule, const Plan& plan, std::int64_t depth,
                               const std::string& file, const std::string& depth_pointer,
                               const std::string& model_file);


// A schedule no IPU framework runs (its registry entry names none): outputs mark it, and the
// planner ranks it apart unless asked for it.
bool is_what_if_schedule(const std::string& name);
// The what-if schedules run from an order (sim/schedule/order.hpp; order_lowering.cpp).
Schedule build_from_order(const ScheduleContext& context);
// Past 3 x `probe_depth` micro-batches (where building at G would cost more) a periodic order
// is built at two depths, about `probe_depth` and twice it, and extended to G, its memory flat
// in G (build_from_order's is kOrderProbeDepth). The orders of BERT-Large's placements settle
// within 64 micro-batches, the slowest known (1F1B, head back on IPU 0, unequal costs) near 170.
inline constexpr std::int64_t kOrderProbeDepth = 1024;
Schedule build_from_order(const ScheduleContext& context, std::int64_t probe_depth);


// Shared pieces for schedule implementations.
class ProgramBuilder {
public:
  // `recompute`: backward stages re-run their forward (pipeline recomputation).
  ProgramBuilder(const ScheduleContext& context, std::string name, bool recompute);

  // A barrier of every IPU, then `seconds` of sync.
  void sync_all(double seconds);
  // One copy phase: the given copies all move at once, framed by syncs (sync, copies, barrier).
  // `pass`: AllReduce for gradients summed across copies of the weights.
  void exchange(const std::vector<const PlanCopy*>& copies, Pass pass = Pass::None);
  // Host input, compute (forward and/or backward) and host output of one stage for one micro-batch.
  void host_input(const PlanStage& stage, std::int64_t micro_batch);
  // All the stage's work (the loss stage's forward and backward at once, as under PopART), or one
  // pass of it: Forward, Backward, or a zero-bubble order's InputGradient (B) or WeightGradient (W)
  // (TF and GPU-style schedules run the loss stage's forward and backward as separate steps).
  void compute(const PlanStage& stage, std::int64_t micro_batch);
  void compute(const PlanStage& stage, std::int64_t micro_batch, Pass pass);
  // Asynchronous copies: start them / wait for them, on the IPU of the stage.
  void send(int ipu, const std::vector<const PlanCopy*>& copies);
  void receive(int ipu, const std::vector<const PlanCopy*>& copies);
  void host_output(const PlanStage& stage, std::int64_t micro_batch);
  // `bytes` between virtual IPU `virtual_ipu` and its Streaming Memory (load: into the IPU) for
  // `stage`; `overlapped`: carried by the I/O tiles while the IPU computes, waited for at its next sync.
  void streaming_memory(int virtual_ipu, bool load, double bytes, int stage, Pass pass, bool overlapped = false);
  // The step's weight update. With replicas the gradients are first ring-all-reduced
  // (reduce-scattered under replicated tensor sharding, the updated weights all-gathered
  // after). Each IPU's update loads its off-chip optimizer state, computes, stores it back.
  // The IPUs take turns as the scenario's accumulateOuterFragmentSettings say (Serial: in
  // virtual-graph order; Overlap*: together, excluded virtual graphs first, one at a time);
  // `all_at_once` overrides that for schedules with no such setting (GPU-style).
  void weight_updates(bool all_at_once = false);
  // PopART without gradient accumulation: right after a stage's backward of one micro-batch,
  // the update of the weights whose gradient it completes (all-reduced first with replicas).
  void stage_update(const PlanStage& stage, std::int64_t micro_batch);
  // Replicated tensor sharding in phased execution: the phase's weights (`bytes` whole) gathered
  // from every replica's shard over IPU-Links before it runs.
  void gather_sharded_weights(int virtual_ipu, double bytes) { all_gather(virtual_ipu, bytes); }
  // Phased execution: the update of the weights `stage` completes, with `load_bytes` brought in
  // from Streaming Memory first and `store_bytes` written back after (gradients all-reduced across
  // replicas; only reduce-scattered under replicated tensor sharding, each updating its shard).
  void phase_update(const PlanStage& stage, double load_bytes, double store_bytes);
  // Lays out `body` once as the template of a loop run `times` times, micro-batches one
  // `stride` further each time, on every program the body adds steps to (write the body
  // for iteration 0). Returns the loop's id; passing it as `loop` makes this call another
  // part of that loop (the stages of a GPU-style schedule, each with its own trip count).
  int repeat(const std::string& name, std::int64_t times, std::int64_t stride, const std::function<void()>& body,
             int loop = -1);
  Schedule finish(std::int64_t micro_batches, int cycles, std::vector<int> stash_depth);

private:
  // Every step is laid out for each replica, on its physical IPU, with its copies renumbered.
  void append(int virtual_ipu, const Step& step);
  void push(std::size_t program, Step step);
  int physical_of(int replica, int virtual_ipu) const;
  // Gradient collectives across the replicas holding virtual IPU `virtual_ipu`'s weights
  // (collectives.cpp): an all-reduce is a reduce-scatter then an all-gather.
  void reduce_scatter(int virtual_ipu, double bytes);
  void all_gather(int virtual_ipu, double bytes);
  // One ring step over `members` (replica indices, in ring order): each sends `chunk` to the
  // next; `level` keeps the mailboxes of a rack's ring apart from those of the racks' ring.
  void ring_step(int virtual_ipu, const std::vector<int>& members, int level, double chunk);
  void reserve_ring_steps(int virtual_ipu, const std::vector<std::vector<int>>& racks);
  // A reduce-scatter's (or all-gather's) ring in each rack over its `bytes`, and the racks' rings
  // over each rack's share (replica i of every rack holds the same one); none with one rack.
  void ring_in_racks(int virtual_ipu, const std::vector<std::vector<int>>& racks, double bytes);
  void ring_across_racks(int virtual_ipu, const std::vector<std::vector<int>>& racks, double bytes);
  // The latency of the collectives PopART issues for `ipu`'s weights beyond the one ring the
  // bandwidth is simulated on: one per tensor (collectives.cpp), as a timed step on each replica.
  void per_tensor_collectives(const PlanIpu& ipu, bool sharded_state);
  // The replicas of `virtual_ipu` grouped by rack (physical IPU / rackIpus), or one group
  // when the replicas do not split evenly over racks.
  std::vector<std::vector<int>> racks_of(int virtual_ipu) const;
  // Host streams go through the IPU-Gateway's buffer, filled ahead by the host.
  bool prefetched() const;
  // A host stream (HostInput or HostOutput) of `bytes` for the stage's micro-batch, if any.
  void host_stream(const PlanStage& stage, std::int64_t micro_batch, StepKind kind, double bytes);
  // The end of the step's program run: the host's turn, no shorter than its legs of the
  // step's streams.
  void host_round_trip(std::int64_t micro_batches);
  // One IPU's update, or `fraction` of it: state in, compute, state out.
  void update(const PlanIpu& ipu, double fraction);
  // The steps of an update, stamped from `s`: load the state (if any), compute, store it back.
  void update_steps(int virtual_ipu, Step s, double seconds, double state_bytes);

  const ScheduleContext& context_;
  bool recompute_;
  int replicas_ = 1;
  int width_ = 1;   // virtual IPUs of one pipeline replica
  int copies_ = 0;  // the plan's copies; replica r's copy c is r*copies_+c
  std::vector<int> physical_;
  std::map<int, std::size_t> index_;  // physical IPU -> program
  Schedule schedule_;
};

} // namespace ipusim
