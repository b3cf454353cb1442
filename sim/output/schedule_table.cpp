#include "sim/output/schedule_table.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "sim/output/json_report.hpp"
#include "sim/base/units.hpp"

namespace ipusim {

using Json = nlohmann::json;

Json schedules_json(const Scenario& base, const ScheduleRuns& runs) {
  const ScheduleRun& first = runs.ran.front();
  Json doc = report_json(first.scenario, first.simulation);
  doc["execution"]["schedule"] = base.execution.schedule;
  doc["execution"]["modes"] = Json::array({"pipelined"});
  Json all = Json::array(), plans = Json::object();
  for (const ScheduleRun& r : runs.ran) {
    for (const ModeRun& run : r.simulation.runs) all.push_back(run_json(run.metrics));
    if (Json plan = plan_json(r.scenario, r.simulation.plan); plan != doc["plan"])
      plans[r.scenario.execution.schedule] = std::move(plan);
  }
  doc["runs"] = std::move(all);
  doc["schedules"] = runs.asked;
  Json refused = Json::array();
  for (const ScheduleRefusal& f : runs.refused)
    refused.push_back({{"schedule", f.schedule}, {"rule", f.rule}, {"file", f.file}, {"pointer", f.pointer},
                       {"message", f.message}});
  doc["schedulesRefused"] = std::move(refused);
  if (!plans.empty()) doc["schedulePlans"] = std::move(plans);
  return doc;
}

namespace {

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

double number_at(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : NAN;
}

const Json& memory_ipus(const Json& run) {
  static const Json none = Json::array();
  const Json::json_pointer p("/memory/ipus");
  return run.contains(p) && run.at(p).is_array() ? run.at(p) : none;
}

double category_bytes(const Json& ipu, const std::string& name) {
  if (ipu.contains("categories") && ipu.at("categories").is_array())
    for (const Json& c : ipu.at("categories"))
      if (c.value("name", "") == name) return number_at(c, "bytes");
  return 0;
}

// "12.5 / 8.0 / 0 MiB": one figure per virtual IPU, in the unit of the largest.
std::string per_ipu(const std::vector<double>& bytes) {
  if (bytes.empty()) return "-";
  const double top = *std::max_element(bytes.begin(), bytes.end());
  const double unit = top >= 1024.0 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : top >= 1024.0 * 1024 ? 1024.0 * 1024 : 1024.0;
  const char* name = unit > 1024.0 * 1024 ? " GiB" : unit > 1024.0 ? " MiB" : " KiB";
  std::string out;
  for (double b : bytes) out += (out.empty() ? "" : " / ") + (b == 0 ? std::string("0") : format_fixed(b / unit, 1));
  return out + name;
}

std::vector<double> ipu_figures(const Json& run, bool stash) {
  std::vector<double> out;
  for (const Json& m : memory_ipus(run)) out.push_back(stash ? category_bytes(m, "stash") : number_at(m, "totalBytes"));
  return out;
}

bool fits(const Json& run) {
  const Json::json_pointer p("/memory/fits");
  return !run.contains(p) || !run.at(p).is_boolean() || run.at(p).get<bool>();
}

} // namespace

std::string render_schedule_table(const Json& doc) {
  std::vector<std::vector<std::string>> rows{
      {"schedule", "step time", "throughput", "bubble", "stash per vIPU", "memory per vIPU", "fits", "note"}};
  std::vector<std::string> verdicts;
  const Json* fastest = nullptr;
  const Json* fastest_fitting = nullptr;
  const Json none = Json::array();
  const Json& runs = doc.contains("runs") ? doc.at("runs") : none;
  const Json& refused = doc.contains("schedulesRefused") ? doc.at("schedulesRefused") : none;
  for (const Json& name : doc.value("schedules", Json::array())) {
    const std::string schedule = name.get<std::string>();
    const auto run =
        std::find_if(runs.begin(), runs.end(), [&](const Json& r) { return r.value("schedule", "") == schedule; });
    if (run == runs.end()) {
      std::string note = "refused";
      for (const Json& f : refused)
        if (f.value("schedule", "") == schedule)
          note = "refused [" + f.value("rule", "") + "]: " + f.value("message", "");
      rows.push_back({schedule, "-", "-", "-", "-", "-", "-", note});
      continue;
    }
    const Json& r = *run;
    const bool ok = fits(r);
    const double step = number_at(r, "stepTimeSeconds");
    if (!fastest || step < number_at(*fastest, "stepTimeSeconds")) fastest = &r;
    if (ok && (!fastest_fitting || step < number_at(*fastest_fitting, "stepTimeSeconds"))) fastest_fitting = &r;
    if (r.contains("memory") && r.at("memory").contains("verdicts"))
      for (const Json& v : r.at("memory").at("verdicts"))
        verdicts.push_back("OUT OF MEMORY (" + schedule + "): " + v.get<std::string>());
    rows.push_back({schedule, format_seconds(step), format_rate(number_at(r, "throughputSamplesPerSecond"), "samples/s"),
                    format_percent(number_at(r, "bubbleFraction")), per_ipu(ipu_figures(r, true)),
                    per_ipu(ipu_figures(r, false)), ok ? "yes" : "no",
                    r.value("whatIf", false) ? "what-if schedule" : ""});
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c + 1 < row.size(); ++c) width[c] = std::max(width[c], row[c].size() + 1);
  std::ostringstream out;
  out << "Scenario " << doc.value("scenario", "") << ": model " << doc.value("model", "") << " on "
      << doc.value("config", "") << ", pipelined under " << rows.size() - 1 << " schedule(s), "
      << runs.size() << " ran, " << rows.size() - 1 - runs.size() << " refused\n\n";
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += c + 1 < row.size() ? pad(row[c], width[c]) : row[c];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  if (!verdicts.empty()) out << "\n";
  for (const std::string& v : verdicts) out << v << "\n";
  if (fastest) {
    out << "\nFastest: " << fastest->value("schedule", "") << " (" << format_seconds(number_at(*fastest, "stepTimeSeconds"))
        << ")";
    if (fastest_fitting && fastest_fitting != fastest)
      out << "; fastest that fits: " << fastest_fitting->value("schedule", "") << " ("
          << format_seconds(number_at(*fastest_fitting, "stepTimeSeconds")) << ")";
    else if (!fastest_fitting) out << "; none of them fits";
    out << ".\n";
  }
  return out.str();
}

} // namespace ipusim
