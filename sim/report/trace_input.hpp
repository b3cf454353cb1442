#pragma once
// Reading a report input that is a run document or a Chrome trace in one pass: a
// trace's events are taken into compact records one at a time as the parser finishes
// each, and left out of the JSON document, so memory follows the number of slices, not
// ten times the file's size.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/report.hpp"

namespace ipusim::report {

struct ParsedInput {
  nlohmann::json doc;  // the document without the trace's events
  bool is_trace = false;  // an object with "traceEvents", or an array whose first element has "ph"
  TraceData trace;        // the events, when is_trace
};

// Throws InputError (json.* rules) naming `path` and where in it the text is malformed.
ParsedInput parse_report_input(const std::string& text, const std::string& path);

} // namespace ipusim::report
