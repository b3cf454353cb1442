#include "sim/generation/generation_output.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "sim/base/units.hpp"

namespace ipusim {

namespace {

std::string cache_text(const GenerationReport& r) {
  const std::string per_token = format_bytes(r.kv_cache_bytes_per_token) + " per token per sequence";
  switch (r.settings.kv_cache) {
  case KvCache::Sram: return "KV cache in SRAM (" + per_token + ")";
  case KvCache::StreamingMemory: return "KV cache in Streaming Memory, read back every token (" + per_token + ")";
  case KvCache::None: return "no KV cache: every token recomputes the whole prefix";
  }
  return "";
}

// A label and one cell per mode, each column as wide as its widest cell.
std::string row(const std::string& label, const std::vector<std::string>& cells, std::size_t width) {
  std::string text = "  " + label + std::string(label.size() < 28 ? 28 - label.size() : 1, ' ');
  for (const auto& c : cells) text += c + std::string(c.size() < width ? width - c.size() : 0, ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text + "\n";
}

template <typename F>
std::vector<std::string> cells(const GenerationReport& r, F f) {
  std::vector<std::string> c;
  for (const GenerationRun& run : r.runs) c.push_back(f(run));
  return c;
}

// The fullest IPU, as "fits" or what does not.
std::string memory_text(const GenerationRun& run) {
  const GenerationIpu* worst = nullptr;
  for (const GenerationIpu& ipu : run.ipus)
    if (ipu.tile_capacity_bytes > 0 &&
        (!worst || ipu.fullest_tile_bytes / ipu.tile_capacity_bytes > worst->fullest_tile_bytes / worst->tile_capacity_bytes))
      worst = &ipu;
  if (!worst) return "-";
  return std::string(run.fits ? "fits" : "DOES NOT FIT") + ": IPU " + std::to_string(worst->id) + " " +
         format_percent(worst->fullest_tile_bytes / worst->tile_capacity_bytes);
}

using Rows = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The table's rows: a label and a cell per mode.
Rows table_rows(const GenerationReport& r) {
  Rows rows;
  rows.push_back({"", cells(r, [](const GenerationRun& run) { return mode_name(run.mode); })});
  rows.push_back({"Micro-batches in flight", cells(r, [](const GenerationRun& run) { return std::to_string(run.groups); })});
  rows.push_back({"Time to first token", cells(r, [](const GenerationRun& run) { return format_seconds(run.time_to_first_token_s); })});
  rows.push_back({"Per-token latency (mean)", cells(r, [](const GenerationRun& run) { return format_seconds(run.mean_token_latency_s); })});
  rows.push_back({"  first / last", cells(r, [](const GenerationRun& run) {
               return format_seconds(run.first_token_latency_s) + " / " + format_seconds(run.last_token_latency_s);
             })});
  rows.push_back({"Decode tokens/s (replica)", cells(r, [](const GenerationRun& run) { return format_rate(run.decode_tokens_per_s, "tokens/s"); })});
  rows.push_back({"End to end tokens/s", cells(r, [](const GenerationRun& run) { return format_rate(run.tokens_per_s_per_replica, "tokens/s"); })});
  rows.push_back({"  the system", cells(r, [](const GenerationRun& run) { return format_rate(run.tokens_per_s, "tokens/s"); })});
  rows.push_back({"Total", cells(r, [](const GenerationRun& run) { return format_seconds(run.total_s); })});
  rows.push_back({"Decode floor", cells(r, [](const GenerationRun& run) {
               return format_seconds(run.decode_floor_s) +
                      (run.dequantise_bound ? " (decompression)" : run.weight_bound ? " (weights)" : " (compute)");
             })});
  if (r.settings.weight_format != WeightFormat::Float16)
    rows.push_back({"  decompressing weights", cells(r, [](const GenerationRun& run) {
                      return format_seconds(run.dequantise_s) + " a step";
                    })});
  rows.push_back({"Memory (decode, last token)", cells(r, memory_text)});
  return rows;
}

} // namespace

std::string render_generation_table(const Scenario& sc, const GenerationReport& r) {
  const Generation& g = r.settings;
  std::ostringstream out;
  out << sc.name << ": generation on " << sc.hardware.name << "\n";
  out << "  prompt " << g.prompt_tokens << " tokens, " << g.new_tokens << " new, " << r.sequences
      << " sequence(s) per micro-batch (pipelined: a micro-batch per stage in flight) x " << r.replicas
      << " replica(s); " << cache_text(r) << "; "
      << (g.tokens_per_run == 1 ? std::string("a host round trip per token")
                                : std::to_string(g.tokens_per_run) + " tokens per run on the device");
  if (g.weight_format != WeightFormat::Float16)
    out << "; linear layers' weights in " << weight_format_name(g.weight_format)
        << (g.weight_format == WeightFormat::Int4 ? " (groups of " + std::to_string(g.group_size) + ")" : "")
        << ", decompressed to float16 before each matmul";
  out << "\n\n";
  const auto rows = table_rows(r);
  std::size_t width = 0;
  for (const auto& [label, row_cells] : rows)
    for (const auto& c : row_cells) width = std::max(width, c.size() + 3);
  for (const auto& [label, row_cells] : rows) out << row(label, row_cells, width);
  if (!r.runs.empty() && !r.runs.front().ipus.empty()) {
    const GenerationRun& run = r.runs.front();
    double weights = 0, cache = 0, reads = 0, compute = 0;
    for (const GenerationIpu& ipu : run.ipus)
      weights += ipu.weight_bytes, cache += ipu.kv_cache_bytes, reads += ipu.weight_read_s, compute += ipu.compute_s;
    const std::int64_t t = sc.execution.tensor_parallel;
    const std::string where = t > 1                         ? " on each IPU of a tensor-parallel group of " + std::to_string(t)
                              : run.mode == Mode::Pipelined ? " summed over the IPUs (the busiest takes every micro-batch's)"
                                                            : " over the IPUs in turn";
    const bool quantised = r.settings.weight_format != WeightFormat::Float16;
    out << "\nWhy (" << mode_name(run.mode) << "): a decode step reads every weight once per micro-batch of "
        << r.sequences << " sequence(s): " << format_bytes(weights) << " of weights"
        << (quantised ? " (held in " + weight_format_name(r.settings.weight_format) + ", decompressed in " +
                            format_seconds(run.dequantise_s) + " a step)"
                      : "")
        << (run.mode == Mode::Phased ? " streamed in from Streaming Memory take " : " read from SRAM take ")
        << format_seconds(reads) << where << ", their FLOPs " << format_seconds(compute)
        << " at peak, so the step is bound by "
        << (run.dequantise_bound ? "decompressing its weights" : run.weight_bound ? "weight bandwidth" : "compute")
        << " (floor " << format_seconds(run.decode_floor_s)
        << "); the simulated step, " << format_seconds(run.mean_token_latency_s)
        << ", adds each op's exchange and sync, the copies and collectives between IPUs and the host's turn. KV "
           "cache in SRAM at the last token: "
        << format_bytes(cache) << (t > 1 ? " per IPU" : "") << ".\n";
  }
  return out.str();
}

nlohmann::json generation_json(const Scenario& sc, const GenerationReport& r) {
  nlohmann::json runs = nlohmann::json::array();
  for (const GenerationRun& run : r.runs) {
    nlohmann::json ipus = nlohmann::json::array();
    for (const GenerationIpu& ipu : run.ipus)
      ipus.push_back({{"ipu", ipu.id},
                      {"weightBytes", ipu.weight_bytes},
                      {"decodeFlops", ipu.decode_flops},
                      {"kvCacheBytes", ipu.kv_cache_bytes},
                      {"fullestTileBytes", ipu.fullest_tile_bytes},
                      {"tileCapacityBytes", ipu.tile_capacity_bytes},
                      {"fits", ipu.fits},
                      {"weightReadSeconds", ipu.weight_read_s},
                      {"computeSeconds", ipu.compute_s},
                      {"dequantiseSeconds", ipu.dequantise_s}});
    runs.push_back({{"mode", mode_name(run.mode)},
                    {"timeToFirstTokenSeconds", run.time_to_first_token_s},
                    {"firstTokenLatencySeconds", run.first_token_latency_s},
                    {"lastTokenLatencySeconds", run.last_token_latency_s},
                    {"meanTokenLatencySeconds", run.mean_token_latency_s},
                    {"kvCacheReadSeconds", run.kv_cache_read_s},
                    {"dequantiseSeconds", run.dequantise_s},
                    {"totalSeconds", run.total_s},
                    {"decodeTokensPerSecond", run.decode_tokens_per_s},
                    {"tokensPerSecondPerReplica", run.tokens_per_s_per_replica},
                    {"tokensPerSecond", run.tokens_per_s},
                    {"decodeFloorSeconds", run.decode_floor_s},
                    {"weightBound", run.weight_bound},
                    {"dequantiseBound", run.dequantise_bound},
                    {"fits", run.fits},
                    {"ipus", ipus}});
  }
  return {{"scenario", sc.name},
          {"config", sc.hardware.name},
          {"promptTokens", r.settings.prompt_tokens},
          {"newTokens", r.settings.new_tokens},
          {"kvCache", kv_cache_name(r.settings.kv_cache)},
          {"tokensPerRun", r.settings.tokens_per_run},
          {"weightFormat", weight_format_name(r.settings.weight_format)},
          {"groupSize", r.settings.weight_format == WeightFormat::Int4 ? nlohmann::json(r.settings.group_size)
                                                                       : nlohmann::json(nullptr)},
          {"sequences", r.sequences},
          {"replicas", r.replicas},
          {"modelSequence", r.model_sequence},
          {"kvCacheBytesPerToken", r.kv_cache_bytes_per_token},
          {"runs", runs}};
}

} // namespace ipusim
