#pragma once
// What a sweep writes: one record per finished point (points/<id>.json, and the same
// object as one line of results.jsonl) and one CSV row per point with the axis values
// and the headline metrics of each mode.
#include <optional>
#include <string>
#include <vector>

#include "sim/output/csv.hpp"
#include "sim/sweep/child_process.hpp"
#include "sim/sweep/sweep_spec.hpp"

namespace ipusim::sweep {

// A run ended by SIGINT, SIGTERM, SIGHUP or SIGKILL was stopped, not failed: it is not
// recorded, so the next run of the sweep does it again. Any other end is a result.
bool interrupted(const ChildResult& child);
// True when some run of a `run --json` document does not fit in memory.
bool out_of_memory(const Json& report);

// {"point", "id", "status": "ok"|"oom"|"error", "axes": {path: value}, "exitCode",
//  "seconds", "command", then "report" (the `run --json` document) when the run
//  succeeded ("oom": some mode does not fit in memory), or "error" (what the run
//  printed on stderr) when not}.
// Its "evaluator" is "engine".
Json point_record(const Point& point, const std::vector<std::string>& command, const ChildResult& child);
// The record of a point the exact evaluators answered (--fast): "evaluator": "exact",
// status "ok" or "oom", and `report` as they give it (docs/sweeps.md).
Json exact_record(const Point& point, const std::vector<std::string>& command, Json report, double seconds);

// The record in points/<id>.json, or nullopt when there is none. Throws InputError
// (rule "sweep.bad-point-file") for a file that is not a record of this point.
std::optional<Json> read_point_file(const std::string& path, const Point& point);

// The same record as results.jsonl holds it: one line, with the point's index and axis
// values as this sweep numbers them (a point reused from another definition keeps its
// results but takes this sweep's index).
std::string jsonl_line(const Point& point, const Json& record);

std::string csv_header(const Spec& spec);
std::string csv_row(const Point& point, const Json& record);

} // namespace ipusim::sweep
