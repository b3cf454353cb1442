#pragma once
// A parameter sweep (docs/sweeps.md): one scenario, fixed overrides ("set") and axes
// whose cartesian product gives the points. Each point is one `ipusim run SCENARIO
// --json --set path=value ...`, run in its own process by the sweep runner.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/overrides.hpp"

namespace ipusim::sweep {

using Json = nlohmann::json;

// One axis: a single path, or several zipped paths that move together.
struct Axis {
  std::vector<std::string> paths;
  std::vector<std::string> path_pointers;  // where each path is written in the sweep file
  std::vector<std::vector<Json>> steps;    // steps[i][k]: the i-th value of paths[k]
  std::string pointer;                     // the axis in the sweep file ("/axes/2")
};

struct Spec {
  std::string file;           // the sweep file, as given
  std::string name;           // [A-Za-z0-9._-]+; the default output folder is ipusim-sweeps/<name>
  std::string description;
  std::string scenario;       // as written: relative to the sweep file's folder (or absolute)
  std::string scenario_path;  // resolved against the sweep file's folder
  std::string modes;          // "" = the scenario's own execution.mode, else both|sharded|pipelined
  std::vector<Override> set;  // fixed overrides, applied before the axes, in key order
  std::vector<Axis> axes;
  std::vector<Override> command_line_set;  // the part of `set` that came from `sweep --set`
  Json document;                           // the definition: the file, with the command line merged in

  // Every axis path in file order (zip members in their order): the CSV's axis columns.
  std::vector<std::string> axis_paths() const;
};

struct Point {
  std::size_t index = 0;       // position in the cartesian product, last axis fastest
  std::string id;              // 16 hex digits: fnv1a64_hex(point_identity())
  std::vector<Override> axes;  // this point's value for every axis path, in axis_paths() order
};

// Largest sweep accepted; more points is almost surely a mistake in a range.
constexpr std::size_t kMaxPoints = 1000000;

// Strict parsing: unknown keys, bad ranges, unequal zips and repeated paths are
// InputErrors located by JSON pointer in `file`. Does not touch the scenario.
Spec parse_sweep(const Json& document, const std::string& file);

// `ipusim sweep --set path=value ... --mode M`: merged into the sweep file's definition as
// if written there: a --set adds to (or replaces the value of the same path in) "set",
// --mode replaces "modes". A --set path that is an axis is an InputError at "--set".
struct CommandLine {
  std::vector<Override> set;  // in the order given
  std::string modes;          // "" = the file's
  bool empty() const { return set.empty() && modes.empty(); }
};
Spec load_sweep(const std::string& file, const CommandLine& command_line = {});

// Why a folder's stored definition (DIR/sweep.json) defines other points than `now`:
// the JSON pointer (in the stored file) of the first difference in "modes" or "set" and
// a sentence naming both values; {"", ""} when they differ elsewhere (scenario, axes).
std::pair<std::string, std::string> first_difference(const Spec& stored, const Spec& now);

std::size_t point_count(const Spec& spec);
std::vector<Point> expand_points(const Spec& spec);

// What a point's id hashes: the scenario as written, the modes, and every override
// the point's run gets (fixed ones, then the axes), one "path=json" a line. Equal
// identities mean equal runs, so a point's file can be trusted on resume.
std::string point_identity(const Spec& spec, const std::vector<Override>& axes);
// FNV-1a 64 with murmur3's 64-bit finalizer, as 16 lower-case hex digits.
std::string fnv1a64_hex(const std::string& text);

// Identifies a sweep by the points it runs (their ids in order), not by its text:
// editing the name or description of a sweep keeps its output folder usable.
std::string definition_hash(const std::vector<Point>& points);

// The arguments after the program name: run SCENARIO --json [--mode M] --set p=v ...
std::vector<std::string> run_arguments(const Spec& spec, const Point& point);

// Catches axis and "set" paths that cannot apply to the scenario (a typo in a key, an
// index past the end of an array) before any point runs: loads the scenario with the
// fixed overrides plus each path's first value and throws InputError (rule
// "sweep.bad-path", pointing at the path in the sweep file) when the failure is about
// the path. Failures that depend on the value are left to the points, which record them.
void check_paths(const Spec& spec);

} // namespace ipusim::sweep
