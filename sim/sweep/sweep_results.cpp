#include "sim/sweep/sweep_results.hpp"

#include <signal.h>

#include <filesystem>

#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"

namespace ipusim::sweep {

namespace {

std::string trimmed(const std::string& text) {
  const auto end = text.find_last_not_of(" \t\r\n");
  return end == std::string::npos ? std::string() : text.substr(0, end + 1);
}

Json axes_object(const Point& point) {
  Json axes = Json::object();
  for (const Override& o : point.axes) axes[o.path] = o.value;
  return axes;
}

// A CSV cell for a JSON value: strings as they are, numbers as JSON prints them (the
// shortest text that reads back to the same double), missing values empty.
std::string cell(const Json* value) {
  if (value == nullptr || value->is_null()) return "";
  if (value->is_string()) return csv_field(value->get<std::string>());
  return csv_field(value->dump());
}

const Json* find(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

constexpr const char* kModes[] = {"sharded", "pipelined", "phased"};

std::string signal_name(int signal) {
  switch (signal) {
  case SIGSEGV: return " (SIGSEGV)";
  case SIGABRT: return " (SIGABRT)";
  case SIGBUS: return " (SIGBUS)";
  case SIGFPE: return " (SIGFPE)";
  case SIGILL: return " (SIGILL)";
  default: return "";
  }
}

} // namespace

bool out_of_memory(const Json& report) {
  const Json* runs = find(report, "runs");
  if (runs == nullptr || !runs->is_array()) return false;
  for (const Json& run : *runs) {
    const Json* memory = find(run, "memory");
    const Json* fits = memory ? find(*memory, "fits") : nullptr;
    if (fits && fits->is_boolean() && !fits->get<bool>()) return true;
  }
  return false;
}

bool interrupted(const ChildResult& child) {
  return child.signal == SIGINT || child.signal == SIGTERM || child.signal == SIGHUP || child.signal == SIGKILL;
}

Json point_record(const Point& point, const std::vector<std::string>& command, const ChildResult& child) {
  Json record = {{"point", point.index},
                 {"id", point.id},
                 {"axes", axes_object(point)},
                 {"exitCode", child.exit_code},
                 {"seconds", child.seconds},
                 {"command", command},
                 {"evaluator", "engine"}};
  std::string error = trimmed(child.err);
  if (child.exit_code == 0 && child.signal == 0) {
    Json report = Json::parse(child.out, nullptr, /*allow_exceptions=*/false);
    if (!report.is_discarded() && report.is_object()) {
      record["status"] = out_of_memory(report) ? "oom" : "ok";
      record["report"] = std::move(report);
      if (!error.empty()) record["stderr"] = error;
      return record;
    }
    error = "the run exited 0 but printed no JSON report" + (error.empty() ? std::string() : ": " + error);
  }
  if (child.signal != 0)
    error += std::string(error.empty() ? "" : "\n") + "killed by signal " + std::to_string(child.signal) +
             signal_name(child.signal);
  if (error.empty()) error = "exited with code " + std::to_string(child.exit_code);
  record["status"] = "error";
  record["error"] = error;
  return record;
}

Json exact_record(const Point& point, const std::vector<std::string>& command, Json report, double seconds) {
  const bool oom = out_of_memory(report);
  return {{"point", point.index},  {"id", point.id},          {"axes", axes_object(point)},
          {"exitCode", 0},         {"seconds", seconds},      {"command", command},
          {"evaluator", "exact"},  {"status", oom ? "oom" : "ok"}, {"report", std::move(report)}};
}

std::optional<Json> read_point_file(const std::string& path, const Point& point) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  Json record;
  try {
    record = read_json_file(path);
  } catch (const InputError& e) {
    throw InputError(path, "", "sweep.bad-point-file",
                     std::string("not a point record (") + e.message() + "); delete it to run the point again");
  }
  const Json* id = find(record, "id");
  const Json* status = find(record, "status");
  if (id == nullptr || *id != point.id || status == nullptr || (*status != "ok" && *status != "oom" && *status != "error"))
    throw InputError(path, "", "sweep.bad-point-file",
                     "not the record of point " + point.id + "; delete it to run the point again");
  return record;
}

std::string jsonl_line(const Point& point, const Json& record) {
  // A record read from an earlier run may carry another index (the sweep file's axes grew).
  Json axes = axes_object(point);
  const Json* index = find(record, "point");
  const Json* recorded_axes = find(record, "axes");
  if (index && *index == point.index && recorded_axes && *recorded_axes == axes)
    return record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  Json line = record;
  line["point"] = point.index;
  line["axes"] = std::move(axes);
  return line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string csv_header(const Spec& spec) {
  std::string line = "point,id,status";
  for (const auto& path : spec.axis_paths()) line += "," + csv_field(path);
  for (const char* mode : kModes)
    for (const char* metric : {"stepTimeSeconds", "throughputSamplesPerSecond", "latencyMeanSeconds", "bubbleFraction", "fits"})
      line += std::string(",") + mode + "." + metric;
  return line + ",speedup,error\n";
}

std::string csv_row(const Point& point, const Json& record) {
  std::string line = std::to_string(point.index) + "," + point.id + "," + cell(find(record, "status"));
  for (const Override& o : point.axes) line += "," + cell(&o.value);
  const Json* report = find(record, "report");
  for (const char* mode : kModes) {
    const Json* run = nullptr;
    if (const Json* runs = report ? find(*report, "runs") : nullptr; runs && runs->is_array())
      for (const Json& r : *runs)
        if (const Json* m = find(r, "mode"); m && *m == mode) run = &r;
    const Json* latency = run ? find(*run, "latencySeconds") : nullptr;
    line += "," + cell(run ? find(*run, "stepTimeSeconds") : nullptr);
    line += "," + cell(run ? find(*run, "throughputSamplesPerSecond") : nullptr);
    line += "," + cell(latency ? find(*latency, "mean") : nullptr);
    line += "," + cell(run ? find(*run, "bubbleFraction") : nullptr);
    const Json* memory = run ? find(*run, "memory") : nullptr;
    line += "," + cell(memory ? find(*memory, "fits") : nullptr);
  }
  line += "," + cell(report ? find(*report, "speedupPipelinedOverSharded") : nullptr);
  // One physical line per row: the error's line breaks become spaces.
  std::string error;
  if (const Json* e = find(record, "error"); e && e->is_string()) error = e->get<std::string>();
  for (char& c : error)
    if (c == '\n' || c == '\r') c = ' ';
  return line + "," + csv_field(error) + "\n";
}

} // namespace ipusim::sweep
