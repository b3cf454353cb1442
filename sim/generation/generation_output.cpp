#include "sim/generation/generation_output.hpp"

#include <sstream>

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

std::string row(const std::string& label, const std::vector<std::string>& cells) {
  std::ostringstream out;
  out << "  " << label;
  for (std::size_t i = label.size(); i < 28; ++i) out << ' ';
  for (const auto& c : cells) {
    out << c;
    for (std::size_t i = c.size(); i < 24; ++i) out << ' ';
  }
  std::string text = out.str();
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
    if (!worst || ipu.fullest_tile_bytes / ipu.tile_capacity_bytes > worst->fullest_tile_bytes / worst->tile_capacity_bytes)
      worst = &ipu;
  if (!worst) return "-";
  return std::string(run.fits ? "fits" : "DOES NOT FIT") + ": IPU " + std::to_string(worst->id) + " " +
         format_percent(worst->fullest_tile_bytes / worst->tile_capacity_bytes);
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
                                : std::to_string(g.tokens_per_run) + " tokens per run on the device")
      << "\n\n";
  out << row("", cells(r, [](const GenerationRun& run) { return mode_name(run.mode); }));
  out << row("Micro-batches in flight", cells(r, [](const GenerationRun& run) { return std::to_string(run.groups); }));
  out << row("Time to first token", cells(r, [](const GenerationRun& run) { return format_seconds(run.time_to_first_token_s); }));
  out << row("Per-token latency (mean)", cells(r, [](const GenerationRun& run) { return format_seconds(run.mean_token_latency_s); }));
  out << row("  first / last", cells(r, [](const GenerationRun& run) {
               return format_seconds(run.first_token_latency_s) + " / " + format_seconds(run.last_token_latency_s);
             }));
  out << row("Decode tokens/s (replica)", cells(r, [](const GenerationRun& run) { return format_rate(run.decode_tokens_per_s, "tokens/s"); }));
  out << row("End to end tokens/s", cells(r, [](const GenerationRun& run) { return format_rate(run.tokens_per_s_per_replica, "tokens/s"); }));
  out << row("  the system", cells(r, [](const GenerationRun& run) { return format_rate(run.tokens_per_s, "tokens/s"); }));
  out << row("Total", cells(r, [](const GenerationRun& run) { return format_seconds(run.total_s); }));
  out << row("Decode floor", cells(r, [](const GenerationRun& run) {
               return format_seconds(run.decode_floor_s) + (run.weight_bound ? " (weights)" : " (compute)");
             }));
  out << row("Memory (decode, last token)", cells(r, memory_text));
  if (!r.runs.empty() && !r.runs.front().ipus.empty()) {
    const GenerationRun& run = r.runs.front();
    double weights = 0, cache = 0, reads = 0, compute = 0;
    for (const GenerationIpu& ipu : run.ipus)
      weights += ipu.weight_bytes, cache += ipu.kv_cache_bytes, reads += ipu.weight_read_s, compute += ipu.compute_s;
    out << "\nWhy (" << mode_name(run.mode) << "): a decode step reads every weight once per micro-batch of "
        << r.sequences << " sequence(s): " << format_bytes(weights) << " of weights read from SRAM take "
        << format_seconds(reads) << " over the IPUs, their FLOPs " << format_seconds(compute)
        << " at peak, so the step is bound by "
        << (run.weight_bound ? "weight bandwidth" : "compute") << " (floor " << format_seconds(run.decode_floor_s)
        << "); the simulated step, " << format_seconds(run.mean_token_latency_s)
        << ", adds each op's exchange and sync, the copies between IPUs and the host's turn. KV cache in SRAM at the "
           "last token: "
        << format_bytes(cache) << ".\n";
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
                      {"computeSeconds", ipu.compute_s}});
    runs.push_back({{"mode", mode_name(run.mode)},
                    {"timeToFirstTokenSeconds", run.time_to_first_token_s},
                    {"firstTokenLatencySeconds", run.first_token_latency_s},
                    {"lastTokenLatencySeconds", run.last_token_latency_s},
                    {"meanTokenLatencySeconds", run.mean_token_latency_s},
                    {"kvCacheReadSeconds", run.kv_cache_read_s},
                    {"totalSeconds", run.total_s},
                    {"decodeTokensPerSecond", run.decode_tokens_per_s},
                    {"tokensPerSecondPerReplica", run.tokens_per_s_per_replica},
                    {"tokensPerSecond", run.tokens_per_s},
                    {"decodeFloorSeconds", run.decode_floor_s},
                    {"weightBound", run.weight_bound},
                    {"fits", run.fits},
                    {"ipus", ipus}});
  }
  return {{"scenario", sc.name},
          {"config", sc.hardware.name},
          {"promptTokens", r.settings.prompt_tokens},
          {"newTokens", r.settings.new_tokens},
          {"kvCache", kv_cache_name(r.settings.kv_cache)},
          {"tokensPerRun", r.settings.tokens_per_run},
          {"sequences", r.sequences},
          {"replicas", r.replicas},
          {"modelSequence", r.model_sequence},
          {"kvCacheBytesPerToken", r.kv_cache_bytes_per_token},
          {"runs", runs}};
}

} // namespace ipusim
