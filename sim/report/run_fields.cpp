#include "sim/report/run_fields.hpp"

#include <cmath>
#include <cstdio>

#include "sim/base/units.hpp"
#include "sim/report/svg_chart.hpp"

namespace ipusim::report {

const Json* field(const Json& j, const std::string& key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it != j.end() ? &*it : nullptr;
}

double num(const Json& j, const std::string& key, double fallback) {
  const Json* v = field(j, key);
  return v && v->is_number() ? v->get<double>() : fallback;
}

std::string str(const Json& j, const std::string& key, const std::string& fallback) {
  const Json* v = field(j, key);
  if (!v) return fallback;
  return v->is_string() ? v->get<std::string>() : v->dump();
}

const Json& object_at(const Json& j, const std::string& key) {
  static const Json empty = Json::object();
  const Json* v = field(j, key);
  return v && v->is_object() ? *v : empty;
}

const Json& array_at(const Json& j, const std::string& key) {
  static const Json empty = Json::array();
  const Json* v = field(j, key);
  return v && v->is_array() ? *v : empty;
}

std::int64_t integer(const Json& j, const std::string& key, std::int64_t fallback) {
  const Json* v = field(j, key);
  return v && v->is_number_integer() ? v->get<std::int64_t>() : fallback;
}

std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::fabs(d) < 1e15 && d == std::floor(d)) return format_fixed(d, 0);
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%.6g", d);
    return buffer;
  }
  return v.dump();
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }
std::string seconds(double s) { return std::isfinite(s) ? format_seconds(s) : "-"; }
std::string percent(double f) { return std::isfinite(f) ? format_percent(f) : "-"; }
std::string rate(double r) { return std::isfinite(r) ? format_rate(r, "samples/s") : "-"; }
std::string bytes(double b) { return std::isfinite(b) ? format_bytes(b) : "-"; }

std::string percent_tick(double f) {
  const double p = f * 100;
  return (std::fabs(p - std::round(p)) < 1e-6 ? format_fixed(p, 0) : format_fixed(p, 1)) + " %";
}

std::string mode_label(const Json& run) {
  const std::string mode = str(run, "mode");
  const std::string schedule = str(run, "schedule");
  if (mode == "pipelined" && !schedule.empty()) return mode + " (" + schedule + ")";
  return mode;
}

std::string mode_color(const std::string& mode) {
  if (mode == "sharded") return chart::palette(0);
  if (mode == "pipelined") return chart::palette(1);
  return chart::palette(2);
}

std::vector<const Json*> ordered_runs(const Json& doc) {
  std::vector<const Json*> out;
  const Json& runs = array_at(doc, "runs");
  for (const char* mode : {"sharded", "pipelined"})
    for (const Json& r : runs)
      if (str(r, "mode") == mode) out.push_back(&r);
  for (const Json& r : runs)
    if (str(r, "mode") != "sharded" && str(r, "mode") != "pipelined") out.push_back(&r);
  return out;
}

const Json* run_of(const Json& doc, const std::string& mode) {
  for (const Json& r : array_at(doc, "runs"))
    if (str(r, "mode") == mode) return &r;
  return nullptr;
}

double speedup_of(const Json& doc) {
  const double given = num(doc, "speedupPipelinedOverSharded");
  if (std::isfinite(given)) return given;
  const Json* s = run_of(doc, "sharded");
  const Json* p = run_of(doc, "pipelined");
  if (!s || !p) return kNaN;
  const double ps = num(*p, "stepTimeSeconds");
  return ps > 0 ? num(*s, "stepTimeSeconds") / ps : kNaN;
}

Shares shares_of(const Json& run) {
  Shares s;
  const Json& ipus = array_at(run, "ipus");
  const double total = num(run, "stepTimeSeconds", 0) * static_cast<double>(ipus.size());
  if (!(total > 0)) return s;
  s = {0, 0, 0, 0, 0};
  for (const Json& m : ipus) {
    s.busy += num(m, "busySeconds", 0) / total;
    s.host += num(m, "hostIoSeconds", 0) / total;
    s.exchange += num(m, "exchangeSeconds", 0) / total;
    s.sync += num(m, "syncSeconds", 0) / total;
    s.idle += num(m, "idleSeconds", 0) / total;
  }
  return s;
}

const std::vector<TimePart>& time_parts() {
  static const std::vector<TimePart> parts = {
      {"compute", "busySeconds", "compute", false},
      {"hostIo", "hostIoSeconds", "host I/O", false},
      {"streamingMemory", "streamingMemorySeconds", "Streaming Memory", false},
      {"exchange", "exchangeSeconds", "copies", false},
      {"sync", "syncSeconds", "syncs", false},
      {"idleFillFlush", "fillFlushSeconds", "idle: fill and flush", true},
      {"idleImbalance", "imbalanceSeconds", "idle: imbalance", true},
      {"idleCopyWait", "copyWaitSeconds", "idle: waiting on copies", true},
      {"idleUpdateWait", "updateWaitSeconds", "idle: waiting on updates", true},
      {"idleTurnWait", "turnWaitSeconds", "idle: waiting for its turn", true}};
  return parts;
}

double time_share(const Json& run, const TimePart& part) {
  const Json* shares = field(run, "timeShares");
  return shares ? num(*shares, part.key) : kNaN;
}

double ipu_seconds(const Json& ipu, const TimePart& part) {
  return num(part.idle ? object_at(ipu, "idle") : ipu, part.ipu_key);
}

int fits_in_memory(const Json& run) {
  const Json* fits = field(object_at(run, "memory"), "fits");
  return fits && fits->is_boolean() ? (fits->get<bool>() ? 1 : 0) : -1;
}

std::string execution_text(const Json& execution, const std::set<std::string>& skip) {
  if (!execution.is_object() || execution.empty()) return "not recorded";
  std::string out;
  for (const auto& [key, value] : execution.items()) {
    if (skip.count(key)) continue;
    if (!out.empty()) out += ", ";
    out += key + "=" + scalar_text(value);
  }
  return out.empty() ? "-" : out;
}

} // namespace ipusim::report
