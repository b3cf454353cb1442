#include "sim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/io/input_error.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/output/output_file.hpp"
#include "sim/output/units.hpp"
#include "sim/report/findings.hpp"
#include "sim/report/notes.hpp"
#include "sim/report/page.hpp"
#include "sim/report/run_fields.hpp"
#include "sim/report/svg_chart.hpp"
#include "sim/report/trace_input.hpp"
#include "sim/sweep/sweep_results.hpp"

namespace ipusim::report {

namespace fs = std::filesystem;

// ===================================================================== inputs

namespace {

// File system queries that never throw (a name too long is simply not a folder).
bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Traces of long runs are large; still a bound, so /dev/zero or a runaway file is refused.
constexpr std::size_t kMaxReportInputBytes = std::size_t{1} << 30;

std::string read_text(const std::string& path) { return read_input_file(path, path, "/", kMaxReportInputBytes).text; }

// The shared parser (depth limit, located errors); `where` locates a line of results.jsonl.
Json parse_json(const std::string& text, const std::string& path, const std::string& where = "") {
  try {
    return parse_json_text(text, path);
  } catch (const InputError& e) {
    if (where.empty()) throw;
    throw InputError(path, where, e.rule(), e.message());
  }
}

fs::path sweep_results_file(const std::string& path) {
  const fs::path p(path);
  if (is_folder(p)) return p / "results.jsonl";
  return p;
}

bool is_run(const Json& doc) { return doc.is_object() && doc.contains("runs") && doc["runs"].is_array(); }

void check_run(const Json& doc, const std::string& path, const std::string& where) {
  for (std::size_t i = 0; i < doc["runs"].size(); ++i) {
    const Json& r = doc["runs"][i];
    const std::string at = where + "/runs/" + std::to_string(i);
    if (!r.is_object() || !r.contains("mode") || !r["mode"].is_string())
      throw InputError(path, at, "report.bad-run", "a run needs a \"mode\"");
    for (const char* key : {"step_time_s", "throughput_samples_per_s"})
      if (!field(r, key) || !field(r, key)->is_number())
        throw InputError(path, at, "report.bad-run", std::string("a run needs a number \"") + key + "\"");
  }
}

} // namespace

namespace {

bool is_sweep(const std::string& path) {
  const fs::path p(path);
  if (is_folder(p)) {
    if (path_exists(p / "results.jsonl")) return true;
    throw InputError(path, "/", "report.input-kind", "a folder must be a sweep output folder (with results.jsonl)");
  }
  return p.filename() == "results.jsonl";
}

InputKind kind_of(const ParsedInput& parsed, const std::string& path) {
  if (parsed.is_trace) return InputKind::Trace;
  if (is_run(parsed.doc)) return InputKind::Run;
  throw InputError(path, "/", "report.input-kind",
                   "neither a run document (\"runs\"), a trace (\"traceEvents\") nor a sweep folder");
}

} // namespace

InputKind detect_input_kind(const std::string& path) {
  if (is_sweep(path)) return InputKind::Sweep;
  return kind_of(parse_report_input(read_text(path), path), path);
}

Input load_input(const std::string& path) {
  Input in;
  in.source = path;
  if (is_sweep(path)) {
    in.kind = InputKind::Sweep;
    const fs::path results = sweep_results_file(path);
    const fs::path folder = results.parent_path();
    in.sweep_name = fs::path(path).filename() == "results.jsonl" ? folder.filename().string()
                                                                 : fs::path(path).filename().string();
    if (in.sweep_name.empty()) in.sweep_name = folder.filename().string();
    const fs::path definition = folder / "sweep.json";
    if (path_exists(definition)) {
      const Json d = parse_json(read_text(definition.string()), definition.string());
      if (d.is_object() && d.contains("name") && d["name"].is_string()) in.sweep_name = d["name"].get<std::string>();
    }
    std::istringstream lines(read_text(results.string()));
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = "line " + std::to_string(number);
      const Json j = parse_json(line, results.string(), where);
      if (!j.is_object() || !j.contains("status") || !j["status"].is_string())
        throw InputError(results.string(), where, "report.bad-sweep", "each line needs a \"status\"");
      SweepPoint pt;
      pt.index = j.value("point", static_cast<std::int64_t>(in.points.size()));
      pt.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(pt.index);
      pt.ok = j["status"] == "ok" || j["status"] == "oom";  // oom: the run succeeded, and does not fit
      if (j.contains("axes") && j["axes"].is_object()) pt.axes = j["axes"];
      if (pt.ok) {
        if (!j.contains("report") || !is_run(j["report"]))
          throw InputError(results.string(), where, "report.bad-sweep", "an ok point needs a run document in \"report\"");
        check_run(j["report"], results.string(), where + ": /report");
        pt.report = j["report"];
      } else {
        pt.error = j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                 : "failed (no message recorded)";
      }
      in.points.push_back(std::move(pt));
    }
    return in;
  }
  ParsedInput parsed = parse_report_input(read_text(path), path);
  in.kind = kind_of(parsed, path);
  if (in.kind == InputKind::Trace) {
    in.trace = std::move(parsed.trace);
  } else {
    in.doc = std::move(parsed.doc);
    check_run(in.doc, path, "");
  }
  return in;
}

// ===================================================================== sections

namespace {

// ----------------------------------------------------------- captions

std::vector<std::string> run_caption(const Json& doc, const std::string& source) {
  std::string scenario = or_dash(str(doc, "scenario"));
  const std::string file = str(doc, "scenario_file");
  if (!file.empty()) scenario += " (" + file + ")";
  return {"Scenario: " + scenario + "; model: " + or_dash(str(doc, "model")) + "; config: " +
              or_dash(str(doc, "config")) + ".",
          "Execution: " + execution_text(object_at(doc, "execution")) + ". Source: " + source + "."};
}

// ----------------------------------------------------------- runs

// The colour of a part of a step: that of the trace category it shows as
// (compute, host-io, ..., idle-fill-flush).
std::string part_color(const TimePart& part) {
  std::string category = part.key;
  std::replace(category.begin(), category.end(), '_', '-');
  return chart::category_color(category);
}

// Where the step time goes: per mode one bar for all IPUs (runs[].time_shares) and one
// per IPU (its seconds over the step time), stacked by part. Empty without time_shares.
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
    if (!field(*r, "time_shares")) continue;
    c.bars.push_back(mode_label(*r) + ": all IPUs");
    for (std::size_t k = 0; k < time_parts().size(); ++k) c.parts[k].values.push_back(time_share(*r, time_parts()[k]));
    const double step = num(*r, "step_time_s");
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
  c.title = "Fullest tile per IPU against a tile's memory (the fit verdict): " + name;
  c.y_label = "fullest tile (KiB)";
  c.value_format = [](double v) { return format_fixed(v, v >= 100 ? 0 : 1); };
  std::vector<std::int64_t> ids;
  for (const Json* r : runs)
    for (const Json& m : array_at(object_at(*r, "memory"), "ipus"))
      if (std::isfinite(num(m, "fullest_tile_bytes")) && std::find(ids.begin(), ids.end(), integer(m, "id")) == ids.end())
        ids.push_back(integer(m, "id"));
  if (ids.empty()) return std::nullopt;
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) c.categories.push_back("IPU " + std::to_string(id));
  c.markers.resize(ids.size());
  for (const Json* r : runs) {
    chart::BarSeries s{mode_label(*r), mode_color(str(*r, "mode")), std::vector<double>(ids.size(), kNaN)};
    bool any = false;
    for (const Json& m : array_at(object_at(*r, "memory"), "ipus")) {
      const auto pos = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), integer(m, "id")) - ids.begin());
      if (pos >= ids.size()) continue;
      s.values[pos] = num(m, "fullest_tile_bytes") / 1024;
      any = true;
      if (const double cap = num(m, "tile_capacity_bytes"); cap > 0 && !c.markers[pos])
        c.markers[pos] = chart::GroupMarker{cap / 1024, "tile memory " + format_bytes(cap)};
    }
    if (any) c.series.push_back(s);
  }
  return c;
}

std::string summary_row_name(const Input& in) {
  const std::string scenario = str(in.doc, "scenario");
  return scenario.empty() ? in.source : scenario;
}

void run_section(Builder& b, const Input& in, std::size_t number, const std::string& id) {
  const Json& doc = in.doc;
  const auto runs = ordered_runs(doc);
  const auto caption = run_caption(doc, in.source);
  const std::string name = summary_row_name(in);
  b.open_section(id);
  b.heading(2, "Run " + std::to_string(number) + ": " + name, "");
  b.paragraph("Model " + or_dash(str(doc, "model")) + " on " + or_dash(str(doc, "config")) + ", from " + in.source +
                  ".",
              "meta");
  b.findings(run_findings(doc));

  // (a) throughput, sharded against pipelined.
  const double speedup = speedup_of(doc);
  chart::BarChart throughput;
  throughput.title = "Throughput: " + name;
  throughput.y_label = "throughput (samples/s)";
  for (const Json* r : runs) {
    chart::Bar bar{mode_label(*r), num(*r, "throughput_samples_per_s", 0), mode_color(str(*r, "mode")),
                   {rate(num(*r, "throughput_samples_per_s"))}};
    if (str(*r, "mode") == "pipelined" && std::isfinite(speedup))
      bar.notes.push_back("speed-up " + format_fixed(speedup, 2) + "x");
    throughput.bars.push_back(bar);
  }
  b.figure(name + "-throughput", throughput.title +
                                     (std::isfinite(speedup) ? " (pipelined/sharded speed-up " +
                                                                   format_fixed(speedup, 2) + "x)"
                                                             : ""),
           chart::render(throughput), caption);

  // (c) utilisation per IPU, one bar per mode.
  chart::GroupedBarChart util;
  util.title = "Utilisation per IPU: " + name;
  util.y_label = "utilisation (busy / step time)";
  util.y_format = percent_tick;
  util.value_format = [](double v) { return format_fixed(v * 100, 1) + "%"; };
  std::vector<std::int64_t> ipu_ids;
  for (const Json* r : runs)
    for (const Json& m : array_at(*r, "ipus"))
      if (auto idv = integer(m, "id"); std::find(ipu_ids.begin(), ipu_ids.end(), idv) == ipu_ids.end())
        ipu_ids.push_back(idv);
  std::sort(ipu_ids.begin(), ipu_ids.end());
  for (auto idv : ipu_ids) util.categories.push_back("IPU " + std::to_string(idv));
  for (const Json* r : runs) {
    chart::BarSeries s{mode_label(*r), mode_color(str(*r, "mode")), std::vector<double>(ipu_ids.size(), kNaN)};
    for (const Json& m : array_at(*r, "ipus")) {
      const auto pos = std::find(ipu_ids.begin(), ipu_ids.end(), integer(m, "id")) - ipu_ids.begin();
      s.values[static_cast<std::size_t>(pos)] = num(m, "utilization");
    }
    util.series.push_back(s);
  }
  b.figure(name + "-utilisation", util.title, chart::render(util), caption);
  if (const auto breakdown = time_breakdown_chart(name, runs))
    b.figure(name + "-time-breakdown", breakdown->title, chart::render(*breakdown), caption, true);

  // (d) memory per IPU, when the run documents carry it.
  bool have_memory = false;
  for (const Json* r : runs) have_memory = have_memory || (r->contains("memory") && (*r)["memory"].is_object());
  Table memory_table{
      {"mode", "IPU", "total", "capacity", "used", "fullest tile", "tile capacity", "fits", "largest parts"}, {}};
  if (have_memory) {
    std::vector<std::int64_t> ids;
    double most_used = 0, least_capacity = std::numeric_limits<double>::infinity();
    for (const Json* r : runs)
      if (r->contains("memory"))
        for (const Json& m : array_at(object_at(*r, "memory"), "ipus")) {
          const auto idv = integer(m, "id");
          if (std::find(ids.begin(), ids.end(), idv) == ids.end()) ids.push_back(idv);
          most_used = std::max(most_used, num(m, "total_bytes", 0));
          if (num(m, "capacity_bytes", 0) > 0) least_capacity = std::min(least_capacity, num(m, "capacity_bytes"));
        }
    std::sort(ids.begin(), ids.end());
    // A capacity far above the data would squash the bars flat: then it is named in
    // the caption instead of drawn.
    const bool draw_capacity = std::isfinite(least_capacity) && most_used >= least_capacity / 4;
    const double top = draw_capacity ? std::max(most_used, least_capacity) : most_used;
    const double unit = top >= 1024.0 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : top >= 1024.0 * 1024 ? 1024.0 * 1024 : 1024.0;
    const std::string unit_name = unit > 1024.0 * 1024 ? "GiB" : unit > 1024.0 ? "MiB" : "KiB";
    chart::GroupedBarChart mem;
    mem.title = "Memory per IPU: " + name;
    mem.y_label = "memory (" + unit_name + ")";
    mem.markers.resize(ids.size());
    mem.value_format = [unit_name](double v) { return format_fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); };
    for (auto idv : ids) mem.categories.push_back("IPU " + std::to_string(idv));
    for (const Json* r : runs) {
      if (!r->contains("memory")) continue;
      chart::BarSeries s{mode_label(*r), mode_color(str(*r, "mode")), std::vector<double>(ids.size(), kNaN)};
      for (const Json& m : array_at(object_at(*r, "memory"), "ipus")) {
        const auto idv = integer(m, "id");
        const auto pos = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), idv) - ids.begin());
        s.values[pos] = num(m, "total_bytes", 0) / unit;
        const double capacity = num(m, "capacity_bytes");
        if (draw_capacity && std::isfinite(capacity) && !mem.markers[pos])
          mem.markers[pos] = chart::GroupMarker{capacity / unit, "capacity " + format_bytes(capacity)};
        const double total = num(m, "total_bytes");
        // The largest non-empty parts (weights, activations, stash, ...), biggest first.
        std::vector<std::pair<double, std::string>> parts;
        for (const Json& c : array_at(m, "categories"))
          if (num(c, "bytes", 0) > 0) parts.push_back({num(c, "bytes"), str(c, "name")});
        std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
        std::string largest;
        for (std::size_t k = 0; k < parts.size() && k < 3; ++k)
          largest += (k ? ", " : "") + parts[k].second + " " + format_bytes(parts[k].first);
        memory_table.rows.push_back(
            {mode_label(*r), std::to_string(idv), bytes(total), bytes(capacity),
             capacity > 0 ? percent(total / capacity) : "-", bytes(num(m, "fullest_tile_bytes")),
             bytes(num(m, "tile_capacity_bytes")),
             m.contains("fits") && m["fits"].is_boolean() ? (m["fits"].get<bool>() ? "yes" : "NO") : "-",
             or_dash(largest)});
      }
      mem.series.push_back(s);
    }
    auto lines = caption;
    if (!draw_capacity && std::isfinite(least_capacity))
      lines.insert(lines.begin(), "Capacity " + format_bytes(least_capacity) +
                                      " per IPU, far above these bars, is not drawn (see the table).");
    b.figure(name + "-memory", mem.title, chart::render(mem), lines);
    if (const auto tiles = fullest_tile_chart(name, runs))
      b.figure(name + "-fullest-tile", tiles->title, chart::render(*tiles), caption);
  }
  if (!have_memory) b.paragraph("Memory per IPU: no memory data in this run document.", "note");

  // (f) the numbers.
  Table t;
  t.header.push_back("metric");
  for (const Json* r : runs) t.header.push_back(mode_label(*r));
  auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> cells{label};
    for (const Json* r : runs) cells.push_back(cell(*r));
    t.rows.push_back(cells);
  };
  row("step time", [](const Json& r) { return seconds(num(r, "step_time_s")); });
  row("throughput", [](const Json& r) { return rate(num(r, "throughput_samples_per_s")); });
  row("speed-up over sharded", [&](const Json& r) {
    const Json* s = run_of(doc, "sharded");
    const double mine = num(r, "step_time_s");
    return s && mine > 0 ? format_fixed(num(*s, "step_time_s") / mine, 2) + "x" : std::string("-");
  });
  row("micro-batches per step", [](const Json& r) { return scalar_text(field(r, "micro_batches_per_step") ? *field(r, "micro_batches_per_step") : Json("-")); });
  row("samples per step", [](const Json& r) { return scalar_text(field(r, "samples_per_step") ? *field(r, "samples_per_step") : Json("-")); });
  row("latency mean", [](const Json& r) { return seconds(num(object_at(r, "latency_s"), "mean")); });
  row("latency min", [](const Json& r) { return seconds(num(object_at(r, "latency_s"), "min")); });
  row("latency max", [](const Json& r) { return seconds(num(object_at(r, "latency_s"), "max")); });
  row("bubble (idle share of IPU-time)", [](const Json& r) { return percent(num(r, "bubble_fraction")); });
  row("compute share", [](const Json& r) { return percent(shares_of(r).busy); });
  row("copies share (inter-IPU exchange)", [](const Json& r) { return percent(shares_of(r).exchange); });
  row("syncs share", [](const Json& r) { return percent(shares_of(r).sync); });
  row("host I/O share", [](const Json& r) { return percent(shares_of(r).host); });
  row("pipeline cycles", [](const Json& r) { return scalar_text(field(r, "cycles") ? *field(r, "cycles") : Json("-")); });
  for (auto idv : ipu_ids)
    row("IPU " + std::to_string(idv) + " utilisation", [idv](const Json& r) {
      for (const Json& m : array_at(r, "ipus"))
        if (integer(m, "id") == idv) return percent(num(m, "utilization"));
      return std::string("-");
    });
  b.table(t, "Step metrics: " + name);

  std::vector<std::string> links;
  for (const Json* r : runs)
    for (const Json& l : array_at(*r, "links"))
      if (const std::string n = str(l, "name"); std::find(links.begin(), links.end(), n) == links.end())
        links.push_back(n);
  if (!links.empty()) {
    Table lt;
    lt.header.push_back("link");
    for (const Json* r : runs) lt.header.push_back(mode_label(*r) + " bytes per step");
    for (const std::string& link : links) {
      std::vector<std::string> cells{link};
      for (const Json* r : runs) {
        std::string cell = "0 B";
        for (const Json& l : array_at(*r, "links"))
          if (str(l, "name") == link) cell = bytes(num(l, "bytes"));
        cells.push_back(cell);
      }
      lt.rows.push_back(cells);
    }
    b.table(lt, "Link traffic: " + name);
  }
  if (have_memory) b.table(memory_table, "Memory per IPU: " + name);
  b.close_section();
}

// ----------------------------------------------------------- sweeps

struct AxisInfo {
  std::string key;
  std::vector<Json> values;  // distinct, in order of first appearance
};

std::vector<AxisInfo> sweep_axes(const Input& in) {
  std::vector<AxisInfo> axes;
  for (const SweepPoint& p : in.points)
    for (const auto& [key, value] : p.axes.items()) {
      const std::string& name = key;  // clang 14 cannot capture a structured binding
      auto it = std::find_if(axes.begin(), axes.end(), [&](const AxisInfo& a) { return a.key == name; });
      if (it == axes.end()) {
        axes.push_back({key, {}});
        it = axes.end() - 1;
      }
      if (std::find(it->values.begin(), it->values.end(), value) == it->values.end()) it->values.push_back(value);
    }
  std::sort(axes.begin(), axes.end(), [](const AxisInfo& a, const AxisInfo& b) { return a.key < b.key; });
  return axes;
}

std::string axes_text(const Json& axes, const std::set<std::string>& only = {}) {
  std::string out;
  for (const auto& [key, value] : axes.items()) {
    if (!only.empty() && !only.count(key)) continue;
    if (!out.empty()) out += ", ";
    out += key + "=" + scalar_text(value);
  }
  return out;
}

// An axis value for labels: a file path shows as its stem (models/bert-tiny.json -> bert-tiny).
std::string display_value(const Json& v) {
  if (v.is_string()) {
    const fs::path p(v.get<std::string>());
    if (p.extension() == ".json") return p.stem().string();
  }
  return scalar_text(v);
}

std::string tick_label(const Json& v) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (d == std::floor(d) && std::fabs(d) < 1e6) return format_fixed(d, 0);
    return chart::short_number(d);
  }
  return display_value(v);
}

std::vector<std::string> sweep_caption(const Input& in, const std::vector<const SweepPoint*>& points,
                                       const std::string& x_key, const std::string& group_text) {
  std::vector<std::string> scenarios, models, configs;
  auto add = [](std::vector<std::string>& list, const std::string& v) {
    if (!v.empty() && std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  const Json* first = nullptr;
  std::set<std::string> varying_execution;
  for (const SweepPoint* p : points) {
    if (!p->ok) continue;
    std::string scenario = str(p->report, "scenario");
    if (const std::string f = str(p->report, "scenario_file"); !f.empty()) scenario += " (" + f + ")";
    add(scenarios, scenario);
    add(models, str(p->report, "model"));
    add(configs, str(p->report, "config"));
    if (!p->report.contains("execution") || !p->report["execution"].is_object()) continue;
    const Json& ex = p->report["execution"];
    if (!first) first = &ex;
    else
      for (const auto& [k, v] : ex.items())
        if (!first->contains(k) || (*first)[k] != v) varying_execution.insert(k);
  }
  auto join = [](const std::vector<std::string>& list) {
    std::string out;
    for (const auto& s : list) out += (out.empty() ? "" : " | ") + s;
    return out.empty() ? std::string("-") : out;
  };
  std::vector<std::string> lines;
  lines.push_back("Sweep " + in.sweep_name + " (" + in.source + "), varying " + x_key +
                  (group_text.empty() ? "" : "; fixed here: " + group_text) + ".");
  lines.push_back("Scenario: " + join(scenarios) + "; model: " + join(models) + "; config: " + join(configs) + ".");
  std::string ex = first ? execution_text(*first, varying_execution) : "not recorded (no successful point)";
  if (!varying_execution.empty()) {
    ex += "; varies across points:";
    for (const auto& k : varying_execution) ex += " " + k;
  }
  lines.push_back("Execution: " + ex + ".");
  return lines;
}

void sweep_section(Builder& b, const Input& in, std::size_t number, const std::string& id) {
  b.open_section(id);
  b.heading(2, "Sweep " + std::to_string(number) + ": " + in.sweep_name);
  std::size_t failed = 0;
  for (const SweepPoint& p : in.points) failed += p.ok ? 0 : 1;
  b.paragraph(std::to_string(in.points.size()) + " points from " + in.source + ", " + std::to_string(failed) +
                  " failed.",
              "meta");
  b.findings(sweep_findings(in));

  const auto axes = sweep_axes(in);
  std::vector<const AxisInfo*> varying;
  for (const AxisInfo& a : axes)
    if (a.values.size() > 1) varying.push_back(&a);
  // The x axis: the varying axis with the most values; any other varying axes split
  // the points into one pair of charts per combination of their values.
  auto all_numbers = [](const AxisInfo* a) {
    return std::all_of(a->values.begin(), a->values.end(), [](const Json& v) { return v.is_number(); });
  };
  const AxisInfo* x_axis = nullptr;
  for (const AxisInfo* a : varying)
    if (!x_axis || a->values.size() > x_axis->values.size() ||
        (a->values.size() == x_axis->values.size() && all_numbers(a) && !all_numbers(x_axis)))
      x_axis = a;
  // Axes that move with x (zipped with it: one value per x value) label x; the others
  // split the points into groups.
  std::set<std::string> other_keys;
  std::vector<std::string> companions;
  for (const AxisInfo* a : varying) {
    if (a == x_axis) continue;
    std::map<std::string, std::set<std::string>> values_per_x;
    for (const SweepPoint& p : in.points)
      values_per_x[p.axes.value(x_axis->key, Json()).dump()].insert(p.axes.value(a->key, Json()).dump());
    bool follows = true;
    for (const auto& [x, values] : values_per_x) follows = follows && values.size() == 1;
    if (follows) companions.push_back(a->key);
    else other_keys.insert(a->key);
  }

  std::string x_key = x_axis ? x_axis->key : "point";
  for (const std::string& k : companions) x_key += " with " + k;
  bool numeric = true;
  if (x_axis)
    for (const Json& v : x_axis->values) numeric = numeric && v.is_number();
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  if (x_axis && numeric)
    for (const Json& v : x_axis->values) x_lo = std::min(x_lo, v.get<double>()), x_hi = std::max(x_hi, v.get<double>());
  const bool log_x = x_axis && numeric && x_lo > 0 && x_hi / x_lo >= 16;
  auto x_of = [&](const SweepPoint& p) -> double {
    if (!x_axis) return static_cast<double>(p.index);
    const Json v = p.axes.value(x_axis->key, Json());
    if (numeric) return v.is_number() ? v.get<double>() : kNaN;
    return static_cast<double>(std::find(x_axis->values.begin(), x_axis->values.end(), v) - x_axis->values.begin());
  };
  std::vector<chart::Tick> ticks;
  if (x_axis && (!numeric || x_axis->values.size() <= 12))
    for (std::size_t i = 0; i < x_axis->values.size(); ++i)
      ticks.push_back({numeric ? x_axis->values[i].get<double>() : static_cast<double>(i), tick_label(x_axis->values[i])});

  std::vector<std::string> modes;
  for (const char* m : {"sharded", "pipelined"})
    for (const SweepPoint& p : in.points)
      if (p.ok && run_of(p.report, m) && std::find(modes.begin(), modes.end(), m) == modes.end()) modes.push_back(m);
  for (const SweepPoint& p : in.points)
    if (p.ok)
      for (const Json& r : p.report["runs"])
        if (const std::string m = str(r, "mode"); std::find(modes.begin(), modes.end(), m) == modes.end())
          modes.push_back(m);

  // Panels of curves. One other axis with a few values: one panel whose curves (dashed
  // differently) are its values, so they compare on one scale. Otherwise one panel per
  // combination of the other axes' values.
  struct Curve {
    std::string suffix, dash;
    std::vector<const SweepPoint*> points;
  };
  struct Panel {
    std::string suffix, fixed;  // title suffix; the other axes' values, for the caption
    std::vector<Curve> curves;
  };
  static const std::vector<std::string> dashes = {"", "7 4", "2 3", "10 3 2 3"};
  std::vector<Panel> panels;
  const AxisInfo* overlay = nullptr;
  if (other_keys.size() == 1)
    for (const AxisInfo* a : varying)
      if (a->key == *other_keys.begin() && a->values.size() <= dashes.size()) overlay = a;
  if (overlay) {
    Panel panel;
    panel.suffix = " by " + overlay->key;
    for (std::size_t v = 0; v < overlay->values.size(); ++v) {
      Curve curve{", " + display_value(overlay->values[v]), dashes[v], {}};
      for (const SweepPoint& p : in.points)
        if (p.axes.value(overlay->key, Json()) == overlay->values[v]) curve.points.push_back(&p);
      panel.curves.push_back(curve);
    }
    panels.push_back(panel);
  } else {
    for (const SweepPoint& p : in.points) {
      std::string key;
      for (const auto& k : other_keys)
        key += (key.empty() ? "" : ", ") + k + "=" + display_value(p.axes.value(k, Json()));
      auto it = std::find_if(panels.begin(), panels.end(), [&](const Panel& x) { return x.fixed == key; });
      if (it == panels.end()) {
        panels.push_back({key.empty() ? "" : " [" + key + "]", key, {Curve{"", "", {}}}});
        it = panels.end() - 1;
      }
      it->curves[0].points.push_back(&p);
    }
  }
  constexpr std::size_t kMaxPanels = 12;
  if (panels.size() > kMaxPanels)
    b.paragraph("Only the first " + std::to_string(kMaxPanels) + " of " + std::to_string(panels.size()) +
                    " combinations of the other axes are plotted; the table lists every point.",
                "note");

  std::pair<double, double> highest{0, 0};  // throughput, bubble over every point and mode
  for (const SweepPoint& p : in.points)
    if (p.ok)
      for (const Json& r : array_at(p.report, "runs")) {
        highest.first = std::max(highest.first, num(r, "throughput_samples_per_s", 0));
        highest.second = std::max(highest.second, num(r, "bubble_fraction", 0));
      }
  for (std::size_t g = 0; g < panels.size() && g < kMaxPanels; ++g) {
    std::vector<const SweepPoint*> all;
    for (Curve& curve : panels[g].curves) {
      std::stable_sort(curve.points.begin(), curve.points.end(),
                       [&](const SweepPoint* a, const SweepPoint* c) { return x_of(*a) < x_of(*c); });
      all.insert(all.end(), curve.points.begin(), curve.points.end());
    }
    const auto caption = sweep_caption(in, all, x_key, panels[g].fixed);
    for (int which = 0; which < 2; ++which) {
      chart::LineChart c;
      c.title = std::string(which == 0 ? "Throughput" : "Bubble fraction") + " vs " + x_key + panels[g].suffix;
      c.x_label = x_key;
      c.y_label = which == 0 ? "throughput (samples/s)" : "bubble (idle share of IPU-time)";
      if (which == 1) c.y_format = percent_tick;
      c.y_max = which == 0 ? highest.first : highest.second;  // one scale for every panel of the sweep
      c.log_x = log_x;
      c.x_ticks = ticks;
      for (const Curve& curve : panels[g].curves)
        for (const std::string& mode : modes) {
          chart::LineSeries s{mode, mode_color(mode), {}, curve.dash};
          for (const SweepPoint* p : curve.points) {
            const double x = x_of(*p);
            if (!std::isfinite(x)) continue;
            const Json* r = p->ok ? run_of(p->report, mode) : nullptr;
            const double y = r ? num(*r, which == 0 ? "throughput_samples_per_s" : "bubble_fraction") : kNaN;
            s.points.push_back(
                {x, std::isfinite(y) ? std::optional<double>(y) : std::nullopt, r && fits_in_memory(*r) == 0});
            if (r && s.name == mode) s.name = mode_label(*r);
          }
          s.name += curve.suffix;
          c.series.push_back(s);
        }
      for (const SweepPoint* p : all)
        if (!p->ok && std::isfinite(x_of(*p)) &&
            std::find(c.error_x.begin(), c.error_x.end(), x_of(*p)) == c.error_x.end())
          c.error_x.push_back(x_of(*p));
      b.figure(in.sweep_name + "-" + (which == 0 ? "throughput" : "bubble") + panels[g].suffix, c.title,
               chart::render(c), caption);
    }
  }

  Table t;
  t.header = {"point", "id"};
  for (const AxisInfo& a : axes) t.header.push_back(a.key);
  t.header.push_back("status");
  for (const std::string& m : modes) {
    t.header.push_back(m + " step time");
    t.header.push_back(m + " throughput");
    t.header.push_back(m + " bubble");
  }
  const bool both = std::find(modes.begin(), modes.end(), "sharded") != modes.end() &&
                    std::find(modes.begin(), modes.end(), "pipelined") != modes.end();
  if (both) t.header.push_back("speed-up");
  Table errors{{"point", "id", "axes", "error"}, {}};
  for (const SweepPoint& p : in.points) {
    std::vector<std::string> cells{std::to_string(p.index), p.id};
    for (const AxisInfo& a : axes) cells.push_back(p.axes.contains(a.key) ? scalar_text(p.axes[a.key]) : "-");
    cells.push_back(p.ok ? (sweep::out_of_memory(p.report) ? "out of memory" : "ok") : "error");
    for (const std::string& m : modes) {
      const Json* r = p.ok ? run_of(p.report, m) : nullptr;
      cells.push_back(r ? seconds(num(*r, "step_time_s")) : "-");
      cells.push_back(r ? rate(num(*r, "throughput_samples_per_s")) : "-");
      cells.push_back(r ? percent(num(*r, "bubble_fraction")) : "-");
    }
    if (both) {
      const double s = p.ok ? speedup_of(p.report) : kNaN;
      cells.push_back(std::isfinite(s) ? format_fixed(s, 2) + "x" : "-");
    }
    t.rows.push_back(cells);
    if (!p.ok) errors.rows.push_back({std::to_string(p.index), p.id, axes_text(p.axes), p.error});
  }
  b.table(t, "Sweep points: " + in.sweep_name);
  if (!errors.rows.empty()) b.table(errors, "Failed points: " + in.sweep_name);
  b.close_section();
}

// ----------------------------------------------------------- traces

struct Track {
  std::uint32_t tid;  // into TraceData::ids
  std::string name;
};

bool tid_less(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
  if (a.is_number() != b.is_number()) return a.is_number();
  return a.dump() < b.dump();
}

std::vector<std::string> other_data_caption(const Json& other, const std::string& source, const std::string& process) {
  static const std::set<std::string> identity_keys = {"scenario", "scenario_file", "model", "config"};
  static const std::set<std::string> skipped = {"generator", "time_unit", "execution"};
  std::string identity, rest;
  if (other.is_object()) {
    std::string scenario = str(other, "scenario");
    if (const std::string f = str(other, "scenario_file"); !f.empty()) scenario += " (" + f + ")";
    if (!scenario.empty()) identity = "Scenario: " + scenario;
    for (const char* key : {"model", "config"})
      if (other.contains(key)) identity += std::string(identity.empty() ? "" : "; ") + key + ": " + scalar_text(other[key]);
    for (const auto& [key, value] : other.items()) {
      if (identity_keys.count(key) || skipped.count(key)) continue;
      std::string text;
      if (value.is_object() && value.contains(process) && !value[process].is_structured()) {
        // Per-process values, keyed by the process name (step_time_s, events left out).
        const Json& v = value[process];
        text = key == "step_time_s" && v.is_number() ? "step time " + format_seconds(v.get<double>())
                                                     : key + "=" + scalar_text(v);
      } else if (value.is_object()) {
        for (const auto& [k, v] : value.items())
          if (!v.is_structured()) text += std::string(text.empty() ? "" : ", ") + k + "=" + scalar_text(v);
        if (!text.empty()) text = key + ": " + text;
      } else if (!value.is_array()) {
        text = key + "=" + scalar_text(value);
      }
      if (!text.empty()) rest += std::string(rest.empty() ? "" : "; ") + text;
    }
  }
  std::vector<std::string> lines;
  lines.push_back(identity.empty() ? "Scenario, model and config: not recorded in the trace." : identity + ".");
  if (!rest.empty()) lines.push_back(rest + ".");
  if (other.is_object() && other.contains("execution") && other["execution"].is_object())
    lines.push_back("Execution: " + execution_text(other["execution"]) + ". Source: " + source + ".");
  else
    lines.push_back("Execution: not recorded in the trace (give the run document of the same run as an input "
                    "too). Source: " + source + ".");
  return lines;
}

// A run input that produced this trace's process: same scenario and, for that mode,
// the same step time. Its execution settings then describe the timeline too.
const Input* matching_run(const std::vector<Input>& inputs, const Json& other, const std::string& process) {
  if (!other.is_object() || !field(other, "step_time_s")) return nullptr;
  const double step = num(object_at(other, "step_time_s"), process);
  if (!std::isfinite(step)) return nullptr;
  for (const Input& in : inputs) {
    if (in.kind != InputKind::Run || str(in.doc, "scenario") != str(other, "scenario")) continue;
    for (const Json& r : in.doc["runs"])
      if (mode_label(r) == process && std::fabs(num(r, "step_time_s", 0) - step) <= 1e-9 * std::fabs(step))
        return &in;
  }
  return nullptr;
}

void trace_section(Builder& b, const Input& in, std::size_t number, const std::string& id,
                   const std::vector<Input>& inputs) {
  const TraceData& trace = in.trace;
  const Json& other = trace.other;
  std::vector<std::uint32_t> pids;
  for (const TraceData::Slice& s : trace.slices)
    if (std::find(pids.begin(), pids.end(), s.pid) == pids.end()) pids.push_back(s.pid);
  std::sort(pids.begin(), pids.end(),
            [&](std::uint32_t a, std::uint32_t c) { return tid_less(trace.ids[a], trace.ids[c]); });

  b.open_section(id);
  b.heading(2, "Trace " + std::to_string(number) + ": " + in.source);
  if (pids.empty()) b.paragraph("The trace has no complete (\"X\") events to draw.", "note");

  for (const std::uint32_t pid : pids) {
    std::vector<Track> tracks;
    std::map<std::uint32_t, std::size_t> row_of;  // tid -> row, once the rows are sorted
    double t0 = std::numeric_limits<double>::infinity();
    for (const TraceData::Slice& s : trace.slices) {
      if (s.pid != pid) continue;
      if (row_of.emplace(s.tid, tracks.size()).second) tracks.push_back({s.tid, ""});
      t0 = std::min(t0, s.ts);
    }
    // Tracks in the trace's own order (thread_sort_index), else by thread id.
    auto order = [&](const Track& t) {
      auto it = trace.thread_order.find({pid, t.tid});
      return it == trace.thread_order.end() ? std::numeric_limits<double>::infinity() : it->second;
    };
    std::sort(tracks.begin(), tracks.end(), [&](const Track& a, const Track& c) {
      if (order(a) != order(c)) return order(a) < order(c);
      return tid_less(trace.ids[a.tid], trace.ids[c.tid]);
    });
    chart::GanttChart g;
    for (std::size_t r = 0; r < tracks.size(); ++r) {
      Track& t = tracks[r];
      row_of[t.tid] = r;
      auto it = trace.thread_names.find({pid, t.tid});
      t.name = it != trace.thread_names.end() && !it->second.empty() ? it->second
                                                                      : "track " + scalar_text(trace.ids[t.tid]);
      g.rows.push_back(t.name);
    }
    std::vector<std::map<std::string, double>> totals(tracks.size());  // category -> seconds
    double span = 0;  // seconds from the first event's start to the last one's end
    std::set<std::string> categories;
    std::vector<const TraceData::Slice*> slice_of;  // per Gantt event: its slice, for its label
    const auto slice_count = static_cast<std::size_t>(std::count_if(
        trace.slices.begin(), trace.slices.end(), [&](const TraceData::Slice& s) { return s.pid == pid; }));
    g.events.reserve(slice_count);
    slice_of.reserve(slice_count);
    for (const TraceData::Slice& s : trace.slices) {
      if (s.pid != pid) continue;
      const std::size_t row = row_of[s.tid];
      const double start = (s.ts - t0) * 1e-6;
      const double duration = std::max(0.0, s.dur) * 1e-6;
      const std::string& category = trace.categories[s.category];
      g.events.push_back({row, start, start + duration, category, ""});
      slice_of.push_back(&s);
      totals[row][category] += duration;
      categories.insert(category);
      span = std::max(span, start + duration);
    }
    g.label_of = [&](std::size_t i) {
      const TraceData::Slice& s = *slice_of[i];
      return trace.name(s) + " (" + trace.categories[s.category] + ", " + format_seconds(std::max(0.0, s.dur) * 1e-6) +
             ")";
    };
    auto pn = trace.process_names.find(pid);
    const std::string process =
        pn != trace.process_names.end() && !pn->second.empty() ? pn->second : "pid " + trace.ids[pid].dump();
    const std::string scenario = str(other, "scenario");
    g.title = "Timeline of one step: " + (scenario.empty() ? "" : scenario + ", ") + process;
    std::vector<TrackTime> track_times;
    for (std::size_t r = 0; r < tracks.size(); ++r) track_times.push_back({tracks[r].name, totals[r]});
    b.findings(trace_findings(process, track_times, span));
    const std::size_t drawn = chart::gantt_rects(g).size();
    auto lines = other_data_caption(other, in.source, process);
    if (const Input* run = matching_run(inputs, other, process))
      lines[lines.size() - 1] = "Execution: " + execution_text(object_at(run->doc, "execution")) +
                                " (from run input " + run->source + ", same scenario and step time). Source: " +
                                in.source + ".";
    lines.insert(lines.begin(), std::to_string(g.events.size()) + " events on " + std::to_string(tracks.size()) +
                                    " tracks, drawn as " + std::to_string(drawn) +
                                    " rectangles: adjacent same-category events narrower than a pixel are merged, and a merged "
                                    "bar is drawn faded by the share of its time that is busy.");
    b.figure("timeline-" + (scenario.empty() ? "" : scenario + "-") + process, g.title, chart::render(g), lines,
             true);

    Table t;
    t.header.push_back("track");
    for (const auto& c : categories) t.header.push_back(c + " time");
    for (std::size_t r = 0; r < tracks.size(); ++r) {
      std::vector<std::string> cells{tracks[r].name};
      for (const auto& c : categories) {
        auto it = totals[r].find(c);
        cells.push_back(it == totals[r].end() ? "-" : format_seconds(it->second));
      }
      t.rows.push_back(cells);
    }
    b.table(t, "Time per track and category (sum of event durations): " + (scenario.empty() ? "" : scenario + ", ") +
                   process);
  }
  b.close_section();
}

} // namespace

// ===================================================================== assembly

Document build_report(const std::vector<Input>& inputs, const std::string& title, const std::string& notes) {
  Builder b(title);
  std::vector<std::pair<std::string, std::string>> toc;
  std::string intro_html = "<p class=\"inputs\">Generated by <code>ipusim report</code> from " +
                           std::to_string(inputs.size()) + " input(s): ";
  std::string intro_md = "Generated by `ipusim report` from " + std::to_string(inputs.size()) + " input(s): ";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const char* kind = inputs[i].kind == InputKind::Run ? "run" : inputs[i].kind == InputKind::Sweep ? "sweep" : "trace";
    intro_html += std::string(i ? ", " : "") + "<code>" + chart::escape(inputs[i].source) + "</code> (" + kind + ")";
    intro_md += std::string(i ? ", " : "") + md_escape(inputs[i].source) + " (" + kind + ")";
  }
  intro_html += ".</p>\n";
  intro_md += ".\n\n";

  if (!notes.empty()) {
    toc.push_back({"notes", "Notes"});
    b.raw("<section id=\"notes\" class=\"notes\">\n<h2>Notes</h2>\n" + notes_html(notes) + "</section>\n",
          "## Notes\n\n" + notes + (notes.back() == '\n' ? "\n" : "\n\n"));
  }

  std::vector<const Input*> runs;
  for (const Input& in : inputs)
    if (in.kind == InputKind::Run) runs.push_back(&in);
  if (!runs.empty()) {
    toc.push_back({"summary", "Summary: sharded vs pipelined"});
    b.open_section("summary");
    b.heading(2, "Summary: sharded vs pipelined");
    std::vector<std::pair<std::string, const Json*>> named;
    for (const Input* in : runs) named.push_back({summary_row_name(*in), &in->doc});
    b.findings(summary_findings(named));
    Table t{{"scenario", "model", "config", "sharded step time", "pipelined step time", "sharded throughput",
             "pipelined throughput", "speed-up"},
            {}};
    for (const Input* in : runs) {
      const Json* s = run_of(in->doc, "sharded");
      const Json* p = run_of(in->doc, "pipelined");
      const double speedup = speedup_of(in->doc);
      t.rows.push_back({summary_row_name(*in), or_dash(str(in->doc, "model")), or_dash(str(in->doc, "config")),
                        s ? seconds(num(*s, "step_time_s")) : "-", p ? seconds(num(*p, "step_time_s")) : "-",
                        s ? rate(num(*s, "throughput_samples_per_s")) : "-",
                        p ? rate(num(*p, "throughput_samples_per_s")) : "-",
                        std::isfinite(speedup) ? format_fixed(speedup, 2) + "x" : "-"});
    }
    b.table(t, "Throughput of every run input (speed-up = sharded step time / pipelined step time)");
    if (runs.size() > 1) {
      // Speed-ups compare across scenarios whose throughputs differ by orders of magnitude.
      chart::BarChart all;
      all.title = "Pipelined speed-up over sharded, per run input";
      all.y_label = "speed-up (sharded step time / pipelined)";
      all.frame.width = 1200;
      all.y_format = [](double v) { return chart::short_number(v) + "x"; };
      std::vector<std::string> caption;
      for (const Input* in : runs) {
        const double speedup = speedup_of(in->doc);
        all.bars.push_back({summary_row_name(*in), std::isfinite(speedup) ? speedup : 0, mode_color("pipelined"),
                            {std::isfinite(speedup) ? format_fixed(speedup, 2) + "x" : "n/a"}});
        const auto c = run_caption(in->doc, in->source);
        caption.push_back(summary_row_name(*in) + ": " + c[0] + " " + c[1]);
      }
      b.figure("summary-speedup", all.title, chart::render(all), caption, true);
    }
    b.close_section();
  }

  std::size_t run_number = 0, sweep_number = 0, trace_number = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    const std::string id = "input-" + std::to_string(i + 1);
    switch (in.kind) {
      case InputKind::Run:
        run_section(b, in, ++run_number, id);
        toc.push_back({id, "Run " + std::to_string(run_number) + ": " + summary_row_name(in)});
        break;
      case InputKind::Sweep:
        sweep_section(b, in, ++sweep_number, id);
        toc.push_back({id, "Sweep " + std::to_string(sweep_number) + ": " + in.sweep_name});
        break;
      case InputKind::Trace:
        trace_section(b, in, ++trace_number, id, inputs);
        toc.push_back({id, "Trace " + std::to_string(trace_number) + ": " + in.source});
        break;
    }
  }
  return b.finish(toc, intro_html, intro_md);
}

void write_report(const Document& document, const std::string& dir, bool overwrite) {
  const fs::path root(dir);
  const fs::path html = root / "report.html", markdown = root / "report.md", figures = root / "figures";
  std::error_code ec;
  if (!overwrite)
    for (const fs::path& p : {html, markdown})
      if (fs::symlink_status(p, ec).type() != fs::file_type::not_found)
        throw InputError(p.string(), "/", "output.exists", "a report is already there; pass --force to overwrite it");
  fs::create_directories(figures, ec);
  if (ec) throw InputError(dir, "/", "output.unwritable", "cannot create the folder: " + ec.message());
  // Figures go into figures/ itself, never through a link to somewhere else.
  if (fs::is_symlink(figures, ec) || !fs::is_directory(figures, ec))
    throw InputError(figures.string(), "/", "output.not-regular",
                     "is not a folder ipusim can write figures into (a link or a file?); remove it");
  std::set<std::string> produced;
  for (const Figure& f : document.figures) {
    replace_file((root / f.file).string(), f.svg, true);
    produced.insert(fs::path(f.file).filename().string());
  }
  if (overwrite) {  // drop figures of an earlier report that this one no longer has
    for (const auto& entry : fs::directory_iterator(figures, ec)) {
      const std::string name = entry.path().filename().string();
      const bool ours = name.size() > 7 && name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' &&
                        name[2] == '-' && entry.path().extension() == ".svg";
      if (ours && !produced.count(name)) fs::remove(entry.path(), ec);
    }
  }
  replace_file(markdown.string(), document.markdown, true);
  replace_file(html.string(), document.html, true);
}

} // namespace ipusim::report
