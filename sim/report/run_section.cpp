#include "sim/report/sections.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/report/findings.hpp"
#include "sim/report/page.hpp"
#include "sim/report/run_fields.hpp"
#include "sim/report/svg_chart.hpp"

namespace ipusim::report {

std::vector<std::string> run_caption(const Json& doc, const std::string& source) {
  std::string scenario = or_dash(str(doc, "scenario"));
  const std::string file = str(doc, "scenarioFile");
  if (!file.empty()) scenario += " (" + file + ")";
  std::string model = or_dash(str(doc, "model")), config = or_dash(str(doc, "config"));
  if (!str(doc, "modelFile").empty()) model += " (" + str(doc, "modelFile") + ", " + or_dash(str(doc, "modelHash")) + ")";
  if (!str(doc, "configFile").empty())
    config += " (" + str(doc, "configFile") + ", " + or_dash(str(doc, "configHash")) + ")";
  std::string rerun;
  if (doc.contains("commandLine") && doc.at("commandLine").is_array()) {
    for (const Json& a : doc.at("commandLine"))
      if (a.is_string()) rerun += (rerun.empty() ? "" : " ") + a.get<std::string>();
    rerun = " Command: " + rerun + (str(doc, "ipusimVersion").empty() ? "" : " (ipusim " + str(doc, "ipusimVersion") + ")") + ".";
  }
  return {"Scenario: " + scenario + "; model: " + model + "; config: " + config + "." + rerun,
          "Execution: " + execution_text(object_at(doc, "execution")) + ". Source: " + source + "."};
}

std::string summary_row_name(const Input& in) {
  std::string scenario = str(in.doc, "scenario");
  if (scenario.empty()) return in.source;
  // Runs of one scenario with different --set flags are told apart by them;
  // a renaming one already shows in the scenario's name.
  if (in.doc.contains("overrides") && in.doc.at("overrides").is_array()) {
    std::string sets;
    for (const Json& s : in.doc.at("overrides"))
      if (s.is_string() && s.get<std::string>().rfind("name=", 0) != 0)
        sets += (sets.empty() ? "" : ", ") + s.get<std::string>();
    if (!sets.empty()) scenario += " [" + sets + "]";
  }
  return scenario;
}

namespace {

// ----------------------------------------------------------- runs

// The colour of a part of a step: that of the trace category it shows as
// (compute, host-io, ..., idle-fill-flush).
// "IPU 4", or under tensor parallelism the group the engine's IPU stands for, "IPUs 4-7"
// (runs[].ipus[].tensorParallelIpus).
std::string ipu_label(const std::vector<const Json*>& runs, std::int64_t id) {
  for (const Json* r : runs)
    for (const Json& m : array_at(*r, "ipus"))
      if (integer(m, "id") == id && m.contains("tensorParallelIpus") && m.at("tensorParallelIpus").is_array() &&
          !m.at("tensorParallelIpus").empty() && m.at("tensorParallelIpus").back().is_number_integer())
        return "IPUs " + std::to_string(id) + "-" + std::to_string(m.at("tensorParallelIpus").back().get<std::int64_t>());
  return "IPU " + std::to_string(id);
}

std::string part_color(const TimePart& part) {
  std::string category;  // idleFillFlush -> idle-fill-flush
  for (char c : part.key) {
    if (c >= 'A' && c <= 'Z') {
      category += '-';
      c = static_cast<char>(c - 'A' + 'a');
    }
    category += c;
  }
  return chart::category_color(category);
}

// Where the step time goes: per mode one bar for all IPUs (runs[].timeShares) and one
// per IPU (its seconds over the step time), stacked by part. Empty without timeShares.
std::optional<chart::StackedBarChart> time_breakdown_chart(const std::string& name,
                                                           const std::vector<const Json*>& runs) {
  chart::StackedBarChart c;
  c.title = "Where the step time goes (share of IPU time, idle by cause): " + name;
  c.y_label = "share of the step";
  c.y_format = percent_tick;
  c.value_format = [](double v) { return format_fixed(v * 100, 1) + "%"; };
  c.frame.width = 1200;
  c.frame.bottom = 96;  // slanted bar labels
  for (const TimePart& part : time_parts()) c.parts.push_back({part.name, part_color(part), {}});
  for (const Json* r : runs) {
    if (!field(*r, "timeShares")) continue;
    c.bars.push_back(mode_label(*r) + ": all IPUs");
    for (std::size_t k = 0; k < time_parts().size(); ++k) c.parts[k].values.push_back(time_share(*r, time_parts()[k]));
    const double step = num(*r, "stepTimeSeconds");
    for (const Json& m : array_at(*r, "ipus")) {
      if (!field(m, "idle") || !(step > 0)) continue;
      c.bars.push_back(mode_label(*r) + ": IPU " + std::to_string(integer(m, "id")));
      for (std::size_t k = 0; k < time_parts().size(); ++k)
        c.parts[k].values.push_back(ipu_seconds(m, time_parts()[k]) / step);
    }
  }
  if (c.bars.empty()) return std::nullopt;
  // Parts that are nowhere above zero stay out of the legend.
  std::erase_if(c.parts, [](const chart::StackPart& p) {
    return std::none_of(p.values.begin(), p.values.end(), [](double v) { return v > 0; });
  });
  return c;
}

// The memory verdict is per tile: each IPU's fullest tile against one tile's SRAM.
std::optional<chart::GroupedBarChart> fullest_tile_chart(const std::string& name, const std::vector<const Json*>& runs) {
  chart::GroupedBarChart c;
  c.title = "Fullest tile per virtual IPU against a tile's memory (the fit verdict): " + name;
  c.y_label = "fullest tile (KiB)";
  c.value_format = [](double v) { return format_fixed(v, v >= 100 ? 0 : 1); };
  std::vector<std::int64_t> ids;
  for (const Json* r : runs)
    for (const Json& m : array_at(object_at(*r, "memory"), "ipus"))
      if (std::isfinite(num(m, "fullestTileBytes")) && std::find(ids.begin(), ids.end(), integer(m, "virtualIpu")) == ids.end())
        ids.push_back(integer(m, "virtualIpu"));
  if (ids.empty()) return std::nullopt;
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) c.categories.push_back("vIPU " + std::to_string(id));
  c.markers.resize(ids.size());
  for (const Json* r : runs) {
    chart::BarSeries s{mode_label(*r), mode_color(str(*r, "mode")), std::vector<double>(ids.size(), kNaN)};
    bool any = false;
    for (const Json& m : array_at(object_at(*r, "memory"), "ipus")) {
      const auto pos = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), integer(m, "virtualIpu")) - ids.begin());
      if (pos >= ids.size()) continue;
      s.values[pos] = num(m, "fullestTileBytes") / 1024;
      any = true;
      if (const double cap = num(m, "tileCapacityBytes"); cap > 0 && !c.markers[pos])
        c.markers[pos] = chart::GroupMarker{cap / 1024, "tile memory " + format_bytes(cap)};
    }
    if (any) c.series.push_back(s);
  }
  return c;
}

// What the parts of one run's section share: the run document and its runs in order, the
// name the run goes by, the stem of its figure files and the caption under its figures.
struct RunView {
  const Json& doc;
  std::vector<const Json*> runs;
  std::string name;
  std::string file_stem;
  std::vector<std::string> caption;
};

// The section's heading, where the run came from and the model's size.
void run_heading(Builder& b, const Input& in, std::size_t number, const std::string& name) {
  const Json& doc = in.doc;
  b.heading(2, "Run " + std::to_string(number) + ": " + name, "");
  b.paragraph("Model " + or_dash(str(doc, "model")) + " on " + or_dash(str(doc, "config")) + ", from " + in.source +
                  ".",
              "meta");
  for (const std::string& line : run_caption(doc, in.source)) b.paragraph(line, "meta");
  if (const Json& model = object_at(doc, "modelFigures"); std::isfinite(num(model, "parameters"))) {
    std::string line = "Model: " + format_count(num(model, "parameters")) + " parameters, " +
                       format_count(num(model, "modelFlopsPerSample")) + " model FLOPs per sample";
    if (std::isfinite(num(model, "tokensPerSample")))
      line += ", " + scalar_text(*field(model, "tokensPerSample")) + " tokens per sample";
    b.paragraph(line + ".", "meta");
  }
}

// (a) throughput, sharded against pipelined.
void throughput_figure(Builder& b, const RunView& run) {
  const double speedup = speedup_of(run.doc);
  chart::BarChart throughput;
  throughput.title = "Throughput: " + run.name;
  throughput.y_label = "throughput (samples/s)";
  for (const Json* r : run.runs) {
    chart::Bar bar{mode_label(*r), num(*r, "throughputSamplesPerSecond", 0), mode_color(str(*r, "mode")),
                   {rate(num(*r, "throughputSamplesPerSecond"))}};
    if (str(*r, "mode") == "pipelined" && std::isfinite(speedup))
      bar.notes.push_back("speed-up " + format_fixed(speedup, 2) + "x");
    throughput.bars.push_back(bar);
  }
  b.figure(run.file_stem + "-throughput", throughput.title +
                                          (std::isfinite(speedup) ? " (pipelined/sharded speed-up " +
                                                                        format_fixed(speedup, 2) + "x)"
                                                                  : ""),
           chart::render(throughput), run.caption);
}

// (b) a document of `run --schedules`: bubble against stash per schedule, and the refused.
void schedule_figures(Builder& b, const RunView& run) {
  if (const auto schedules = schedule_memory_chart(run.name, run.runs))
    b.figure(run.file_stem + "-schedules", schedules->title, chart::render(*schedules), run.caption);
  for (const Json& f : array_at(run.doc, "schedulesRefused"))
    b.paragraph("Schedule " + str(f, "schedule") + " refused [" + str(f, "rule") + "]: " + str(f, "message"), "note");
}

// The ids of the IPUs of every run, ascending.
std::vector<std::int64_t> ipu_ids_of(const std::vector<const Json*>& runs) {
  std::vector<std::int64_t> ipu_ids;
  for (const Json* r : runs)
    for (const Json& m : array_at(*r, "ipus"))
      if (auto idv = integer(m, "id"); std::find(ipu_ids.begin(), ipu_ids.end(), idv) == ipu_ids.end())
        ipu_ids.push_back(idv);
  std::sort(ipu_ids.begin(), ipu_ids.end());
  return ipu_ids;
}

// (c) utilisation per IPU, one bar per mode; then where the step time goes.
void utilisation_figures(Builder& b, const RunView& run, const std::vector<std::int64_t>& ipu_ids) {
  chart::GroupedBarChart util;
  util.title = "Utilisation per IPU: " + run.name;
  util.y_label = "utilisation (busy / step time)";
  util.y_format = percent_tick;
  util.value_format = [](double v) { return format_fixed(v * 100, 1) + "%"; };
  for (auto idv : ipu_ids) util.categories.push_back(ipu_label(run.runs, idv));
  for (const Json* r : run.runs) {
    chart::BarSeries s{mode_label(*r), mode_color(str(*r, "mode")), std::vector<double>(ipu_ids.size(), kNaN)};
    for (const Json& m : array_at(*r, "ipus")) {
      const auto pos = std::find(ipu_ids.begin(), ipu_ids.end(), integer(m, "id")) - ipu_ids.begin();
      s.values[static_cast<std::size_t>(pos)] = num(m, "utilization");
    }
    util.series.push_back(s);
  }
  b.figure(run.file_stem + "-utilisation", util.title, chart::render(util), run.caption);
  if (const auto breakdown = time_breakdown_chart(run.name, run.runs))
    b.figure(run.file_stem + "-time-breakdown", breakdown->title, chart::render(*breakdown), run.caption, true);
}

// The memory chart's virtual IPUs and scale.
struct MemoryScale {
  std::vector<std::int64_t> ids;
  double least_capacity = std::numeric_limits<double>::infinity();
  bool draw_capacity = false;
  double unit = 1024.0;
  std::string unit_name;
};

MemoryScale memory_scale(const std::vector<const Json*>& runs) {
  MemoryScale scale;
  double most_used = 0;
  for (const Json* r : runs)
    if (r->contains("memory"))
      for (const Json& m : array_at(object_at(*r, "memory"), "ipus")) {
        const auto idv = integer(m, "virtualIpu");
        if (std::find(scale.ids.begin(), scale.ids.end(), idv) == scale.ids.end()) scale.ids.push_back(idv);
        most_used = std::max(most_used, num(m, "totalBytes", 0));
        if (num(m, "capacityBytes", 0) > 0) scale.least_capacity = std::min(scale.least_capacity, num(m, "capacityBytes"));
      }
  std::sort(scale.ids.begin(), scale.ids.end());
  // A capacity far above the data would squash the bars flat: then it is named in
  // the caption instead of drawn.
  scale.draw_capacity = std::isfinite(scale.least_capacity) && most_used >= scale.least_capacity / 4;
  const double top = scale.draw_capacity ? std::max(most_used, scale.least_capacity) : most_used;
  scale.unit = top >= 1024.0 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : top >= 1024.0 * 1024 ? 1024.0 * 1024 : 1024.0;
  scale.unit_name = scale.unit > 1024.0 * 1024 ? "GiB" : scale.unit > 1024.0 ? "MiB" : "KiB";
  return scale;
}

// One virtual IPU of one mode in the memory table.
std::vector<std::string> memory_table_row(const Json& r, const Json& m) {
  const double capacity = num(m, "capacityBytes");
  const double total = num(m, "totalBytes");
  // The largest non-empty parts (weights, activations, stash, ...), biggest first.
  std::vector<std::pair<double, std::string>> parts;
  for (const Json& c : array_at(m, "categories"))
    if (num(c, "bytes", 0) > 0) parts.push_back({num(c, "bytes"), str(c, "name")});
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
  std::string largest;
  for (std::size_t k = 0; k < parts.size() && k < 3; ++k)
    largest += (k ? ", " : "") + parts[k].second + " " + format_bytes(parts[k].first);
  return {mode_label(r), std::to_string(integer(m, "virtualIpu")), bytes(total), bytes(capacity),
          capacity > 0 ? percent(total / capacity) : "-", bytes(num(m, "fullestTileBytes")),
          bytes(num(m, "tileCapacityBytes")),
          m.contains("fits") && m["fits"].is_boolean() ? (m["fits"].get<bool>() ? "yes" : "NO") : "-",
          or_dash(largest)};
}

// One mode's bars of the memory chart; the first capacity seen of each virtual IPU becomes
// its marker, and each virtual IPU a row of the memory table.
chart::BarSeries memory_series(const Json& r, const MemoryScale& scale, chart::GroupedBarChart& mem,
                               Table& memory_table) {
  chart::BarSeries s{mode_label(r), mode_color(str(r, "mode")), std::vector<double>(scale.ids.size(), kNaN)};
  for (const Json& m : array_at(object_at(r, "memory"), "ipus")) {
    const auto idv = integer(m, "virtualIpu");
    const auto pos = static_cast<std::size_t>(std::find(scale.ids.begin(), scale.ids.end(), idv) - scale.ids.begin());
    s.values[pos] = num(m, "totalBytes", 0) / scale.unit;
    const double capacity = num(m, "capacityBytes");
    if (scale.draw_capacity && std::isfinite(capacity) && !mem.markers[pos])
      mem.markers[pos] = chart::GroupMarker{capacity / scale.unit, "capacity " + format_bytes(capacity)};
    memory_table.rows.push_back(memory_table_row(r, m));
  }
  return s;
}

// The memory charts, and the memory table's rows (the table closes the section).
void memory_figures(Builder& b, const RunView& run, Table& memory_table) {
  const MemoryScale scale = memory_scale(run.runs);
  chart::GroupedBarChart mem;
  mem.title = "Memory per virtual IPU: " + run.name;
  mem.y_label = "memory (" + scale.unit_name + ")";
  mem.markers.resize(scale.ids.size());
  mem.value_format = [](double v) { return format_fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); };
  for (auto idv : scale.ids) mem.categories.push_back("vIPU " + std::to_string(idv));
  for (const Json* r : run.runs) {
    if (!r->contains("memory")) continue;
    mem.series.push_back(memory_series(*r, scale, mem, memory_table));
  }
  auto lines = run.caption;
  if (!scale.draw_capacity && std::isfinite(scale.least_capacity))
    lines.insert(lines.begin(), "Capacity " + format_bytes(scale.least_capacity) +
                                    " per IPU, far above these bars, is not drawn (see the table).");
  b.figure(run.file_stem + "-memory", mem.title, chart::render(mem), lines);
  if (const auto tiles = fullest_tile_chart(run.name, run.runs))
    b.figure(run.file_stem + "-fullest-tile", tiles->title, chart::render(*tiles), run.caption);
}

// A table of one row per metric and one column per mode.
class MetricTable {
public:
  explicit MetricTable(const std::vector<const Json*>& runs) : runs_(runs) {
    table_.header.push_back("metric");
    for (const Json* r : runs_) table_.header.push_back(mode_label(*r));
  }

  template <typename Cell>
  void row(const std::string& label, Cell cell) {
    std::vector<std::string> cells{label};
    for (const Json* r : runs_) cells.push_back(cell(*r));
    table_.rows.push_back(cells);
  }

  const std::vector<const Json*>& runs() const { return runs_; }
  const Table& table() const { return table_; }

private:
  const std::vector<const Json*>& runs_;
  Table table_;
};

// Step time, throughput, and the speed-up of each mode over sharded.
void step_time_rows(MetricTable& t, const Json& doc) {
  t.row("step time", [](const Json& r) { return seconds(num(r, "stepTimeSeconds")); });
  t.row("throughput", [](const Json& r) { return rate(num(r, "throughputSamplesPerSecond")); });
  t.row("speed-up over sharded", [&](const Json& r) {
    const Json* s = run_of(doc, "sharded");
    const double mine = num(r, "stepTimeSeconds");
    return s && mine > 0 ? format_fixed(num(*s, "stepTimeSeconds") / mine, 2) + "x" : std::string("-");
  });
}

// A language model's figures (runs[].llm): tokens per second, MFU, cost per million tokens.
void llm_rows(MetricTable& t) {
  const auto& runs = t.runs();
  const auto llm_number = [](const Json& r, const char* key) { return num(object_at(r, "llm"), key); };
  if (std::any_of(runs.begin(), runs.end(), [&](const Json* r) { return std::isfinite(llm_number(*r, "tokensPerSecond")); }))
    t.row("throughput (tokens)", [&](const Json& r) {
      const double v = llm_number(r, "tokensPerSecond");
      return std::isfinite(v) ? format_rate(v, "tokens/s") : std::string("-");
    });
  if (std::any_of(runs.begin(), runs.end(), [&](const Json* r) { return std::isfinite(llm_number(*r, "modelFlopsUtilization")); }))
    t.row("model FLOPs utilisation", [&](const Json& r) { return percent(llm_number(r, "modelFlopsUtilization")); });
  if (std::any_of(runs.begin(), runs.end(), [&](const Json* r) { return std::isfinite(llm_number(*r, "costPerMillionTokens")); }))
    t.row("cost per 1M tokens", [&](const Json& r) {
      const double v = llm_number(r, "costPerMillionTokens");
      return std::isfinite(v) ? format_fixed(v, 2) : std::string("-");
    });
}

// The step's shape, latency, and the shares of IPU-time.
void step_rows(MetricTable& t) {
  t.row("micro-batches per step", [](const Json& r) { return scalar_text(field(r, "microBatchesPerStep") ? *field(r, "microBatchesPerStep") : Json("-")); });
  t.row("samples per step", [](const Json& r) { return scalar_text(field(r, "samplesPerStep") ? *field(r, "samplesPerStep") : Json("-")); });
  t.row("latency mean", [](const Json& r) { return seconds(num(object_at(r, "latencySeconds"), "mean")); });
  t.row("latency min", [](const Json& r) { return seconds(num(object_at(r, "latencySeconds"), "min")); });
  t.row("latency max", [](const Json& r) { return seconds(num(object_at(r, "latencySeconds"), "max")); });
  t.row("bubble (idle share of IPU-time)", [](const Json& r) { return percent(num(r, "bubbleFraction")); });
  t.row("compute share", [](const Json& r) { return percent(shares_of(r).busy); });
  t.row("copies share (inter-IPU exchange)", [](const Json& r) { return percent(shares_of(r).exchange); });
  t.row("syncs share", [](const Json& r) { return percent(shares_of(r).sync); });
  t.row("host I/O share", [](const Json& r) { return percent(shares_of(r).host); });
  t.row("pipeline cycles", [](const Json& r) { return scalar_text(field(r, "cycles") ? *field(r, "cycles") : Json("-")); });
}

void utilisation_rows(MetricTable& t, const std::vector<std::int64_t>& ipu_ids) {
  // Past 16 IPUs the lowest and the highest utilisation (the run document keeps every IPU).
  if (ipu_ids.size() > 16) {
    const auto ends = [](const Json& r) {
      const Json* low = nullptr;
      const Json* high = nullptr;
      for (const Json& m : array_at(r, "ipus")) {
        if (!low || num(m, "utilization") < num(*low, "utilization")) low = &m;
        if (!high || num(m, "utilization") > num(*high, "utilization")) high = &m;
      }
      return std::pair{low, high};
    };
    t.row("utilisation, lowest", [&](const Json& r) {
      const auto e = ends(r);
      return e.first ? percent(num(*e.first, "utilization")) + " (IPU " + std::to_string(integer(*e.first, "id")) + ")"
                     : std::string("-");
    });
    t.row("utilisation, highest", [&](const Json& r) {
      const auto e = ends(r);
      return e.second ? percent(num(*e.second, "utilization")) + " (IPU " + std::to_string(integer(*e.second, "id")) + ")"
                      : std::string("-");
    });
  } else {
    for (auto idv : ipu_ids)
      t.row(ipu_label(t.runs(), idv) + " utilisation", [idv](const Json& r) {
        for (const Json& m : array_at(r, "ipus"))
          if (integer(m, "id") == idv) return percent(num(m, "utilization"));
        return std::string("-");
      });
  }
}

// (f) the numbers.
void metrics_table(Builder& b, const RunView& run, const std::vector<std::int64_t>& ipu_ids) {
  MetricTable t(run.runs);
  step_time_rows(t, run.doc);
  llm_rows(t);
  step_rows(t);
  utilisation_rows(t, ipu_ids);
  b.table(t.table(), "Step metrics: " + run.name);
}

// The links that carried traffic in any mode, in order of first appearance.
std::vector<std::string> link_names(const std::vector<const Json*>& runs) {
  std::vector<std::string> links;
  for (const Json* r : runs)
    for (const Json& l : array_at(*r, "links"))
      if (const std::string n = str(l, "name"); std::find(links.begin(), links.end(), n) == links.end())
        links.push_back(n);
  return links;
}

// Bytes per step over each link, a column per mode.
void link_table(Builder& b, const RunView& run) {
  std::vector<std::string> links = link_names(run.runs);
  // Past 16 links the 16 busiest (most bytes in any mode); the run document keeps every one.
  constexpr std::size_t kLinksShown = 16;
  const std::size_t link_count = links.size();
  if (links.size() > kLinksShown) {
    std::map<std::string, double> most;
    for (const Json* r : run.runs)
      for (const Json& l : array_at(*r, "links")) most[str(l, "name")] = std::max(most[str(l, "name")], num(l, "bytes", 0));
    std::stable_sort(links.begin(), links.end(), [&](const std::string& x, const std::string& y) { return most[x] > most[y]; });
    links.resize(kLinksShown);
  }
  if (links.empty()) return;
  Table lt;
  lt.header.push_back("link");
  for (const Json* r : run.runs) lt.header.push_back(mode_label(*r) + " bytes per step");
  for (const std::string& link : links) {
    std::vector<std::string> cells{link};
    for (const Json* r : run.runs) {
      std::string cell = "0 B";
      for (const Json& l : array_at(*r, "links"))
        if (str(l, "name") == link) cell = bytes(num(l, "bytes"));
      cells.push_back(cell);
    }
    lt.rows.push_back(cells);
  }
  b.table(lt, "Link traffic: " + run.name +
                  (link_count > links.size() ? " (the " + std::to_string(links.size()) + " busiest of " +
                                                   std::to_string(link_count) + " links; the run document has all)"
                                             : ""));
}

} // namespace

void run_section(Builder& b, const Input& in, std::size_t number, const std::string& id) {
  const Json& doc = in.doc;
  // Where the run came from is said once, above its figures (run_heading); each figure's
  // caption points there (a caption repeating every setting ran to 8-10 lines at pod scale).
  const std::string name = summary_row_name(in);
  // Figure files are named by the scenario alone: its --set flags would crowd
  // out what the figure shows, and the figure number keeps names unique.
  const RunView run{doc, ordered_runs(doc), name, str(doc, "scenario").empty() ? name : str(doc, "scenario"),
                    {"Run " + std::to_string(number) + " (" + name + "), from " + in.source +
                     "; its scenario, command and settings open the section."}};
  b.open_section(id);
  run_heading(b, in, number, name);
  b.findings(run_findings(doc));

  throughput_figure(b, run);
  schedule_figures(b, run);
  const std::vector<std::int64_t> ipu_ids = ipu_ids_of(run.runs);
  utilisation_figures(b, run, ipu_ids);

  // (d) memory per IPU, when the run documents carry it.
  bool have_memory = false;
  for (const Json* r : run.runs) have_memory = have_memory || (r->contains("memory") && (*r)["memory"].is_object());
  Table memory_table{
      {"mode", "vIPU", "total", "capacity", "used", "fullest tile", "tile capacity", "fits", "largest parts"}, {}};
  if (have_memory) memory_figures(b, run, memory_table);
  if (!have_memory) b.paragraph("Memory per IPU: no memory data in this run document.", "note");

  metrics_table(b, run, ipu_ids);
  link_table(b, run);
  if (have_memory) b.table(memory_table, "Memory per IPU: " + name);
  b.close_section();
}

} // namespace ipusim::report
