#include "sim/io/parameters.hpp"

#include <cstdio>

#include "sim/io/scenario.hpp"
#include "sim/io/tile_architecture_loader.hpp"

namespace ipusim {

namespace {

constexpr double kInt31 = 2147483647.0;  // an int
constexpr double kMaxIpus = 1e6;         // ipuCount's bound: no system comes near it
constexpr Lower kClosed = Lower::Closed, kZeroOr = Lower::ZeroOrClosed;
// The shortest time or amount a nonzero value may have (below it, SimGrid loses precision).
constexpr double kTinySeconds = 1e-12;
constexpr bool kRequired = true, kOptional = false;

// Defaults as the docs write them, read from the structs the loaders fill.
std::string shown(bool v) { return v ? "`true`" : "`false`"; }
std::string shown(std::int64_t v) { return std::to_string(v); }
std::string shown(int v) { return std::to_string(v); }
std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}
std::string quoted(const std::string& v) { return "`\"" + v + "\"`"; }

// A config's top level.
std::vector<Parameter> system_parameters() {
  const HardwareConfig config{};
  const auto C = Format::Config;
  return {
      {C, "/extends", "string", kOptional, "", "base config file, relative to this one (below)", {}},
      {C, "/name", "string", kRequired, "", "display name", {}},
      {C, "/description", "string", kOptional, "", "free text", {}},
      {C, "/ipu", "object", kRequired, "", "the IPU model, the same for every IPU (below)", {}},
      {C, "/ipuCount", "integer", kRequired, "", "IPUs in the system",
       NumberRange{1, kMaxIpus, kClosed, "IPUs", nullptr, "an IPU-POD256 has 256"}},
      {C, "/rackIpus", "integer", kOptional, "`ipuCount`",
       "IPUs of one IPU-Link domain (a POD64 rack), dividing `ipuCount`; replicas in several racks all-reduce hierarchically: within "
       "each rack, then across racks",
       NumberRange{1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
                   "the IPUs of one IPU-Link domain: 64 in an IPU-POD64 rack (and divides ipuCount)"}},
      {C, "/syncLatencyPerHopSeconds", "number", kRequired, "", "one hop of the inter-IPU sync (below)",
       NumberRange{kTinySeconds, 1, kZeroOr, "s", nullptr, "Graphcore's model: 15 ns"}},
      {C, "/syncSeconds", "number", kOptional, "(formula)", "when given, **every** inter-IPU sync costs exactly this",
       NumberRange{kTinySeconds, 1, kZeroOr, "s", nullptr, "one inter-IPU sync"}},
      {C, "/pricePerIpuHour", "number", kOptional, shown(config.price_per_ipu_hour) + " (not stated)",
       "what an IPU-hour costs, in any currency; runs of a model with attention then give a cost per million "
       "tokens (`costPerMillionTokens`)",
       NumberRange{1e-6, 1e6, kZeroOr, "per IPU-hour", nullptr,
                   "what an IPU-hour costs, in any currency: outputs give a cost per million tokens"}},
      {C, "/links", "array of links", kRequired, "", "IPU-Links (below); may be `[]`", {}},
      {C, "/hostLink", "object", kRequired, "", "host ↔ IPU streams (below)", {}},
      {C, "/streamingMemory", "object", kOptional, "absent", "off-chip DDR for optimizer state (below)", {}},
      {C, "/sources", "object: JSON pointer → citation", kRequired, "",
       "where each figure comes from (below); may be `{}`", {}},
      {C, "/sources/*", "string", kOptional, "", "a non-empty citation of the field at this JSON pointer", {}},
  };
}

std::vector<Parameter> ipu_parameters() {
  const IpuSpec ipu{};
  const auto C = Format::Config;
  return {
      {C, "/ipu/name", "string", kRequired, "", "the IPU's name", {}},
      {C, "/ipu/tiles", "integer", kRequired, "", "tiles per IPU",
       NumberRange{1, 1e5, kClosed, "tiles", nullptr, "GC2 has 1216, GC200 1472"}},
      {C, "/ipu/clockHz", "number", kRequired, "", "the tiles' clock",
       NumberRange{1e6, 1e11, kClosed, "Hz", nullptr, "1 MHz to 100 GHz; IPUs run at 1.3-1.9 GHz"}},
      {C, "/ipu/flopsPerCyclePerTile", "object: `float16`, `float32`", kRequired, "",
       "peak FLOP per cycle per tile by dtype; `int32`, `int8` and `bool` work runs at the `float32` rate", {}},
      {C, "/ipu/flopsPerCyclePerTile/float16", "number", kRequired, "", "float16 peak (AMP)",
       NumberRange{1e-3, 1e5, kClosed, "FLOP/cycle", nullptr, "per tile; GC200: 128 (AMP)"}},
      {C, "/ipu/flopsPerCyclePerTile/float32", "number", kRequired, "", "float32 peak",
       NumberRange{1e-3, 1e5, kClosed, "FLOP/cycle", nullptr, "per tile; GC200: 32"}},
      {C, "/ipu/sramBytesPerTile", "integer", kRequired, "", "SRAM per tile (capacity = this × `tiles`)",
       NumberRange{1, 1073741824.0, kClosed, "B", nullptr, "per tile, at most 1 GiB; GC200: 624 KiB"}},
      {C, "/ipu/exchangeBytesPerCyclePerTile", "number", kRequired, "", "on-chip exchange per tile",
       NumberRange{1e-3, 1e4, kClosed, "B/cycle", nullptr, "GC200: 4"}},
      {C, "/ipu/syncCycles", "number", kRequired, "", "on-chip sync paid once per op (tile cost model)",
       NumberRange{1e-3, 1e9, kZeroOr, "cycles", nullptr, "on-chip sync per op"}},
      {C, "/ipu/minElementsPerTile", "integer", kOptional, shown(ipu.min_elements_per_tile),
       "finest split of an op: one tile per this many output elements",
       NumberRange{1, kInt31, kClosed, "elements", nullptr, "an op's finest split"}},
      {C, "/ipu/codeBytesPerOp", "number", kRequired, "",
       "code and control an op leaves on each tile it uses (twice that when training)",
       NumberRange{0, 1073741824.0, kClosed, "B", nullptr, "per tile an op uses"}},
      {C, "/ipu/efficiency", "object: op type → number", kRequired, "",
       "fraction of peak FLOPs reached, by op `type` (the `tile` and `compute` cost models, and ops with declared "
       "FLOPs in `poplibs`); must contain `\"default\"` (`json.missing-key`) for the other types; "
       "`\"WeightUpdate\"` applies to the optimizer step",
       {}},
      {C, "/ipu/efficiency/*", "number", kOptional, "", "one op type's fraction of peak",
       NumberRange{1e-4, 1, kClosed, "", "value.bad-efficiency", "a fraction of peak, at least 1e-4"}},
      {C, "/ipu/tileArchitecture", "object", kOptional, "the GC200's",
       "what the `poplibs` cost model needs of a tile (below; docs/cost-model.md)", {}},
  };
}

// Links, the host link, Streaming Memory.
std::vector<Parameter> link_parameters() {
  const HostLinkSpec host{};
  const StreamingMemorySpec memory{};
  const auto C = Format::Config;
  return {
      {C, "/links/*/ipus", "`[a, b]`, JSON integers", kRequired, "", "two different IPUs (`link.bad-ends`)", {}},
      {C, "/links/*/ipus/*", "integer", kRequired, "", "an IPU id, below `ipuCount`",
       NumberRange{0, kMaxIpus - 1, kClosed, "", "link.bad-ends", "an IPU id (and below ipuCount)"}},
      {C, "/links/*/name", "string", kOptional, "", "label shown in traces (e.g. `gw-link-m3`)", {}},
      {C, "/links/*/bandwidthBytesPerSecond", "number", kRequired, "",
       "**per direction**: the link is full duplex, a → b and b → a each get this bandwidth",
       NumberRange{1e3, 1e15, kClosed, "B/s", nullptr, "1 kB/s to 1 PB/s; an IPU-Link: 32 GB/s"}},
      {C, "/links/*/latencySeconds", "number", kRequired, "", "one crossing of the link",
       NumberRange{kTinySeconds, 10, kZeroOr, "s", nullptr, "an IPU-Link: about 1 us"}},
      {C, "/hostLink/bandwidthBytesPerSecond", "number", kRequired, "", "per host link, per direction (full duplex)",
       NumberRange{1e3, 1e15, kClosed, "B/s", nullptr, "PCIe Gen4 x16: about 7 GB/s usable"}},
      {C, "/hostLink/latencySeconds", "number", kRequired, "", "one stream's latency",
       NumberRange{kTinySeconds, 10, kZeroOr, "s", nullptr, "a few us"}},
      {C, "/hostLink/sharedBy", "integer", kOptional, shown(host.shared_by),
       "IPUs behind one host link, dividing `ipuCount`: IPUs i and j share a link when ⌊i/sharedBy⌋ = ⌊j/sharedBy⌋ (4 for an M2000's "
       "IPU-Gateway)",
       NumberRange{1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
                   "IPUs behind one host link: 4 on an M2000 (and divides ipuCount)"}},
      {C, "/hostLink/gatewayBandwidthBytesPerSecond", "number", kOptional,
       shown(host.gateway_bandwidth_bytes_per_s) + " (no gateway)",
       "per direction of an IPU-Gateway's own link to each IPU. With `execution.prefetchDataStreams` (on by default, "
       "as PopART's `enablePrefetchDatastreams` and TensorFlow's `prefetch_data_streams`) the host fills the "
       "gateway's buffer ahead: a stream costs the IPU only latency + bytes / this bandwidth, while the host link "
       "carries the run's streams in the background; a run shorter than its busiest host link's bytes / "
       "`bandwidthBytesPerSecond` waits for them at its end",
       NumberRange{1e3, 1e15, kZeroOr, "B/s", nullptr, "an IPU-Gateway's PCIe Gen4 x8 to one IPU: about 16 GB/s"}},
      {C, "/hostLink/runOverheadSeconds", "number", kOptional, shown(host.run_overhead_s),
       "the host's turn after each run of the device program (one step: `batchesPerStep` batches, as one PopART "
       "`session.run` or one TensorFlow loop of `iterations`); every IPU waits. The IPU-M2000 family's 48 ms is "
       "derived from Graphcore's MLPerf logs (docs/validation.md)",
       NumberRange{kTinySeconds, 10, kZeroOr, "s", nullptr, "the host's turn between program runs: tens of ms"}},
      {C, "/streamingMemory/bandwidthBytesPerSecond", "number", kRequired, "",
       "of one memory, shared by its IPUs' reads and writes",
       NumberRange{1e3, 1e15, kClosed, "B/s", nullptr, "an M2000's DDR4: tens of GB/s"}},
      {C, "/streamingMemory/latencySeconds", "number", kRequired, "", "one transfer's latency",
       NumberRange{kTinySeconds, 10, kZeroOr, "s", nullptr, "about 1 us"}},
      {C, "/streamingMemory/sharedBy", "integer", kOptional, shown(memory.shared_by),
       "consecutive IPUs, dividing `ipuCount`, behind one memory (4: an IPU-M2000's DDR)",
       NumberRange{1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
                   "IPUs behind one DDR4 channel group: 4 on an M2000 (and divides ipuCount)"}},
  };
}

// The tile's parameters carry their defaults (the GC200's) and bounds in their own table.
std::vector<Parameter> tile_architecture_parameters() {
  const TileArchitecture gc200{};
  std::vector<Parameter> out;
  for (const TileParameter& p : tile_parameters())
    out.push_back({Format::Config, "/ipu/tileArchitecture/" + p.key, p.integer ? "integer" : "number", kOptional,
                   p.integer ? shown(gc200.*p.whole) : shown(gc200.*p.real), p.description,
                   NumberRange{p.min, p.max, kClosed, "", nullptr, p.description.c_str()}});
  return out;
}

// A scenario's top level.
std::vector<Parameter> scenario_top_parameters() {
  const auto S = Format::Scenario;
  return {
      {S, "/name", "string", kOptional, "the file name without `.json`", "display name", {}},
      {S, "/description", "string", kOptional, "", "free text", {}},
      {S, "/model", "string or object", kRequired, "",
       "a model file path (relative to the scenario; `.onnx` is imported) or the model inline; missing file: "
       "`file.missing`",
       {}},
      {S, "/modelBatchSize", "integer", kOptional, "",
       "the static leading batch dimension of an ONNX model (see [ONNX models](#onnx-models-onnx)); with a JSON "
       "model: `scenario.model-batch-size`",
       NumberRange{1, 1e6, kClosed, "samples", nullptr, "the batch dimension of an imported ONNX model"}},
      {S, "/modelDtype", "`\"float16\"` or `\"float32\"`", kOptional, "as the model has them",
       "the precision the model runs in: every float16/float32 tensor of the model (JSON or ONNX) becomes this type, "
       "e.g. an fp32 PyTorch export run in fp16 (`--dtype` of `validate`, `convert`, `annotate` for an ONNX file); "
       "another value: `scenario.bad-model-dtype`",
       {}},
      {S, "/config", "string or object", kRequired, "",
       "a config file path or the config inline (an inline config may use `extends`)", {}},
      {S, "/execution", "object", kOptional, "all defaults", "how to run (below)", {}},
      {S, "/generation", "object", kOptional, "absent",
       "autoregressive inference instead of steps (below; [docs/generation.md](generation.md))", {}},
  };
}

std::vector<Parameter> execution_parameters() {
  const Execution e{};
  const auto S = Format::Scenario;
  return {
      {S, "/execution/mode", "`\"both\"`, `\"sharded\"`, `\"pipelined\"`, `\"phased\"`", kOptional, quoted("both"),
       "which runs to simulate (`scenario.bad-mode`); `ipusim run --mode` overrides it; `\"phased\"` runs alone "
       "(docs/phased.md)",
       {}},
      {S, "/execution/schedule", "string", kOptional, quoted(e.schedule),
       "the pipelined run's schedule (table below); unknown names are `scenario.unknown-schedule`, raised only when "
       "a pipelined run is made",
       {}},
      {S, "/execution/training", "boolean", kOptional, shown(e.training),
       "forward only, or forward + backward + weight update", {}},
      {S, "/execution/microBatchSize", "integer", kOptional, shown(e.micro_batch_size), "samples per micro-batch",
       NumberRange{1, 1e6, kClosed, "samples", nullptr, "per micro-batch"}},
      {S, "/execution/gradientAccumulation", "integer", kOptional, shown(e.gradient_accumulation),
       "G: micro-batches per weight update. Training only: any other value with `training: false` is "
       "`scenario.accumulation-without-training`",
       NumberRange{1, 1e8, kClosed, "micro-batches", nullptr,
                   "G; the run's own size is checked against memory before simulating (scenario.too-large)"}},
      {S, "/execution/batchesPerStep", "integer", kOptional, shown(e.batches_per_step),
       "inference: micro-batches per step; training: weight updates per step",
       NumberRange{1, 1e8, kClosed, "", nullptr,
                   "per step; the run's own size is checked against memory before simulating (scenario.too-large)"}},
      {S, "/execution/hostIo", "boolean", kOptional, shown(e.host_io),
       "`false`: synthetic data on the device, no host streams (and no stream buffers in memory)", {}},
      {S, "/execution/costModel", "`\"poplibs\"`, `\"tile\"`, `\"compute\"`", kOptional, quoted(e.cost_model),
       "op-time model (below, docs/cost-model.md); unknown: `scenario.unknown-cost-model`", {}},
      {S, "/execution/partialsTypeMatMuls", "`\"float\"`, `\"half\"`", kOptional,
       quoted(e.partials_type == DType::Float32 ? "float" : "half"),
       "matmul and convolution partial sums (PopART's name; `scenario.bad-partials-type`)", {}},
      {S, "/execution/availableMemoryProportion", "number in (0, 1], or an array of them, one per virtual IPU",
       kOptional, shown(e.available_memory_proportion.front()),
       "share of a tile's SRAM matmul/convolution plans may use for temporaries (`value.out-of-range`; an array of "
       "the wrong length is `scenario.bad-available-memory-proportion`)",
       {}},
      {S, "/execution/numIOTiles", "integer", kOptional, shown(e.io_tiles),
       "tiles kept for host streams, fewer than the IPU's `tiles`: compute uses the rest, and host streams overlap compute (waited for at the "
       "next sync); `scenario.too-many-io-tiles`",
       NumberRange{0, 1e5, kClosed, "tiles", nullptr,
                   "tiles set aside for overlapped host I/O; Graphcore's BERT uses 64 or 128"}},
      {S, "/execution/sequencesPerSample", "number", kOptional, shown(e.sequences_per_sample),
       "packed inputs: sequences per sample on average; throughput is also reported per sequence",
       NumberRange{1, 1e6, kClosed, "", nullptr, "packed inputs: sequences in one sample on average (packed BERT: about 2)"}},
      {S, "/execution/mergeAllReduceCollectives", "boolean", kOptional, shown(e.merge_all_reduce_collectives),
       "PopART's `replicatedCollectivesSettings.mergeAllReduceCollectives` (Graphcore's MLPerf v2.0 BERT sets it; "
       "TensorFlow's `maximum_cross_replica_sum_buffer_size` buffers its all-reduces likewise): the all-reduces of "
       "small gradients (and of LAMB/LARS norms) run as one collective each kind instead of one per tensor "
       "(docs/cost-model.md)",
       {}},
      {S, "/execution/distributedBatchNormReplicaGroupSize", "integer", kOptional,
       shown(e.distributed_batch_norm_replicas),
       "TensorFlow's `distributed_batch_norm_replica_group_size` (Graphcore's ResNet-50 `BN_span`): in training, "
       "each BatchNormalization takes its statistics over this many consecutive replicas, one all-reduce per "
       "forward and per backward pass of every micro-batch (docs/cost-model.md); must divide `replicas`, "
       "and be 1 at inference (`scenario.bad-batch-norm-group`)",
       NumberRange{1, kMaxIpus, kClosed, "replicas", nullptr, "replicas sharing batch-norm statistics; Graphcore's MLPerf ResNet-50 uses 2"}},
      {S, "/execution/prefetchDataStreams", "boolean", kOptional, shown(e.prefetch_data_streams),
       "alias `enablePrefetchDatastreams`: the host prefetches stream data into the IPU-Gateway's buffer (PopART's "
       "and TensorFlow's default): with a config whose `hostLink` has a `gatewayBandwidthBytesPerSecond`, a stream "
       "costs the IPU only the gateway's leg; false: every stream crosses the host link while the IPU waits",
       {}},
      {S, "/execution/recomputation", "`\"none\"`, `\"pipeline\"`", kOptional,
       quoted(e.recomputation == Recomputation::None ? "none" : "pipeline"),
       "pipeline recomputation (`scenario.bad-recomputation`): in pipelined runs each backward stage (not the loss "
       "stage) also re-runs its forward stage, and stashes hold only what crosses an IPU boundary (above). Sharded "
       "runs ignore it: no recompute time, and their stash is the full one, one micro-batch deep",
       {}},
      {S, "/execution/optimizer", "object", kOptional, "all defaults", "the optimizer (below); used when training", {}},
      {S, "/execution/replicas", "integer", kOptional, shown(e.replicas),
       "data-parallel copies of the pipeline on disjoint IPUs, gradients ring-all-reduced before the update",
       NumberRange{1, kMaxIpus, kClosed, "", nullptr,
                   "no more than IPUs can exist (and the replicas' IPUs no more than ipuCount)"}},
      {S, "/execution/tensorParallel", "integer", kOptional, shown(e.tensor_parallel),
       "IPUs each virtual IPU is sharded over, Megatron / PopXL style (column- then row-parallel matmuls, heads "
       "split, vocabulary split), consecutive IPUs, all-reduces on their IPU-Links; aliases `tensor_parallel` "
       "(PopXL's examples), `tensor_model_parallel_size` (Megatron-LM), `tp`; docs/tensor-parallel.md; "
       "`tensor-parallel.indivisible`",
       NumberRange{1, kMaxIpus, kClosed, "IPUs", nullptr,
                   "IPUs each virtual IPU is sharded over (tensor parallelism); Graphcore's PopXL models use 4, 8 or 16"}},
      {S, "/execution/placement", "array of JSON integers", kOptional, "`[]` (in order)",
       "physical IPU of virtual IPU v in replica r at index r·W + v, W = highest `virtualGraph` used + 1; needs "
       "exactly `replicas` × W distinct existing IPUs (`scenario.bad-placement`). Without it, replica r uses IPUs "
       "r·W … r·W+W−1, and `replicas` × W > `ipuCount` is `scenario.not-enough-ipus`",
       {}},
      {S, "/execution/placement/*", "integer", kOptional, "", "an IPU id",
       NumberRange{0, kMaxIpus - 1, kClosed, "", "scenario.bad-placement", "an IPU id"}},
      {S, "/execution/executionPhaseSettings", "object", kOptional, "all defaults",
       "the phased mode's settings, as PopART names them (below; `scenario.bad-phase-settings`; docs/phased.md); "
       "other modes do not read them",
       {}},
      {S, "/execution/batchSerializationSettings", "object", kOptional, "absent (off)",
       "the phased mode: each phase runs its micro-batch in slices (below)", {}},
      {S, "/execution/accumulateOuterFragmentSettings", "object", kOptional, "all defaults",
       "how the step's weight updates take turns across IPUs, as PopART names it (below)", {}},
  };
}

// execution's objects: the optimizer and PopART's settings objects.
std::vector<Parameter> execution_settings_parameters() {
  const Execution e{};
  const PhaseSettings phases{};
  const auto S = Format::Scenario;
  const std::string phase_io = "`\"Preload\"` or `\"OnDemand\"`";
  return {
      // ---- execution.optimizer
      {S, "/execution/optimizer/type", "`\"sgd\"`, `\"momentum\"`, `\"adam\"`, `\"lamb\"`, `\"lars\"`", kOptional,
       quoted(optimizer_name(e.optimizer)),
       "FLOPs per weight element of the update: 2, 4, 12, 16, 8; state tensors per weight: 0, 1, 2, 2, 1 (LARS: "
       "momentum with a per-tensor trust ratio; LAMB: Adam's moments with one). Bad values: `scenario.bad-optimizer`",
       {}},
      {S, "/execution/optimizer/stateDtype", "`\"float16\"`, `\"float32\"`", kOptional,
       quoted(dtype_name(e.optimizer_state_dtype)), "dtype of the optimizer state", {}},
      {S, "/execution/optimizer/stateLocation", "`\"on-chip\"`, `\"streaming-memory\"`", kOptional,
       quoted(e.optimizer_state_off_chip ? "streaming-memory" : "on-chip"),
       "where the state lives; `streaming-memory` needs the config's `streamingMemory` (see there)", {}},
      {S, "/execution/optimizer/replicatedTensorSharding", "boolean", kOptional, shown(e.replicated_tensor_sharding),
       "with replicas: each replica holds and updates 1/replicas of the state (its memory, streaming and update "
       "divided by the replicas); gradients are reduce-scattered and the updated weights all-gathered",
       {}},
      // ---- execution.executionPhaseSettings (PopART's ExecutionPhaseSettings)
      {S, "/execution/executionPhaseSettings/stages", "integer", kOptional, shown(phases.stages),
       "1: every phase on the same IPUs; 2: phases alternate between two sets of IPUs (ping-pong)",
       NumberRange{1, 2, kClosed, "", "scenario.bad-phase-settings",
                   "1: every phase on the same IPUs; 2: phases alternate between two sets of IPUs (PopART's default)"}},
      {S, "/execution/executionPhaseSettings/weightIOSchedule", phase_io, kOptional, quoted("Preload"),
       "when weights stream in from Streaming Memory: during the phase before their own, or just before it", {}},
      {S, "/execution/executionPhaseSettings/activationIOSchedule", phase_io, kOptional, quoted("Preload"),
       "likewise for activations kept between phases", {}},
      {S, "/execution/executionPhaseSettings/accumulatorIOSchedule", phase_io, kOptional, quoted("Preload"),
       "likewise for gradient accumulators", {}},
      {S, "/execution/executionPhaseSettings/serialiseMicroBatches", "boolean", kOptional,
       shown(phases.serialise_micro_batches),
       "each phase runs every micro-batch of the step before the next phase (PopXL's `batch_serialise`, as "
       "Graphcore's PopXL GPT-J, BERT and Llama examples run): weights load once a step; `false`: PopART's "
       "ExecutionPhases, every phase once per micro-batch",
       {}},
      {S, "/execution/batchSerializationSettings/factor", "integer", kOptional, "0 (off)",
       "slices of the micro-batch in each phase, dividing `microBatchSize` (`scenario.bad-batch-serialization`, also outside the phased mode)",
       NumberRange{0, 1e6, kClosed, "", nullptr, "slices of a micro-batch in each phase (phased mode); 0 or 1: off"}},
      // ---- execution.accumulateOuterFragmentSettings (PopART's AccumulateOuterFragmentSettings)
      {S, "/execution/accumulateOuterFragmentSettings/schedule",
       "`\"Serial\"`, `\"OverlapCycleOptimized\"`, `\"OverlapMemoryOptimized\"`", kOptional,
       quoted(weight_update_schedule_name(e.weight_update_schedule)),
       "Serial in virtual-graph order; OverlapCycleOptimized all at once; OverlapMemoryOptimized at once only for "
       "weights of shapes found on several IPUs, the rest one at a time (`scenario.bad-weight-update-schedule`)",
       {}},
      {S, "/execution/accumulateOuterFragmentSettings/excludedVirtualGraphs", "array of JSON integers", kOptional,
       "`[]`", "virtual graphs whose weights update alone, first", {}},
      {S, "/execution/accumulateOuterFragmentSettings/excludedVirtualGraphs/*", "integer", kOptional, "",
       "a virtual graph id", NumberRange{0, kMaxIpus - 1, kClosed, "", nullptr, "a virtual graph id"}},
  };
}

std::vector<Parameter> generation_parameters() {
  const Generation g{};
  const auto S = Format::Scenario;
  return {
      {S, "/generation/promptTokens", "integer", kRequired, "", "the prompt, read at once (prefill)",
       NumberRange{1, 1e7, kClosed, "tokens", nullptr, "the prompt read at once (prefill)"}},
      {S, "/generation/newTokens", "integer", kRequired, "", "tokens generated one at a time",
       NumberRange{1, 1e7, kClosed, "tokens", nullptr, "tokens generated one at a time"}},
      {S, "/generation/tokensPerRun", "integer", kOptional, shown(g.tokens_per_run),
       "tokens generated on the device per program run; 1 = a host round trip per token",
       NumberRange{1, 1e7, kClosed, "tokens", nullptr,
                   "tokens generated on the device per program run; 1 = a host round trip per token"}},
      {S, "/generation/kvCache", "`\"sram\"`, `\"streaming-memory\"`, `\"none\"`", kOptional,
       quoted(kv_cache_name(g.kv_cache)),
       "where the KV cache lives: beside the weights, in Streaming Memory (read back every token), or nowhere (every "
       "token recomputes the prefix); `scenario.bad-kv-cache`",
       {}},
      {S, "/generation/weightFormat", "`\"float16\"`, `\"int8\"`, `\"int4\"`", kOptional,
       quoted(weight_format_name(g.weight_format)),
       "how the linear layers' weights are stored: half precision, int8 with a scale per output column, or 4-bit "
       "groups with a scale and bias each (PopXL's group_quantise_weights); `scenario.bad-weight-format`",
       {}},
      {S, "/generation/groupSize", "integer", kOptional, shown(g.group_size),
       "`int4` only: weights sharing a scale and bias, a multiple of 4 (`scenario.bad-group-size`)",
       NumberRange{4, 65536, kClosed, "weights", nullptr, "int4: weights sharing a scale and bias, a multiple of 4"}},
  };
}

// The section a row is shown in: the longest section pointer that is a proper prefix.
const ParameterSection& section_of(const Parameter& row) {
  const ParameterSection* best = nullptr;
  for (const ParameterSection& s : parameter_sections())
    if (s.format == row.format && row.pointer.rfind(s.pointer + "/", 0) == 0 &&
        (best == nullptr || s.pointer.size() > best->pointer.size()))
      best = &s;
  return *best;  // "" is every format's top level
}

std::string type_cell(const Parameter& row) {
  if (!row.range) return row.type;
  std::string range = range_text({row.format, row.pointer.c_str(), row.range->min, row.range->max,
                                  row.range->lower, row.range->unit, row.range->rule, row.range->why});
  return row.type + " in " + range + (*row.range->unit ? std::string(" ") + row.range->unit : "");
}

} // namespace

const std::vector<Parameter>& parameters() {
  static const std::vector<Parameter> all = [] {
    std::vector<Parameter> out;
    for (auto* part : {&system_parameters, &ipu_parameters, &tile_architecture_parameters, &link_parameters,
                       &scenario_top_parameters, &execution_parameters, &execution_settings_parameters,
                       &generation_parameters})
      for (Parameter& p : part()) out.push_back(std::move(p));
    return out;
  }();
  return all;
}

const std::vector<ParameterSection>& parameter_sections() {
  static const std::vector<ParameterSection> all{
      {Format::Config, "", "top level"},
      {Format::Config, "/ipu", "`ipu`"},
      {Format::Config, "/ipu/tileArchitecture", "`ipu.tileArchitecture`"},
      {Format::Config, "/links/*", "`links[]`"},
      {Format::Config, "/hostLink", "`hostLink`"},
      {Format::Config, "/streamingMemory", "`streamingMemory`"},
      {Format::Scenario, "", "top level"},
      {Format::Scenario, "/execution", "`execution`"},
      {Format::Scenario, "/execution/optimizer", "`execution.optimizer`"},
      {Format::Scenario, "/execution/executionPhaseSettings", "`execution.executionPhaseSettings`"},
      {Format::Scenario, "/execution/batchSerializationSettings", "`execution.batchSerializationSettings`"},
      {Format::Scenario, "/execution/accumulateOuterFragmentSettings", "`execution.accumulateOuterFragmentSettings`"},
      {Format::Scenario, "/generation", "`generation`"},
  };
  return all;
}

const Parameter* find_parameter(Format format, const std::string& pointer) {
  for (const Parameter& p : parameters())
    if (p.format == format && pointer_pattern_matches(p.pointer, pointer)) return &p;
  return nullptr;
}

std::string parameters_markdown(const ParameterSection& section) {
  std::string out = "| key | type | required | default | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const Parameter& row : parameters()) {
    if (row.format != section.format || &section_of(row) != &section) continue;
    for (const std::string& cell : {"`" + row.pointer.substr(section.pointer.size() + 1) + "`", type_cell(row),
                                    std::string(row.required ? "yes" : "no"), row.default_text, row.meaning})
      out += cell.empty() ? "| " : "| " + cell + " ";
    out += "|\n";
  }
  return out;
}

std::string all_parameters_markdown() {
  std::string out;
  for (const ParameterSection& s : parameter_sections())
    out += "## " + format_name(s.format) + " " + (s.pointer.empty() ? "/" : s.pointer) + " (" + s.title + ")\n\n" +
           parameters_markdown(s) + "\n";
  return out;
}

} // namespace ipusim
