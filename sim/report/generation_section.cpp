// A generation document's section (`ipusim run --json` of a scenario with "generation",
// docs/generation.md): what was served, a finding per mode, tokens per second per mode as a
// chart, and the latencies, the decode floor and memory as a table.
#include <cctype>
#include <string>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/report/run_fields.hpp"
#include "sim/report/sections.hpp"

namespace ipusim::report {

namespace {

// "weights (floor 19.34 us)": what bounds a decode step at best.
std::string bound_text(const Json& run) {
  const Json* dequantise = field(run, "dequantiseBound");
  const Json* weights = field(run, "weightBound");
  const std::string by = dequantise && dequantise->is_boolean() && dequantise->get<bool>() ? "decompressing weights"
                         : weights && weights->is_boolean() && !weights->get<bool>()      ? "compute"
                                                                                           : "weights";
  return by + " (floor " + seconds(num(run, "decodeFloorSeconds")) + ")";
}

std::string fits_text(const Json& run) {
  const Json* fits = field(run, "fits");
  if (!fits || !fits->is_boolean()) return "-";
  return fits->get<bool>() ? "fits" : "does not fit";
}

std::string finding(const Json& g, const Json& run) {
  std::string mode = str(run, "mode");
  if (!mode.empty()) mode[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(mode[0])));
  return mode + ": the first token after " + seconds(num(run, "timeToFirstTokenSeconds")) +
         ", then " + seconds(num(run, "meanTokenLatencySeconds")) + " a token: " +
         format_rate(num(run, "decodeTokensPerSecond"), "tokens/s") + " per replica while decoding, " +
         format_rate(num(run, "tokensPerSecond"), "tokens/s") + " end to end over " + scalar_text(g.value("replicas", Json(1))) +
         " replica(s). A decode step is bound by " + bound_text(run) + "; at the last token the model " + fits_text(run) +
         " in memory.";
}

} // namespace

void generation_section(Builder& b, const Input& in, std::size_t number, const std::string& id) {
  const Json& g = object_at(in.doc, "generation");
  const std::string name = or_dash(str(g, "scenario"));
  b.open_section(id);
  b.heading(2, "Generation " + std::to_string(number) + ": " + name, "");
  std::string served = "On " + or_dash(str(g, "config")) + ", from " + in.source + ": a prompt of " +
                       scalar_text(g.value("promptTokens", Json("-"))) + " tokens, then " +
                       scalar_text(g.value("newTokens", Json("-"))) + " generated, " +
                       scalar_text(g.value("sequences", Json("-"))) + " sequence(s) per micro-batch; KV cache " +
                       or_dash(str(g, "kvCache")) + "; " + scalar_text(g.value("tokensPerRun", Json(1))) +
                       " token(s) per run on the device; weights " + str(g, "weightFormat", "float16") + ".";
  b.paragraph(served, "meta");
  std::vector<std::string> sentences;
  for (const Json& run : array_at(g, "runs")) sentences.push_back(finding(g, run));
  b.findings(sentences);

  chart::BarChart tokens;
  tokens.title = "Tokens per second, end to end: " + name;
  tokens.y_label = "tokens/s (the system)";
  for (const Json& run : array_at(g, "runs"))
    tokens.bars.push_back({str(run, "mode"), num(run, "tokensPerSecond", 0), mode_color(str(run, "mode")),
                           {format_rate(num(run, "tokensPerSecond", 0), "tokens/s")}});
  b.figure(name + "-tokens", tokens.title, chart::render(tokens),
           {"Generation " + std::to_string(number) + " (" + name + "), from " + in.source + "."});

  Table t;
  t.header.push_back("metric");
  for (const Json& run : array_at(g, "runs")) t.header.push_back(str(run, "mode"));
  const auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> cells{label};
    for (const Json& run : array_at(g, "runs")) cells.push_back(cell(run));
    t.rows.push_back(cells);
  };
  const auto time_row = [&](const std::string& label, const char* key) {
    row(label, [key](const Json& run) { return seconds(num(run, key)); });
  };
  const auto rate_row = [&](const std::string& label, const char* key) {
    row(label, [key](const Json& run) { return format_rate(num(run, key, 0), "tokens/s"); });
  };
  time_row("time to first token", "timeToFirstTokenSeconds");
  time_row("per-token latency (mean)", "meanTokenLatencySeconds");
  time_row("first decode step", "firstTokenLatencySeconds");
  time_row("last decode step", "lastTokenLatencySeconds");
  rate_row("decode tokens/s (replica)", "decodeTokensPerSecond");
  rate_row("end to end tokens/s (replica)", "tokensPerSecondPerReplica");
  rate_row("end to end tokens/s (system)", "tokensPerSecond");
  time_row("total", "totalSeconds");
  row("decode step bound by", bound_text);
  time_row("decompressing weights, a step", "dequantiseSeconds");
  time_row("reading the KV cache back, a step", "kvCacheReadSeconds");
  row("memory at the last token", fits_text);
  b.table(t, "Generation: " + name);
  b.close_section();
}

} // namespace ipusim::report
