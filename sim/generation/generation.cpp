#include "sim/generation/generation.hpp"

#include <algorithm>
#include <memory>

#include "sim/cost/op_work.hpp"
#include "sim/generation/weight_quantisation.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/decode_step.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

namespace {

// The scenario running `model` (the whole model, before any tensor-parallel sharding) for
// inference, `groups` micro-batches per step: a prefill, or one decode step of each group.
Scenario with_model(const Scenario& base, Model model, std::int64_t groups) {
  Scenario s = base;
  s.generation.reset();
  s.execution.training = false;
  s.execution.gradient_accumulation = 1;
  s.execution.batches_per_step = groups;
  if (s.unsharded) {
    s.unsharded = std::make_shared<const Unsharded>(Unsharded{std::move(model), s.unsharded->hardware});
    apply_tensor_parallel(s);
  } else {
    s.model = std::move(model);
  }
  return s;
}

struct StepRun {
  Scenario scenario;
  Simulation sim;
  double seconds() const { return sim.runs.at(0).metrics.step_time_s; }
};

StepRun run_step(const Scenario& base, Model model, Mode mode, std::int64_t groups) {
  StepRun r{with_model(base, std::move(model), groups), {}};
  SimulateOptions options;
  options.keep_log = false;
  r.sim = simulate(r.scenario, {mode}, options);
  return r;
}

class Generator {
public:
  Generator(const Scenario& sc, Mode mode)
      : sc_(sc), mode_(mode), g_(*sc.generation),
        whole_(sc.unsharded ? sc.unsharded->model : sc.model),
        layout_(find_sequence_layout(whole_, sc.model.file)),
        groups_(mode == Mode::Pipelined ? std::max(1, build_graph(sc.model).stage_count) : 1) {}

  const SequenceLayout& layout() const { return layout_; }

  GenerationRun run() {
    GenerationRun r;
    r.mode = mode_;
    r.groups = groups_;
    const StepRun prefill = run_step(sc_, resequenced_model(whole_, layout_, g_.prompt_tokens), mode_, groups_);
    quantised_ = quantise_weights(prefill.scenario.model, g_, prefill.scenario.hardware.ipu, prefill.scenario.execution,
                                  sc_.file);
    r.dequantise_s = dequantise_step_seconds();
    r.time_to_first_token_s = prefill.seconds() + r.dequantise_s;
    r.total_s = r.time_to_first_token_s;
    const std::int64_t first = g_.prompt_tokens + 1, last = g_.prompt_tokens + g_.new_tokens - 1;
    if (g_.new_tokens >= 2) {
      const StepRun at_first = decode(first);
      const StepRun at_last = last == first ? at_first : decode(last);
      r.first_token_latency_s = token_latency(at_first, first);
      r.last_token_latency_s = token_latency(at_last, last);
      r.mean_token_latency_s = (r.first_token_latency_s + r.last_token_latency_s) / 2;
      r.kv_cache_read_s = (kv_read_seconds(first) + kv_read_seconds(last)) / 2;
      r.total_s += static_cast<double>(g_.new_tokens - 1) * r.mean_token_latency_s;
      r.decode_tokens_per_s = sequences() / r.mean_token_latency_s;
      account_ipus(r, at_last, last);
    }
    r.tokens_per_s_per_replica = sequences() * static_cast<double>(g_.new_tokens) / r.total_s;
    r.tokens_per_s = r.tokens_per_s_per_replica * static_cast<double>(sc_.execution.replicas);
    return r;
  }

private:
  // Sequences generated at once per replica: a micro-batch per group in flight.
  double sequences() const { return static_cast<double>(sc_.execution.micro_batch_size * groups_); }

  StepRun decode(std::int64_t context) const {
    Model m = g_.kv_cache == KvCache::None ? resequenced_model(whole_, layout_, context)
                                           : decode_step_model(whole_, layout_, context);
    return run_step(sc_, std::move(m), mode_, groups_);
  }

  // A decode step's run, the host's turn shared by the tokens of one device loop, and the
  // cache read back from Streaming Memory where it lives there.
  double token_latency(const StepRun& step, std::int64_t context) const {
    const double turn = sc_.hardware.host_link.run_overhead_s;
    const double per_run = turn / static_cast<double>(g_.tokens_per_run);
    return step.seconds() - turn + per_run + kv_read_seconds(context) + dequantise_step_seconds();
  }

  // Decompressing quantised weights in one step: sharded, the IPUs take a token in turn, each
  // decompressing its weights; pipelined, every IPU decompresses them for each group's token,
  // at once, so the step grows by at most the slowest IPU's share (an upper bound: the engine
  // does not run the decompression).
  double dequantise_step_seconds() const {
    double sum = 0, most = 0;
    for (const auto& [ipu, q] : quantised_) sum += q.dequantise_s, most = std::max(most, q.dequantise_s);
    return mode_ == Mode::Pipelined ? most * static_cast<double>(groups_) : sum;
  }

  double kv_bytes(int ipu, std::int64_t context) const {
    const auto it = layout_.cache_elements_per_token_by_ipu.find(ipu);
    if (it == layout_.cache_elements_per_token_by_ipu.end()) return 0;
    return it->second * static_cast<double>(context) * static_cast<double>(dtype_bytes(layout_.cache_dtype)) *
           sequences() / static_cast<double>(sc_.execution.tensor_parallel);
  }

  // The IPUs read their layers' caches in turn (one token's pass visits them one after another).
  double kv_read_seconds(std::int64_t context) const {
    if (g_.kv_cache != KvCache::StreamingMemory) return 0;
    const auto& memory = sc_.hardware.streaming_memory;
    double s = 0;
    for (const auto& [ipu, elements] : layout_.cache_elements_per_token_by_ipu)
      s += memory.latency_s + kv_bytes(ipu, context) / memory.bandwidth_bytes_per_s;
    return s;
  }

  void account_ipus(GenerationRun& r, const StepRun& step, std::int64_t context) const {
    const IpuSpec& ipu = step.scenario.hardware.ipu;
    // Resident weights are read from SRAM by the AMP; phased, every phase streams its weights
    // in from Streaming Memory at the IPU's share of its bandwidth, every step.
    const double weight_read_rate =
        mode_ == Mode::Phased ? step.scenario.hardware.streaming_memory.bandwidth_bytes_per_s
                              : static_cast<double>(ipu.tiles) * ipu.tile.amp_weight_load_bytes_per_cycle * ipu.clock_hz;
    std::map<int, double> flops;
    const Model& m = step.scenario.model;
    for (const Op& op : m.ops)
      flops[static_cast<int>(op.virtual_graph.value_or(0))] +=
          op.flops.value_or(derived_flops_per_sample(m, op)) * static_cast<double>(sc_.execution.micro_batch_size);
    const auto& memory = step.sim.runs.at(0).metrics.memory;
    double busiest_term = 0, dequantise = 0;  // summed over the IPUs
    for (const PlanIpu& p : step.sim.plan.ipus) {
      GenerationIpu g;
      g.id = p.id;
      const auto q = quantised_.find(p.id);
      const QuantisedIpu quantised = q == quantised_.end() ? QuantisedIpu{} : q->second;
      g.weight_bytes = p.weight_bytes - quantised.float16_bytes + quantised.stored_bytes;
      g.dequantise_s = quantised.dequantise_s;
      g.decode_flops = flops[p.id];
      g.kv_cache_bytes = g_.kv_cache == KvCache::Sram ? kv_bytes(p.id, context) : 0;
      for (const IpuMemory& im : memory.ipus)
        if (im.id == p.id) {
          g.tile_capacity_bytes = im.tile_capacity_bytes;
          // The compressed weights spread over the tiles as the float16 ones were, and the
          // largest decompressed weight lives while its matmul runs.
          g.fullest_tile_bytes = im.fullest_tile_bytes + (g.kv_cache_bytes + quantised.stored_bytes -
                                                          quantised.float16_bytes + quantised.largest_float16_bytes) /
                                                             static_cast<double>(ipu.tiles);
        }
      g.fits = g.fullest_tile_bytes <= g.tile_capacity_bytes;
      g.weight_read_s = p.weight_bytes / weight_read_rate;  // the AMP reads them in float16
      g.compute_s = g.decode_flops / (static_cast<double>(ipu.tiles) *
                                      ipu.flops_per_cycle_per_tile(layout_.cache_dtype) * ipu.clock_hz);
      // Sharded, the IPUs take a token in turn; pipelined, the busiest one takes every group's.
      const double floor = std::max(g.weight_read_s, g.compute_s) + g.dequantise_s;
      if (mode_ == Mode::Pipelined) r.decode_floor_s = std::max(r.decode_floor_s, floor * static_cast<double>(groups_));
      else r.decode_floor_s += floor;
      r.weight_bound = r.weight_bound && g.weight_read_s >= g.compute_s;
      busiest_term += std::max(g.weight_read_s, g.compute_s);
      dequantise += g.dequantise_s;
      r.fits = r.fits && g.fits;
      r.ipus.push_back(g);
    }
    r.dequantise_bound = dequantise > busiest_term;
  }

  const Scenario& sc_;
  Mode mode_;
  Generation g_;
  Model whole_;
  SequenceLayout layout_;
  std::int64_t groups_;
  std::map<int, QuantisedIpu> quantised_;  // per IPU; empty for float16 weights
};

} // namespace

void check_generation(const Scenario& sc, const std::vector<Mode>& modes) {
  if (sc.execution.training)
    throw InputError(sc.file, "/execution/training", "scenario.generation-training",
                     "generation is inference: remove execution.training (or the generation block to train)");
  // Phased, the engine streams every phase's weights in float16; compressed streams are not
  // modelled, and decompressing beside them would make a figure that is neither.
  for (Mode mode : modes)
    if (mode == Mode::Phased && sc.generation->weight_format != WeightFormat::Float16)
      throw InputError(sc.file, "/generation/weightFormat", "scenario.generation-mode",
                       "phased generation streams its weights in float16; quantised weights (" +
                           weight_format_name(sc.generation->weight_format) +
                           ") are modelled resident only: give --mode sharded or pipelined, or weightFormat float16");
  find_sequence_layout(sc.unsharded ? sc.unsharded->model : sc.model, sc.model.file);
  quantise_weights(sc.model, *sc.generation, sc.hardware.ipu, sc.execution, sc.file);  // an int4 group that does not tile
}

GenerationReport simulate_generation(const Scenario& sc, const std::vector<Mode>& modes, std::ostream* notes) {
  check_generation(sc, modes);
  GenerationReport report;
  report.settings = *sc.generation;
  report.sequences = sc.execution.micro_batch_size;
  report.replicas = static_cast<int>(sc.execution.replicas);
  for (Mode mode : modes) {
    Generator generator(sc, mode);
    report.model_sequence = generator.layout().sequence;
    report.kv_cache_bytes_per_token = 0;
    for (const auto& [ipu, elements] : generator.layout().cache_elements_per_token_by_ipu)
      report.kv_cache_bytes_per_token += elements * static_cast<double>(dtype_bytes(generator.layout().cache_dtype));
    report.runs.push_back(generator.run());
  }
  if (notes != nullptr) say_import_warnings(sc.model, *notes);
  return report;
}

} // namespace ipusim
