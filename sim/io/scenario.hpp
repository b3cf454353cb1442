#pragma once
// A scenario: which model, on which IPU system, run how.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/io/model.hpp"
#include "sim/io/tensor_parallel.hpp"

namespace ipusim {

// Phased: PopART's VirtualGraphMode::ExecutionPhases (docs/phased.md); run on its own.
enum class Mode { Sharded, Pipelined, Phased };
std::string mode_name(Mode mode);
// The names runs are asked for by (execution.mode, run --mode, a sweep's modes, Python's
// mode): "both" (sharded, then pipelined), "sharded", "pipelined", "phased".
const std::vector<std::string>& mode_choices();
// The modes a choice names; nullopt for a name that is none of mode_choices().
std::optional<std::vector<Mode>> modes_named(const std::string& choice);

enum class Recomputation { None, Pipeline };
enum class Optimizer { Sgd, Momentum, Adam, Lamb, Lars };
std::string optimizer_name(Optimizer optimizer);

// PopART's AccumulateOuterFragmentSchedule: how the weight updates after the flush (the
// "accumulate outer fragment") are spread over the IPUs (docs/reference/popart-semantics.md).
enum class WeightUpdateSchedule { Serial, OverlapCycleOptimized, OverlapMemoryOptimized };
std::string weight_update_schedule_name(WeightUpdateSchedule schedule);

// When a kind of tensor moves between Streaming Memory and the IPU under phased execution
// (PopART's TensorLocationSettings / ExecutionPhaseIOSchedule): Preload loads it during the
// phase before its own, OnDemand just before the phase that uses it.
enum class PhaseIo { Preload, OnDemand };

// PopART's ExecutionPhaseSettings (sessionoptions.hpp), as far as the phased mode models them.
struct PhaseSettings {
  int stages = 2;  // 2: phases alternate between IPUs (ping-pong); 1: every phase on the same IPUs
  PhaseIo weights = PhaseIo::Preload;       // weightIOSchedule
  PhaseIo activations = PhaseIo::Preload;   // activationIOSchedule
  PhaseIo accumulators = PhaseIo::Preload;  // accumulatorIOSchedule
  // batchSerializationSettings.factor: each phase runs its micro-batch in this many slices, so
  // only one slice's activations are live (0 and 1: off, as in PopART).
  std::int64_t batch_serialization = 1;
  // Each phase runs every micro-batch of the step before the next phase (PopXL's batch_serialise
  // with steps = G, as Graphcore's PopXL GPT-J, BERT and Llama examples run): weights load once a
  // step, activations go to Streaming Memory per micro-batch, accumulators stay on chip for the
  // phase. false: PopART's ExecutionPhases, every phase once per micro-batch.
  bool serialise_micro_batches = false;
};

struct Execution {
  std::vector<Mode> modes{Mode::Sharded, Mode::Pipelined};
  std::string schedule = "popart";  // the pipelined schedule, by name
  bool training = false;
  std::int64_t micro_batch_size = 1;
  std::int64_t gradient_accumulation = 1;  // G: micro-batches per weight update (training)
  std::int64_t batches_per_step = 1;
  bool host_io = true;                 // false = synthetic data on the device, no host streams
  std::string cost_model = "poplibs";
  // PopART's default is None; PopTorch turns Pipeline on when pipelining over more than one IPU.
  Recomputation recomputation = Recomputation::None;
  Optimizer optimizer = Optimizer::Sgd;
  DType optimizer_state_dtype = DType::Float32;
  bool optimizer_state_off_chip = false;  // in Streaming Memory, streamed in for each weight update
  // Replicated tensor sharding: each replica holds and updates 1/replicas of the optimizer
  // state; gradients are reduce-scattered and the updated weights all-gathered.
  bool replicated_tensor_sharding = false;
  WeightUpdateSchedule weight_update_schedule = WeightUpdateSchedule::Serial;
  std::vector<std::int64_t> weight_update_excluded_ipus;  // excludedVirtualGraphs: updated one at a time
  DType partials_type = DType::Float32;          // partialsTypeMatMuls: PopART's default is float
  // availableMemoryProportion of each virtual IPU (one value: every IPU); poplibs' default 0.6.
  std::vector<double> available_memory_proportion{0.6};
  std::int64_t io_tiles = 0;                     // numIOTiles
  double sequences_per_sample = 1;               // packed BERT: sequences in one (packed) sample, on average
  // PopART's enablePrefetchDatastreams (TensorFlow's prefetch_data_streams), on by default in
  // both: the host fills the IPU-Gateway's buffer ahead of the IPU's stream copies.
  bool prefetch_data_streams = true;
  // PopART's replicatedCollectivesSettings.mergeAllReduceCollectives (off by default): the
  // all-reduces of small gradients run as one collective instead of one each.
  bool merge_all_reduce_collectives = false;
  // TensorFlow's norms.experimental.distributed_batch_norm_replica_group_size (Graphcore's
  // ResNet-50 BN_span): batch-norm statistics over this many consecutive replicas, all-reduced
  // in every forward and backward pass (sim/plan/distributed_norm_cost.hpp).
  std::int64_t distributed_batch_norm_replicas = 1;
  PhaseSettings phases;  // executionPhaseSettings: the phased mode only

  double available_memory_proportion_of(int virtual_ipu) const {
    const auto i = static_cast<std::size_t>(virtual_ipu);
    return i < available_memory_proportion.size() ? available_memory_proportion[i] : available_memory_proportion.back();
  }
  std::int64_t replicas = 1;               // data-parallel copies of the pipeline on disjoint IPUs
  // IPUs each virtual IPU is sharded over (Megatron / PopXL tensor parallelism, consecutive
  // IPUs; docs/tensor-parallel.md): the scenario's model is then one shard's.
  std::int64_t tensor_parallel = 1;
  std::vector<std::int64_t> placement;     // physical IPU of virtual IPU v in replica r at r*width+v; empty = in order
  // Which of these the scenario wrote itself, the rest being defaults: the warnings about a
  // setting the run's mode does not read, and about training with no optimizer named.
  struct Written {
    bool schedule = false;
    bool optimizer = false;
    bool execution_phase_settings = false;
    bool accumulate_outer_fragment_settings = false;
  } written;
};

// Where a generation's KV cache lives (docs/generation.md): in the IPUs' SRAM beside the
// weights, in Streaming Memory (read back every token), or nowhere (every token recomputes
// the whole prefix).
enum class KvCache { Sram, StreamingMemory, None };
std::string kv_cache_name(KvCache cache);

// How a generation stores its linear layers' weights (docs/generation.md): half precision as
// trained; int8 with a float16 scale per output column (ONNX DequantizeLinear per axis); or
// 4-bit groups, a float16 scale and bias per group of group_size along the contracted
// dimension, four to a uint16 (PopXL's group_quantise_weights, popxl-addons'
// group_quantize_decompress). Quantised weights are decompressed to float16 before each use.
enum class WeightFormat { Float16, Int8, Int4 };
std::string weight_format_name(WeightFormat format);

// Autoregressive inference (the scenario's "generation"): a prompt of prompt_tokens is read
// (prefill), then new_tokens are generated one at a time, microBatchSize sequences at once.
struct Generation {
  std::int64_t prompt_tokens = 0;
  std::int64_t new_tokens = 0;
  KvCache kv_cache = KvCache::Sram;
  // Tokens generated on the device per program run (PopXL's and PopTorch's on-device loop):
  // the host's turn between runs is paid once per this many tokens; 1 = a host round trip
  // per token.
  std::int64_t tokens_per_run = 1;
  WeightFormat weight_format = WeightFormat::Float16;
  std::int64_t group_size = 64;  // int4: weights per scale and bias (PopXL's recommended 64)
};

// What a tensor-parallel scenario was loaded from, before sharding: the model as the file
// gives it and the system as configured (sim/io/tensor_parallel.hpp).
struct Unsharded {
  Model model;
  HardwareConfig hardware;
};

struct Scenario {
  std::string file;
  std::string name;
  Model model;
  HardwareConfig hardware;
  Execution execution;
  std::optional<Generation> generation;  // set: run generates text instead of stepping
  std::optional<DType> model_dtype;      // modelDtype: the precision the scenario gave the model's floats
  // The scenario document as run (after --set); the model's and config's by their content
  // hashes (sim/io/content_hash.hpp: a report's modelHash and configHash).
  nlohmann::json scenario_document;
  std::string model_hash, config_hash;
  // Set when execution.tensorParallel > 1: `model` and `hardware` are then what one IPU of a
  // tensor-parallel group runs and sees (its shard, its share of the IPU-Gateway and Streaming
  // Memory), and this is what they were made from.
  std::shared_ptr<const Unsharded> unsharded;
  std::vector<KeptWhole> tensor_parallel_kept_whole;  // what the sharding left whole, and why

  // Where scenario fields live, for errors raised after loading.
  std::string execution_pointer(const std::string& key) const { return "/execution/" + key; }
};

} // namespace ipusim
