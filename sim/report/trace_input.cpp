#include "sim/report/trace_input.hpp"

#include <cmath>
#include <unordered_map>

#include "sim/io/json_reader.hpp"
#include "sim/report/run_fields.hpp"

namespace ipusim::report {

namespace {

class TraceCollector {
public:
  explicit TraceCollector(TraceData& data) : data_(data) {}

  void take(const Json& e) {
    if (!e.is_object()) return;
    const std::string ph = str(e, "ph");
    if (ph != "M" && ph != "X") return;  // flows, counters, instants: not drawn
    const Json* pid_value = field(e, "pid");
    const Json* tid_value = field(e, "tid");
    const std::uint32_t pid = id(pid_value ? *pid_value : Json(0));
    const std::uint32_t tid = id(tid_value ? *tid_value : Json(0));
    if (ph == "M") {
      const Json& args = object_at(e, "args");
      const std::string name = str(e, "name");
      if (name == "process_name") data_.process_names[pid] = str(args, "name");
      if (name == "thread_name") data_.thread_names[{pid, tid}] = str(args, "name");
      if (name == "thread_sort_index" && std::isfinite(num(args, "sort_index")))
        data_.thread_order[{pid, tid}] = num(args, "sort_index");
      return;
    }
    const std::string name = str(e, "name");
    TraceData::Slice s;
    s.pid = pid;
    s.tid = tid;
    s.category = category(str(e, "cat", "other"));
    s.name_begin = static_cast<std::uint32_t>(data_.names.size());
    s.name_size = static_cast<std::uint32_t>(name.size());
    s.ts = num(e, "ts", 0);
    s.dur = num(e, "dur", 0);
    data_.names += name;
    data_.slices.push_back(s);
  }

private:
  std::uint32_t id(const Json& value) {
    const auto [it, added] = ids_.emplace(value.dump(), static_cast<std::uint32_t>(data_.ids.size()));
    if (added) data_.ids.push_back(value);
    return it->second;
  }
  std::uint32_t category(const std::string& name) {
    const auto [it, added] = categories_.emplace(name, static_cast<std::uint32_t>(data_.categories.size()));
    if (added) data_.categories.push_back(name);
    return it->second;
  }

  TraceData& data_;
  std::unordered_map<std::string, std::uint32_t> ids_, categories_;
};

} // namespace

ParsedInput parse_report_input(const std::string& text, const std::string& path) {
  ParsedInput out;
  TraceCollector collector(out.trace);
  bool top_array = false, first_element = true, events = false;  // events: inside "traceEvents"
  bool first_has_ph = false;
  out.doc = parse_json_text(text, path, [&](int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    if (depth == 0 && event == E::array_start) top_array = true;
    if (depth == 1 && event == E::key) events = parsed == "traceEvents";
    const bool element = top_array ? depth == 1 : events && depth == 2;
    if (!element || (event != E::object_end && event != E::array_end && event != E::value)) return true;
    if (top_array && first_element) first_has_ph = parsed.is_object() && parsed.contains("ph");
    first_element = false;
    collector.take(parsed);
    return false;  // taken: not kept in the document
  });
  out.is_trace = out.doc.is_object() ? out.doc.contains("traceEvents") : top_array && first_has_ph;
  if (out.is_trace) out.trace.other = object_at(out.doc, "otherData");
  return out;
}

} // namespace ipusim::report
