// Bubble against stash memory, one point per pipeline schedule, with the stash that fits:
// for a run document of `run --schedules` and for a sweep over execution.schedule.
#include "sim/report/sections.hpp"

#include <algorithm>
#include <cmath>

#include "sim/base/units.hpp"
#include "sim/report/run_fields.hpp"

namespace ipusim::report {

namespace {

double stash_of(const Json& ipu) {
  for (const Json& c : array_at(ipu, "categories"))
    if (str(c, "name") == "stash") return num(c, "bytes", 0);
  return 0;
}

// The virtual IPU holding the most stash (the first of equals).
const Json* largest_stash_ipu(const Json& run) {
  const Json* out = nullptr;
  for (const Json& m : array_at(object_at(run, "memory"), "ipus"))
    if (!out || stash_of(m) > stash_of(*out)) out = &m;
  return out;
}

constexpr double kMiB = 1024.0 * 1024;

} // namespace

std::size_t distinct_schedules(const std::vector<const Json*>& runs) {
  std::vector<std::string> names;
  for (const Json* r : runs)
    if (str(*r, "mode") == "pipelined" && std::find(names.begin(), names.end(), str(*r, "schedule")) == names.end())
      names.push_back(str(*r, "schedule"));
  return names.size();
}

std::optional<chart::LineChart> schedule_memory_chart(const std::string& name, const std::vector<const Json*>& runs) {
  if (distinct_schedules(runs) < 2) return std::nullopt;
  chart::LineChart c;
  c.title = "Bubble against stash per schedule: " + name;
  c.x_label = "stash on the virtual IPU holding the most (MiB)";
  c.y_label = "bubble (idle share of IPU-time)";
  c.y_format = percent_tick;
  const Json* first = nullptr;
  for (const Json* r : runs) {
    const Json* ipu = str(*r, "mode") == "pipelined" ? largest_stash_ipu(*r) : nullptr;
    const double bubble = num(*r, "bubbleFraction");
    if (!ipu || !std::isfinite(bubble)) continue;
    if (!first) first = r;
    const std::string schedule = str(*r, "schedule");
    auto series = std::find_if(c.series.begin(), c.series.end(),
                               [&](const chart::LineSeries& s) { return s.name == schedule; });
    if (series == c.series.end()) {
      c.series.push_back({schedule, chart::palette(c.series.size()), {}});
      series = c.series.end() - 1;
    }
    series->points.push_back({stash_of(*ipu) / kMiB, bubble, fits_in_memory(*r) == 0});
  }
  if (c.series.size() < 2) return std::nullopt;
  // The stash that fits on that IPU beside the rest of the first run's memory: the verdict
  // itself is per tile (hollow markers), this line is the IPU's SRAM in total. Far beyond
  // the points it would squash them together at the left: then the title names it.
  double most = 0;
  for (const chart::LineSeries& s : c.series)
    for (const chart::LinePoint& p : s.points) most = std::max(most, p.x);
  if (const Json* ipu = largest_stash_ipu(*first)) {
    const double room = num(*ipu, "capacityBytes") - (num(*ipu, "totalBytes") - stash_of(*ipu));
    const std::string text = "stash that fits: " + format_bytes(std::max(room, 0.0)) + " on vIPU " +
                             std::to_string(integer(*ipu, "virtualIpu"));
    if (std::isfinite(room) && room / kMiB <= 4 * most) c.x_lines.push_back({room / kMiB, text});
    else if (std::isfinite(room)) c.title += " (" + text + ", far right of these points)";
  }
  return c;
}

} // namespace ipusim::report
