#pragma once
// Research reports: turns `ipusim run --json` documents, sweep output folders and
// Chrome trace files into one self-contained HTML page (inline CSS and SVG, no
// scripts) and a Markdown twin whose figures are separate SVG files.
//
// The same inputs always give the same bytes: nothing depends on the clock, the
// locale, the machine or absolute paths (inputs are named as they were given).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipusim::report {

enum class InputKind { Run, Sweep, Trace, Generation };

struct SweepPoint {
  std::int64_t index = 0;
  std::string id;
  bool ok = false;
  nlohmann::json axes = nlohmann::json::object();  // "execution.gradientAccumulation": 16, ...
  std::string error;                               // when !ok
  nlohmann::json report;                           // a `run --json` document when ok
};

// A trace as the report needs it, read one event at a time: the document's events are
// never all held as JSON (a pod trace of 263k events is 45 MB of text, ten times that
// as a JSON document), only these compact records.
struct TraceData {
  struct Slice {  // a complete ("X") event
    std::uint32_t pid = 0, tid = 0, category = 0;  // indices into ids and categories
    std::uint32_t name_begin = 0, name_size = 0;   // into names
    double ts = 0, dur = 0;                        // as in the file (microseconds)
  };
  nlohmann::json other = nlohmann::json::object();  // otherData
  std::vector<nlohmann::json> ids;                  // pid and tid values, each once
  std::vector<std::string> categories;              // each once
  std::string names;                                // slice names, one after another
  std::vector<Slice> slices;                        // in file order
  std::map<std::uint32_t, std::string> process_names;                          // pid -> name
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> thread_names;  // (pid, tid) -> name
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> thread_order;       // (pid, tid) -> sort index

  std::string name(const Slice& s) const { return names.substr(s.name_begin, s.name_size); }
};

struct Input {
  InputKind kind = InputKind::Run;
  std::string source;          // the path as given on the command line
  nlohmann::json doc;          // Run: the run document; Generation: the generation document
  TraceData trace;             // Trace
  std::string sweep_name;      // Sweep: sweep.json's "name", else the folder's name
  std::vector<SweepPoint> points;  // Sweep: in file order
};

// What `path` holds, judged by content: a folder (or a results.jsonl) of a sweep, a
// trace-event document ("traceEvents"), a run document ("runs") or a generation's ("generation"). Throws InputError
// (rule report.input-kind) for anything else.
InputKind detect_input_kind(const std::string& path);

// Reads and checks one input. Throws InputError naming the file (and line for
// results.jsonl) when it cannot be read or lacks what the report needs.
Input load_input(const std::string& path);

struct Figure {
  std::string file;  // relative to the report folder: figures/NN-name.svg
  std::string svg;   // a standalone SVG document
};

struct Document {
  std::string html, markdown;
  std::vector<Figure> figures;
};

// `notes`: the user's Markdown text (report --notes), shown after the contents; empty: none.
Document build_report(const std::vector<Input>& inputs, const std::string& title, const std::string& notes = "");

// Writes DIR/figures/*.svg, DIR/report.md and, last, DIR/report.html, each
// atomically. Throws InputError (rule output.exists) before writing anything when
// DIR/report.html exists and !overwrite. On overwrite, figure files of an earlier
// report (NN-*.svg) that this one does not produce are removed.
void write_report(const Document& document, const std::string& dir, bool overwrite);

} // namespace ipusim::report
