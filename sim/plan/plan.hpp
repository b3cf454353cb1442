#pragma once
// The plan: what each IPU must do for one micro-batch. Forward stages are the ops in
// execution order cut wherever the IPU changes (consecutive annotated stages on one IPU
// become one), backward stages added for training at 2L-s on the forward stage's IPU,
// inter-IPU copies per stage boundary (stage-skipping tensors chained hop by hop), host
// streams, per-stage times from the cost model and the weight update per IPU (and per
// stage, for updates every micro-batch). Plain data: no engine, no schedule.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost/cost_model.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario.hpp"
#include "sim/plan/stage_mirror.hpp"

namespace ipusim {

struct PlanStage {
  int id = 0;     // execution order: forward 0..L, then backward L+1..2L when training
  int ipu = 0;
  bool backward = false;
  int forward_stage = 0;                 // for a backward stage, the forward stage it differentiates
  std::vector<int> annotated_stages;     // the model's stage ids merged into this one
  std::vector<std::size_t> ops;          // in topological order
  double forward_seconds = 0;            // per micro-batch
  double backward_seconds = 0;           // per micro-batch: backward stages, and the loss stage
  double recompute_seconds = 0;          // backward stages: the forward re-run under recomputation
  // Of seconds(), the tensor-parallel collectives (sim/io/tensor_parallel.hpp); of
  // recompute_seconds, those its forward re-run repeats.
  double tensor_parallel_seconds = 0;
  double tensor_parallel_recompute_seconds = 0;
  // Of backward_seconds, the weight gradient (W, OpCost::weight_gradient_cycles); the rest is B.
  // Schedules without a B/W split run both as one backward.
  double weight_gradient_seconds = 0;
  // Training: the weights whose gradient this stage completes (backward stages and the
  // loss stage) and one update of them, for schedules that update every micro-batch.
  std::vector<std::string> weights;
  double weight_elements = 0;
  double weight_bytes = 0;
  double update_seconds = 0;
  double state_bytes = 0;  // optimizer state streamed in, and back out, per update (off-chip state)
  double host_input_bytes = 0;           // per micro-batch, streamed in before the stage runs
  double host_output_bytes = 0;          // per micro-batch, streamed out after it
  std::vector<std::string> host_inputs, host_outputs;
  // Forward stages, for memory: what the backward needs from the forward (stashed per
  // micro-batch in flight), what is stashed instead under recomputation (the tensors
  // entering the stage, and those leaving it for another IPU that its backward reads),
  // the tensors entering it from elsewhere, and the peak of activations live while it runs.
  std::vector<std::string> stash_tensors;
  std::vector<std::string> recompute_stash_tensors;
  std::vector<std::string> boundary_tensors;
  std::vector<std::string> weights_read;  // forward stages: every weight its ops read (phased: what it loads)
  double boundary_bytes = 0;  // per micro-batch
  double live_bytes = 0;      // per micro-batch

  double seconds() const { return forward_seconds + backward_seconds; }
};

struct PlanCopy {
  int id = 0;
  int from_stage = 0, to_stage = 0;  // always neighbours: to_stage == from_stage + 1
  int src_ipu = 0, dst_ipu = 0;
  double bytes = 0;                  // per micro-batch
  bool gradient = false;
  std::vector<std::string> tensors;
};

struct PlanIpu {
  int id = 0;
  std::vector<int> stages;       // ascending
  std::vector<std::string> weights;
  double weight_elements = 0;
  double weight_bytes = 0;
  double weight_tensors = 0;
  // Of them, those PopART would shard under replicated tensor sharding: at least
  // minElementsForReplicatedTensorSharding = 8192 elements (popart sessionoptions.hpp).
  double shardable_weight_tensors = 0;
  double update_seconds = 0;     // one weight update's compute (training), on this replica's shard
  double state_bytes = 0;        // optimizer state streamed in, and back out, per update (off-chip state)
  // The share of the update over weights shaped like weights of other IPUs (not excluded):
  // the part OverlapMemoryOptimized runs in parallel across IPUs.
  double shared_update_fraction = 0;
  double temp_bytes_per_tile = 0;  // the largest matmul/convolution temporaries of any op here
};

// One op's cost per micro-batch, as the plan's stage times add them up (cycles of its IPU).
inline constexpr std::int64_t kMinElementsForReplicatedTensorSharding = 8192;

struct OpTiming {
  OpCost forward;
  OpCost backward;  // training only
};

struct Plan {
  bool training = false;
  double clock_hz = 0;
  std::vector<OpTiming> op_timings;  // by op index in the model file
  std::int64_t micro_batch_size = 1;
  int forward_stage_count = 0;       // P, after merging
  int loss_stage = 0;                // L = P-1
  std::vector<PlanStage> stages;     // S = P inference, 2P-1 training
  std::vector<PlanCopy> copies;      // forward boundaries, then gradient boundaries
  std::vector<PlanIpu> ipus;         // the IPUs the model uses, ascending id
  bool annotated = false;            // the model carries virtualGraph annotations
  bool phased = false;               // stages are execution phases (the phased mode: docs/phased.md)
  std::optional<InputError> pipelining_refused;  // the graph's pipelining-only rule the model breaks

  int stage_count() const { return static_cast<int>(stages.size()); }
};

// Of the time the plan's stages compute for one micro-batch (their forward re-runs with
// `recompute`), the fraction spent in tensor-parallel all-reduces: 0 without them.
double tensor_parallel_fraction(const Plan& plan, bool recompute);

// The backward stage of forward stage k (the loss stage is its own), in a training plan.
const PlanStage& backward_of(const Plan& plan, int k);

// How a pipelined run turns annotated pipeline stages into the plan's stages, a rule of the
// framework that runs its schedule (the schedule registry, a floor above, says which):
// PopART merges consecutive stages on one IPU; TensorFlow keeps every stage it is given, several
// on one IPU included (its device_mapping is many-to-one).
enum class AnnotatedStages { MergedOnIpu, Kept };

// For `modes` (the scenario's, or the run's when a flag chose them): the phased mode cuts the plan
// at every phase; a pipelined run cuts annotated stages by `stages`. The plan of a scenario as
// its schedule cuts it is make_plan(scenario, graph[, modes]) in sim/schedule/schedule.hpp.
Plan make_plan(const Scenario& scenario, const ModelGraph& graph, const std::vector<Mode>& modes,
               AnnotatedStages stages);

// Training a model without a loss op (SoftmaxCrossEntropy, NllLoss, L1Loss, MSELoss and their
// ONNX names): backward then starts from its outputs, which are streamed to the host every
// micro-batch; a warning that says so, or nothing.
std::optional<std::string> missing_loss_warning(const Scenario& scenario, const ModelGraph& graph);
// The model carries executionPhase annotations, which the sharded and pipelined modes do not
// use (PopART clears them outside phased execution): what they are and what the run does.
std::optional<std::string> unused_phases_warning(const Model& model, const ModelGraph& graph);
// Execution settings the scenario gives that the run's mode does not read: executionPhaseSettings
// outside the phased mode; schedule and accumulateOuterFragmentSettings in it. What they are, or nothing.
std::optional<std::string> unused_settings_warning(const Scenario& scenario, bool phased);
// Training whose scenario names no optimizer: SGD is assumed, and said.
std::optional<std::string> missing_optimizer_warning(const Scenario& scenario);

// Matmuls and lookups tensor parallelism left whole (Scenario::tensor_parallel_kept_whole):
// which, and why, or nothing.
std::optional<std::string> kept_whole_note(const Scenario& scenario);

// The physical IPU of entry r*width+v (virtual IPU v of replica r): the scenario's placement,
// or 0, 1, 2, ... (with tensor parallelism, the first IPU of each group of tensorParallel).
// Refuses replicas the system cannot hold (scenario.not-enough-ipus) and a placement of the
// wrong length, naming a missing IPU or one twice (scenario.bad-placement). make_plan checks it
// before any cost, since the tensor-parallel and batch-norm collectives are timed on the IPUs.
std::vector<int> physical_ipus(const Scenario& scenario, int width);

// The per-op rules make_plan applies, shared with the planner's split tables (sim/search),
// which compose a plan's figures from blocks of layers without rebuilding it.
// The forward stages on their IPUs and, for training, the backward stage 2L-s of each on the
// same IPU: ids, directions and IPUs set, every figure zero.
void lay_out_stages(Plan& plan, const std::vector<int>& ipu_of_forward_stage, bool training);
// An op the user checkpointed (PopART's RecomputeType Checkpoint): its outputs are stashed, not recomputed.
bool is_checkpoint(const Op& op);
// What an op's gradient needs from its forward.
enum class BackwardReads { Nothing, Inputs, Outputs };
BackwardReads backward_reads(const std::string& op_type);
// The execution options that change how an op runs on virtual IPU `ipu`, or with a given
// availableMemoryProportion.
CostOptions cost_options(const Scenario& scenario, int ipu);
CostOptions cost_options(const Execution& execution, double available_memory_proportion);
// One weight update of `elements` weights (`tensors` tensors) costed on `cost`: its seconds,
// and the optimizer state it streams in (and back out) when the state is off chip.
std::pair<double, double> weight_update_cost(const Scenario& scenario, const CostModel& cost, double elements,
                                             double bytes, DType dtype, double tensors);
std::pair<double, double> weight_update_cost(const Execution& execution, const CostModel& cost, double elements,
                                             double bytes, DType dtype, double tensors);

} // namespace ipusim
