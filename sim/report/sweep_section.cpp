#include "sim/report/sections.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/base/units.hpp"
#include "sim/report/findings.hpp"
#include "sim/report/page.hpp"
#include "sim/report/run_fields.hpp"
#include "sim/report/svg_chart.hpp"
#include "sim/sweep/sweep_results.hpp"

namespace ipusim::report {

namespace {

namespace fs = std::filesystem;

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
    if (const std::string f = str(p->report, "scenarioFile"); !f.empty()) scenario += " (" + f + ")";
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

// The x axis: the varying axis with the most values; any other varying axes split
// the points into one pair of charts per combination of their values.
const AxisInfo* choose_x_axis(const std::vector<const AxisInfo*>& varying) {
  auto all_numbers = [](const AxisInfo* a) {
    return std::all_of(a->values.begin(), a->values.end(), [](const Json& v) { return v.is_number(); });
  };
  const AxisInfo* x_axis = nullptr;
  for (const AxisInfo* a : varying)
    if (!x_axis || a->values.size() > x_axis->values.size() ||
        (a->values.size() == x_axis->values.size() && all_numbers(a) && !all_numbers(x_axis)))
      x_axis = a;
  return x_axis;
}

struct OtherAxes {
  std::vector<std::string> companions;  // keys that label x
  std::set<std::string> group_keys;     // keys that split the points into groups
};

// Axes that move with x (zipped with it: one value per x value) label x; the others
// split the points into groups.
OtherAxes classify_other_axes(const Input& in, const std::vector<const AxisInfo*>& varying,
                              const AxisInfo* x_axis) {
  OtherAxes other;
  for (const AxisInfo* a : varying) {
    if (a == x_axis) continue;
    std::map<std::string, std::set<std::string>> values_per_x;
    for (const SweepPoint& p : in.points)
      values_per_x[p.axes.value(x_axis->key, Json()).dump()].insert(p.axes.value(a->key, Json()).dump());
    bool follows = true;
    for (const auto& [x, values] : values_per_x) follows = follows && values.size() == 1;
    if (follows) other.companions.push_back(a->key);
    else other.group_keys.insert(a->key);
  }
  return other;
}

// How the points sit on the x axis of the sweep's charts.
struct XAxis {
  const AxisInfo* axis = nullptr;  // null: the points are placed by their index
  std::string key;                 // the axis label
  bool numeric = true;
  bool log = false;
  std::vector<chart::Tick> ticks;

  double of(const SweepPoint& p) const {
    if (!axis) return static_cast<double>(p.index);
    const Json v = p.axes.value(axis->key, Json());
    if (numeric) return v.is_number() ? v.get<double>() : kNaN;
    return static_cast<double>(std::find(axis->values.begin(), axis->values.end(), v) - axis->values.begin());
  }
};

XAxis make_x_axis(const AxisInfo* x_axis, const std::vector<std::string>& companions) {
  XAxis x;
  x.axis = x_axis;
  x.key = x_axis ? x_axis->key : "point";
  for (const std::string& k : companions) x.key += " with " + k;
  if (x_axis)
    for (const Json& v : x_axis->values) x.numeric = x.numeric && v.is_number();
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  if (x_axis && x.numeric)
    for (const Json& v : x_axis->values) x_lo = std::min(x_lo, v.get<double>()), x_hi = std::max(x_hi, v.get<double>());
  x.log = x_axis && x.numeric && x_lo > 0 && x_hi / x_lo >= 16;
  if (x_axis && (!x.numeric || x_axis->values.size() <= 12))
    for (std::size_t i = 0; i < x_axis->values.size(); ++i)
      x.ticks.push_back(
          {x.numeric ? x_axis->values[i].get<double>() : static_cast<double>(i), tick_label(x_axis->values[i])});
  return x;
}

std::vector<std::string> sweep_modes(const Input& in) {
  std::vector<std::string> modes;
  for (const char* m : {"sharded", "pipelined"})
    for (const SweepPoint& p : in.points)
      if (p.ok && run_of(p.report, m) && std::find(modes.begin(), modes.end(), m) == modes.end()) modes.push_back(m);
  for (const SweepPoint& p : in.points)
    if (p.ok)
      for (const Json& r : p.report["runs"])
        if (const std::string m = str(r, "mode"); std::find(modes.begin(), modes.end(), m) == modes.end())
          modes.push_back(m);
  return modes;
}

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
const std::vector<std::string> kDashes = {"", "7 4", "2 3", "10 3 2 3"};
constexpr std::size_t kMaxPanels = 12;

Panel overlay_panel(const Input& in, const AxisInfo& overlay) {
  Panel panel;
  panel.suffix = " by " + overlay.key;
  for (std::size_t v = 0; v < overlay.values.size(); ++v) {
    Curve curve{", " + display_value(overlay.values[v]), kDashes[v], {}};
    for (const SweepPoint& p : in.points)
      if (p.axes.value(overlay.key, Json()) == overlay.values[v]) curve.points.push_back(&p);
    panel.curves.push_back(curve);
  }
  return panel;
}

std::vector<Panel> sweep_panels(const Input& in, const std::vector<const AxisInfo*>& varying,
                                const std::set<std::string>& other_keys) {
  std::vector<Panel> panels;
  const AxisInfo* overlay = nullptr;
  if (other_keys.size() == 1)
    for (const AxisInfo* a : varying)
      if (a->key == *other_keys.begin() && a->values.size() <= kDashes.size()) overlay = a;
  if (overlay) {
    panels.push_back(overlay_panel(in, *overlay));
    return panels;
  }
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
  return panels;
}

// The highest throughput and bubble over every point and mode.
std::pair<double, double> sweep_highest(const Input& in) {
  std::pair<double, double> highest{0, 0};
  for (const SweepPoint& p : in.points)
    if (p.ok)
      for (const Json& r : array_at(p.report, "runs")) {
        highest.first = std::max(highest.first, num(r, "throughputSamplesPerSecond", 0));
        highest.second = std::max(highest.second, num(r, "bubbleFraction", 0));
      }
  return highest;
}

// One mode's line along one curve; which: 0 throughput, 1 bubble.
chart::LineSeries mode_series(const Curve& curve, const std::string& mode, int which, const XAxis& x_axis) {
  chart::LineSeries s{mode, mode_color(mode), {}, curve.dash};
  for (const SweepPoint* p : curve.points) {
    const double x = x_axis.of(*p);
    if (!std::isfinite(x)) continue;
    const Json* r = p->ok ? run_of(p->report, mode) : nullptr;
    const double y = r ? num(*r, which == 0 ? "throughputSamplesPerSecond" : "bubbleFraction") : kNaN;
    s.points.push_back({x, std::isfinite(y) ? std::optional<double>(y) : std::nullopt, r && fits_in_memory(*r) == 0});
    if (r && s.name == mode) s.name = mode_label(*r);
  }
  s.name += curve.suffix;
  return s;
}

chart::LineChart panel_chart(const Panel& panel, const std::vector<const SweepPoint*>& all, int which,
                             const XAxis& x_axis, const std::vector<std::string>& modes,
                             std::pair<double, double> highest) {
  chart::LineChart c;
  c.title = std::string(which == 0 ? "Throughput" : "Bubble fraction") + " vs " + x_axis.key + panel.suffix;
  c.x_label = x_axis.key;
  c.y_label = which == 0 ? "throughput (samples/s)" : "bubble (idle share of IPU-time)";
  if (which == 1) c.y_format = percent_tick;
  c.y_max = which == 0 ? highest.first : highest.second;  // one scale for every panel of the sweep
  c.log_x = x_axis.log;
  c.x_ticks = x_axis.ticks;
  for (const Curve& curve : panel.curves)
    for (const std::string& mode : modes) c.series.push_back(mode_series(curve, mode, which, x_axis));
  for (const SweepPoint* p : all)
    if (!p->ok && std::isfinite(x_axis.of(*p)) &&
        std::find(c.error_x.begin(), c.error_x.end(), x_axis.of(*p)) == c.error_x.end())
      c.error_x.push_back(x_axis.of(*p));
  return c;
}

// A throughput and a bubble chart per panel, the first kMaxPanels panels only.
void panel_figures(Builder& b, const Input& in, std::vector<Panel>& panels, const XAxis& x_axis,
                   const std::vector<std::string>& modes) {
  const std::pair<double, double> highest = sweep_highest(in);
  for (std::size_t g = 0; g < panels.size() && g < kMaxPanels; ++g) {
    std::vector<const SweepPoint*> all;
    for (Curve& curve : panels[g].curves) {
      std::stable_sort(curve.points.begin(), curve.points.end(),
                       [&](const SweepPoint* a, const SweepPoint* c) { return x_axis.of(*a) < x_axis.of(*c); });
      all.insert(all.end(), curve.points.begin(), curve.points.end());
    }
    const auto caption = sweep_caption(in, all, x_axis.key, panels[g].fixed);
    for (int which = 0; which < 2; ++which) {
      const chart::LineChart c = panel_chart(panels[g], all, which, x_axis, modes, highest);
      b.figure(in.sweep_name + "-" + (which == 0 ? "throughput" : "bubble") + panels[g].suffix, c.title,
               chart::render(c), caption);
    }
  }
}

// A sweep over execution.schedule: bubble against stash, one point per point and schedule.
void schedule_figure(Builder& b, const Input& in, const std::string& x_key) {
  std::vector<const Json*> pipelined;
  std::vector<const SweepPoint*> every;
  for (const SweepPoint& p : in.points) {
    every.push_back(&p);
    if (p.ok)
      for (const Json& r : array_at(p.report, "runs")) pipelined.push_back(&r);
  }
  if (const auto schedules = schedule_memory_chart(in.sweep_name, pipelined))
    b.figure(in.sweep_name + "-schedules", schedules->title, chart::render(*schedules),
             sweep_caption(in, every, x_key, ""));
}

std::vector<std::string> point_row(const SweepPoint& p, const std::vector<AxisInfo>& axes,
                                   const std::vector<std::string>& modes, bool both) {
  std::vector<std::string> cells{std::to_string(p.index), p.id};
  for (const AxisInfo& a : axes) cells.push_back(p.axes.contains(a.key) ? scalar_text(p.axes[a.key]) : "-");
  cells.push_back(p.ok ? (sweep::out_of_memory(p.report) ? "out of memory" : "ok") : "error");
  for (const std::string& m : modes) {
    const Json* r = p.ok ? run_of(p.report, m) : nullptr;
    cells.push_back(r ? seconds(num(*r, "stepTimeSeconds")) : "-");
    cells.push_back(r ? rate(num(*r, "throughputSamplesPerSecond")) : "-");
    cells.push_back(r ? percent(num(*r, "bubbleFraction")) : "-");
  }
  if (both) {
    const double s = p.ok ? speedup_of(p.report) : kNaN;
    cells.push_back(std::isfinite(s) ? format_fixed(s, 2) + "x" : "-");
  }
  return cells;
}

// The table of every point and, if any failed, the table of failed points.
void point_tables(Builder& b, const Input& in, const std::vector<AxisInfo>& axes,
                  const std::vector<std::string>& modes) {
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
    t.rows.push_back(point_row(p, axes, modes, both));
    if (!p.ok) errors.rows.push_back({std::to_string(p.index), p.id, axes_text(p.axes), p.error});
  }
  b.table(t, "Sweep points: " + in.sweep_name);
  if (!errors.rows.empty()) b.table(errors, "Failed points: " + in.sweep_name);
}

} // namespace

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
  const AxisInfo* x_axis = choose_x_axis(varying);
  const OtherAxes other = classify_other_axes(in, varying, x_axis);
  const XAxis x = make_x_axis(x_axis, other.companions);
  const std::vector<std::string> modes = sweep_modes(in);

  std::vector<Panel> panels = sweep_panels(in, varying, other.group_keys);
  if (panels.size() > kMaxPanels)
    b.paragraph("Only the first " + std::to_string(kMaxPanels) + " of " + std::to_string(panels.size()) +
                    " combinations of the other axes are plotted; the table lists every point.",
                "note");
  panel_figures(b, in, panels, x, modes);
  schedule_figure(b, in, x.key);
  point_tables(b, in, axes, modes);
  b.close_section();
}

} // namespace ipusim::report
