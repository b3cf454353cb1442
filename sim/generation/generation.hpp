#pragma once
// Autoregressive inference (a scenario's "generation", docs/generation.md): the prompt's
// prefill, then one decode step per generated token, each simulated as a run of its own
// model (sim/io/decode_step.hpp) on the scenario's IPUs: time to first token, per-token
// latency, tokens per second, and memory with the KV cache.
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "sim/io/scenario.hpp"

namespace ipusim {

struct GenerationIpu {
  int id = 0;
  double weight_bytes = 0;            // held: the decode step's plan's, compressed by the weight format
  double decode_flops = 0;            // of one decode step of one group (microBatchSize sequences)
  double kv_cache_bytes = 0;          // at the last token's context, all its sequences
  double fullest_tile_bytes = 0;      // the decode step's fullest tile, with its share of the cache
  double tile_capacity_bytes = 0;
  bool fits = true;
  // One group's decode step on this IPU at best: its weights read once from SRAM (tiles x the
  // AMP's 16 B weight load per cycle, ampWeightLoadBytesPerCycle), phased streamed in from
  // Streaming Memory, against its FLOPs at peak.
  double weight_read_s = 0;
  double compute_s = 0;
  double dequantise_s = 0;            // decompressing its quantised weights, once per token pass
};

struct GenerationRun {
  Mode mode = Mode::Sharded;
  // Groups of microBatchSize sequences in flight: 1 sharded; pipelined, one per forward
  // stage (PopART's depth rule), each generating a token per step.
  std::int64_t groups = 1;
  double time_to_first_token_s = 0;   // the prompts' prefill (every group's), host round trip included
  double first_token_latency_s = 0;   // the first decode step (context prompt + 1)
  double last_token_latency_s = 0;    // the last (context prompt + new - 1)
  double mean_token_latency_s = 0;    // over the decode steps (affine in the context: their mean)
  double total_s = 0;                 // first token + every decode step
  double decode_tokens_per_s = 0;     // per replica: sequences / mean token latency
  double tokens_per_s_per_replica = 0;  // end to end: sequences x new tokens / total
  double tokens_per_s = 0;            // the system: x replicas
  double kv_cache_read_s = 0;         // streaming-memory cache: of the mean latency, reading it back
  double dequantise_s = 0;            // quantised weights: of every step (prefill and decode), decompressing them
  // A decode step at best: the sum over IPUs of max(weight reads, compute) (+ decompressing
  // quantised weights) sharded (they take a token in turn); pipelined, the busiest IPU's
  // times the groups.
  double decode_floor_s = 0;
  bool weight_bound = true;           // of reading weights and compute, the reads weigh more
  bool dequantise_bound = false;      // decompressing quantised weights weighs more than either
  bool fits = true;
  std::vector<GenerationIpu> ipus;
};

struct GenerationReport {
  Generation settings;
  std::int64_t sequences = 1;         // microBatchSize: sequences generated together
  int replicas = 1;
  std::int64_t model_sequence = 0;    // S of the model file
  double kv_cache_bytes_per_token = 0;  // one sequence, the whole model
  std::vector<GenerationRun> runs;    // one per mode
};

// Refuses (InputError) what a generation cannot run: training (scenario.generation-training),
// quantised weights phased (scenario.generation-mode), a model without attention or whose sequence
// cannot be told apart (sim/io/decode_step.hpp). simulate_generation checks it first; validate too.
void check_generation(const Scenario& scenario, const std::vector<Mode>& modes);

GenerationReport simulate_generation(const Scenario& scenario, const std::vector<Mode>& modes, std::ostream* notes);

} // namespace ipusim
