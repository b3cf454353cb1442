#include "sim/report/sections.hpp"

#include <algorithm>
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

namespace ipusim::report {

namespace {

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
  static const std::set<std::string> identity_keys = {"scenario", "scenarioFile", "model", "config"};
  static const std::set<std::string> skipped = {"generator", "timeUnit", "execution"};
  std::string identity, rest;
  if (other.is_object()) {
    std::string scenario = str(other, "scenario");
    if (const std::string f = str(other, "scenarioFile"); !f.empty()) scenario += " (" + f + ")";
    if (!scenario.empty()) identity = "Scenario: " + scenario;
    for (const char* key : {"model", "config"})
      if (other.contains(key)) identity += std::string(identity.empty() ? "" : "; ") + key + ": " + scalar_text(other[key]);
    for (const auto& [key, value] : other.items()) {
      if (identity_keys.count(key) || skipped.count(key)) continue;
      std::string text;
      if (value.is_object() && value.contains(process) && !value[process].is_structured()) {
        // Per-process values, keyed by the process name (step_time_s, events left out).
        const Json& v = value[process];
        text = key == "stepTimeSeconds" && v.is_number() ? "step time " + format_seconds(v.get<double>())
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
  if (!other.is_object() || !field(other, "stepTimeSeconds")) return nullptr;
  const double step = num(object_at(other, "stepTimeSeconds"), process);
  if (!std::isfinite(step)) return nullptr;
  for (const Input& in : inputs) {
    if (in.kind != InputKind::Run || str(in.doc, "scenario") != str(other, "scenario")) continue;
    for (const Json& r : in.doc["runs"])
      if (mode_label(r) == process && std::fabs(num(r, "stepTimeSeconds", 0) - step) <= 1e-9 * std::fabs(step))
        return &in;
  }
  return nullptr;
}

// One process of a trace: its tracks in the trace's order, its events on them as a Gantt
// chart, and each track's time per category.
struct ProcessTimeline {
  std::vector<Track> tracks;
  chart::GanttChart chart;
  std::vector<std::map<std::string, double>> totals;  // per track: category -> seconds
  std::set<std::string> categories;
  double span = 0;  // seconds from the first event's start to the last one's end
  std::vector<const TraceData::Slice*> slice_of;  // per Gantt event: its slice, for its label
};

// The process's tracks, in the trace's own order (thread_sort_index), else by thread id, and
// the row of each thread id.
std::vector<Track> process_tracks(const TraceData& trace, std::uint32_t pid, std::map<std::uint32_t, std::size_t>& row_of) {
  std::vector<Track> tracks;
  for (const TraceData::Slice& s : trace.slices)
    if (s.pid == pid && row_of.emplace(s.tid, tracks.size()).second) tracks.push_back({s.tid, ""});
  auto order = [&](const Track& t) {
    auto it = trace.thread_order.find({pid, t.tid});
    return it == trace.thread_order.end() ? std::numeric_limits<double>::infinity() : it->second;
  };
  std::sort(tracks.begin(), tracks.end(), [&](const Track& a, const Track& c) {
    if (order(a) != order(c)) return order(a) < order(c);
    return tid_less(trace.ids[a.tid], trace.ids[c.tid]);
  });
  for (std::size_t r = 0; r < tracks.size(); ++r) {
    Track& t = tracks[r];
    row_of[t.tid] = r;
    auto it = trace.thread_names.find({pid, t.tid});
    t.name = it != trace.thread_names.end() && !it->second.empty() ? it->second : "track " + scalar_text(trace.ids[t.tid]);
  }
  return tracks;
}

ProcessTimeline process_timeline(const TraceData& trace, std::uint32_t pid) {
  ProcessTimeline p;
  std::map<std::uint32_t, std::size_t> row_of;  // tid -> row
  p.tracks = process_tracks(trace, pid, row_of);
  for (const Track& t : p.tracks) p.chart.rows.push_back(t.name);
  double t0 = std::numeric_limits<double>::infinity();
  std::size_t slice_count = 0;
  for (const TraceData::Slice& s : trace.slices)
    if (s.pid == pid) {
      t0 = std::min(t0, s.ts);
      ++slice_count;
    }
  p.totals.resize(p.tracks.size());
  p.chart.events.reserve(slice_count);
  p.slice_of.reserve(slice_count);
  for (const TraceData::Slice& s : trace.slices) {
    if (s.pid != pid) continue;
    const std::size_t row = row_of[s.tid];
    const double start = (s.ts - t0) * 1e-6;
    const double duration = std::max(0.0, s.dur) * 1e-6;
    const std::string& category = trace.categories[s.category];
    p.chart.events.push_back({row, start, start + duration, category, ""});
    p.slice_of.push_back(&s);
    p.totals[row][category] += duration;
    p.categories.insert(category);
    p.span = std::max(p.span, start + duration);
  }
  return p;
}

Table track_time_table(const ProcessTimeline& p) {
  Table t;
  t.header.push_back("track");
  for (const auto& c : p.categories) t.header.push_back(c + " time");
  for (std::size_t r = 0; r < p.tracks.size(); ++r) {
    std::vector<std::string> cells{p.tracks[r].name};
    for (const auto& c : p.categories) {
      auto it = p.totals[r].find(c);
      cells.push_back(it == p.totals[r].end() ? "-" : format_seconds(it->second));
    }
    t.rows.push_back(cells);
  }
  return t;
}

} // namespace

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
    ProcessTimeline p = process_timeline(trace, pid);
    chart::GanttChart& g = p.chart;
    g.label_of = [&](std::size_t i) {
      const TraceData::Slice& s = *p.slice_of[i];
      return trace.name(s) + " (" + trace.categories[s.category] + ", " + format_seconds(std::max(0.0, s.dur) * 1e-6) +
             ")";
    };
    auto pn = trace.process_names.find(pid);
    const std::string process =
        pn != trace.process_names.end() && !pn->second.empty() ? pn->second : "pid " + trace.ids[pid].dump();
    const std::string scenario = str(other, "scenario");
    g.title = "Timeline of one step: " + (scenario.empty() ? "" : scenario + ", ") + process;
    std::vector<TrackTime> track_times;
    for (std::size_t r = 0; r < p.tracks.size(); ++r) track_times.push_back({p.tracks[r].name, p.totals[r]});
    b.findings(trace_findings(process, track_times, p.span));
    const std::size_t drawn = chart::gantt_rects(g).size();
    auto lines = other_data_caption(other, in.source, process);
    if (const Input* run = matching_run(inputs, other, process))
      lines[lines.size() - 1] = "Execution: " + execution_text(object_at(run->doc, "execution")) +
                                " (from run input " + run->source + ", same scenario and step time). Source: " +
                                in.source + ".";
    lines.insert(lines.begin(), std::to_string(g.events.size()) + " events on " + std::to_string(p.tracks.size()) +
                                    " tracks, drawn as " + std::to_string(drawn) +
                                    " rectangles: adjacent same-category events narrower than a pixel are merged, and a merged "
                                    "bar is drawn faded by the share of its time that is busy.");
    b.figure("timeline-" + (scenario.empty() ? "" : scenario + "-") + process, g.title, chart::render(g), lines,
             true);
    b.table(track_time_table(p), "Time per track and category (sum of event durations): " +
                                     (scenario.empty() ? "" : scenario + ", ") + process);
  }
  b.close_section();
}

} // namespace ipusim::report
