#include "sim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/io/input_error.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/output/output_file.hpp"
#include "sim/base/units.hpp"
#include "sim/report/findings.hpp"
#include "sim/report/notes.hpp"
#include "sim/report/page.hpp"
#include "sim/report/sections.hpp"
#include "sim/report/run_fields.hpp"
#include "sim/report/svg_chart.hpp"
#include "sim/report/trace_input.hpp"

namespace ipusim::report {

namespace fs = std::filesystem;

// ===================================================================== inputs

namespace {

// File system queries that never throw (a name too long is simply not a folder).
bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Traces of long runs are large; still a bound, so /dev/zero or a runaway file is refused.
constexpr std::size_t kMaxReportInputBytes = std::size_t{1} << 30;

std::string read_text(const std::string& path) { return read_input_file(path, path, "/", kMaxReportInputBytes).text; }

// The shared parser (depth limit, located errors); `where` locates a line of results.jsonl.
Json parse_json(const std::string& text, const std::string& path, const std::string& where = "") {
  try {
    return parse_json_text(text, path);
  } catch (const InputError& e) {
    if (where.empty()) throw;
    throw InputError(path, where, e.rule(), e.message());
  }
}

fs::path sweep_results_file(const std::string& path) {
  const fs::path p(path);
  if (is_folder(p)) return p / "results.jsonl";
  return p;
}

bool is_run(const Json& doc) { return doc.is_object() && doc.contains("runs") && doc["runs"].is_array(); }

bool is_generation(const Json& doc) {
  return doc.is_object() && doc.contains("generation") && doc["generation"].is_object() &&
         doc["generation"].contains("runs") && doc["generation"]["runs"].is_array();
}

void check_generation_document(const Json& doc, const std::string& path) {
  const Json& runs = doc["generation"]["runs"];
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Json& r = runs[i];
    const std::string at = "/generation/runs/" + std::to_string(i);
    if (!r.is_object() || !r.contains("mode") || !r["mode"].is_string())
      throw InputError(path, at, "report.bad-run", "a generation run needs a \"mode\"");
    for (const char* key : {"timeToFirstTokenSeconds", "tokensPerSecond"})
      if (!field(r, key) || !field(r, key)->is_number())
        throw InputError(path, at, "report.bad-run", std::string("a generation run needs a number \"") + key + "\"");
  }
}

void check_run(const Json& doc, const std::string& path, const std::string& where) {
  for (std::size_t i = 0; i < doc["runs"].size(); ++i) {
    const Json& r = doc["runs"][i];
    const std::string at = where + "/runs/" + std::to_string(i);
    if (!r.is_object() || !r.contains("mode") || !r["mode"].is_string())
      throw InputError(path, at, "report.bad-run", "a run needs a \"mode\"");
    for (const char* key : {"stepTimeSeconds", "throughputSamplesPerSecond"})
      if (!field(r, key) || !field(r, key)->is_number())
        throw InputError(path, at, "report.bad-run", std::string("a run needs a number \"") + key + "\"");
  }
}

} // namespace

namespace {

bool is_sweep(const std::string& path) {
  const fs::path p(path);
  if (is_folder(p)) {
    if (path_exists(p / "results.jsonl")) return true;
    throw InputError(path, "/", "report.input-kind", "a folder must be a sweep output folder (with results.jsonl)");
  }
  return p.filename() == "results.jsonl";
}

InputKind kind_of(const ParsedInput& parsed, const std::string& path) {
  if (parsed.is_trace) return InputKind::Trace;
  if (is_run(parsed.doc)) return InputKind::Run;
  if (is_generation(parsed.doc)) return InputKind::Generation;
  throw InputError(path, "/", "report.input-kind",
                   "neither a run document (\"runs\"), a generation's (\"generation\"), a trace (\"traceEvents\") "
                   "nor a sweep folder");
}

} // namespace

InputKind detect_input_kind(const std::string& path) {
  if (is_sweep(path)) return InputKind::Sweep;
  return kind_of(parse_report_input(read_text(path), path), path);
}

Input load_input(const std::string& path) {
  Input in;
  in.source = path;
  if (is_sweep(path)) {
    in.kind = InputKind::Sweep;
    const fs::path results = sweep_results_file(path);
    const fs::path folder = results.parent_path();
    in.sweep_name = fs::path(path).filename() == "results.jsonl" ? folder.filename().string()
                                                                 : fs::path(path).filename().string();
    if (in.sweep_name.empty()) in.sweep_name = folder.filename().string();
    const fs::path definition = folder / "sweep.json";
    if (path_exists(definition)) {
      const Json d = parse_json(read_text(definition.string()), definition.string());
      if (d.is_object() && d.contains("name") && d["name"].is_string()) in.sweep_name = d["name"].get<std::string>();
    }
    std::istringstream lines(read_text(results.string()));
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = "line " + std::to_string(number);
      const Json j = parse_json(line, results.string(), where);
      if (!j.is_object() || !j.contains("status") || !j["status"].is_string())
        throw InputError(results.string(), where, "report.bad-sweep", "each line needs a \"status\"");
      SweepPoint pt;
      pt.index = j.value("point", static_cast<std::int64_t>(in.points.size()));
      pt.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(pt.index);
      pt.ok = j["status"] == "ok" || j["status"] == "oom";  // oom: the run succeeded, and does not fit
      if (j.contains("axes") && j["axes"].is_object()) pt.axes = j["axes"];
      if (pt.ok) {
        if (!j.contains("report") || !is_run(j["report"]))
          throw InputError(results.string(), where, "report.bad-sweep", "an ok point needs a run document in \"report\"");
        check_run(j["report"], results.string(), where + ": /report");
        pt.report = j["report"];
      } else {
        pt.error = j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                 : "failed (no message recorded)";
      }
      in.points.push_back(std::move(pt));
    }
    return in;
  }
  ParsedInput parsed = parse_report_input(read_text(path), path);
  in.kind = kind_of(parsed, path);
  if (in.kind == InputKind::Trace) {
    in.trace = std::move(parsed.trace);
  } else {
    in.doc = std::move(parsed.doc);
    if (in.kind == InputKind::Generation) check_generation_document(in.doc, path);
    else check_run(in.doc, path, "");
  }
  return in;
}

// ===================================================================== assembly

namespace {

const char* kind_name(InputKind kind) {
  return kind == InputKind::Run ? "run" : kind == InputKind::Sweep ? "sweep" : kind == InputKind::Generation ? "generation" : "trace";
}

// The report's opening line, in HTML and in Markdown: the inputs it was made from.
std::pair<std::string, std::string> inputs_intro(const std::vector<Input>& inputs) {
  std::string html = "<p class=\"inputs\">Generated by <code>ipusim report</code> from " +
                     std::to_string(inputs.size()) + " input(s): ";
  std::string md = "Generated by `ipusim report` from " + std::to_string(inputs.size()) + " input(s): ";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const char* kind = kind_name(inputs[i].kind);
    html += std::string(i ? ", " : "") + "<code>" + chart::escape(inputs[i].source) + "</code> (" + kind + ")";
    md += std::string(i ? ", " : "") + md_escape(inputs[i].source) + " (" + kind + ")";
  }
  return {html + ".</p>\n", md + ".\n\n"};
}

// The summary of every run input: a table of the modes' step times and throughputs and, for
// several runs, a chart of the speed-ups.
void summary_section(Builder& b, const std::vector<const Input*>& runs) {
  b.open_section("summary");
  b.heading(2, "Summary: sharded vs pipelined");
  std::vector<std::pair<std::string, const Json*>> named;
  for (const Input* in : runs) named.push_back({summary_row_name(*in), &in->doc});
  b.findings(summary_findings(named));
  Table t{{"scenario", "model", "config", "sharded step time", "pipelined step time", "sharded throughput",
           "pipelined throughput", "speed-up"},
          {}};
  for (const Input* in : runs) {
    const Json* s = run_of(in->doc, "sharded");
    const Json* p = run_of(in->doc, "pipelined");
    const double speedup = speedup_of(in->doc);
    t.rows.push_back({summary_row_name(*in), or_dash(str(in->doc, "model")), or_dash(str(in->doc, "config")),
                      s ? seconds(num(*s, "stepTimeSeconds")) : "-", p ? seconds(num(*p, "stepTimeSeconds")) : "-",
                      s ? rate(num(*s, "throughputSamplesPerSecond")) : "-",
                      p ? rate(num(*p, "throughputSamplesPerSecond")) : "-",
                      std::isfinite(speedup) ? format_fixed(speedup, 2) + "x" : "-"});
  }
  b.table(t, "Throughput of every run input (speed-up = sharded step time / pipelined step time)");
  if (runs.size() > 1) {
    // Speed-ups compare across scenarios whose throughputs differ by orders of magnitude.
    chart::BarChart all;
    all.title = "Pipelined speed-up over sharded, per run input";
    all.y_label = "speed-up (sharded step time / pipelined)";
    all.frame.width = 1200;
    all.y_format = [](double v) { return chart::short_number(v) + "x"; };
    std::vector<std::string> caption;
    for (const Input* in : runs) {
      const double speedup = speedup_of(in->doc);
      all.bars.push_back({summary_row_name(*in), std::isfinite(speedup) ? speedup : 0, mode_color("pipelined"),
                          {std::isfinite(speedup) ? format_fixed(speedup, 2) + "x" : "n/a"}});
      const auto c = run_caption(in->doc, in->source);
      caption.push_back(summary_row_name(*in) + ": " + c[0] + " " + c[1]);
    }
    b.figure("summary-speedup", all.title, chart::render(all), caption, true);
  }
  b.close_section();
}

} // namespace

Document build_report(const std::vector<Input>& inputs, const std::string& title, const std::string& notes) {
  Builder b(title);
  std::vector<std::pair<std::string, std::string>> toc;
  const auto [intro_html, intro_md] = inputs_intro(inputs);

  if (!notes.empty()) {
    toc.push_back({"notes", "Notes"});
    b.raw("<section id=\"notes\" class=\"notes\">\n<h2>Notes</h2>\n" + notes_html(notes) + "</section>\n",
          "## Notes\n\n" + notes + (notes.back() == '\n' ? "\n" : "\n\n"));
  }

  std::vector<const Input*> runs;
  for (const Input& in : inputs)
    if (in.kind == InputKind::Run) runs.push_back(&in);
  if (!runs.empty()) {
    toc.push_back({"summary", "Summary: sharded vs pipelined"});
    summary_section(b, runs);
  }

  std::size_t run_number = 0, sweep_number = 0, trace_number = 0, generation_number = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    const std::string id = "input-" + std::to_string(i + 1);
    switch (in.kind) {
      case InputKind::Run:
        run_section(b, in, ++run_number, id);
        toc.push_back({id, "Run " + std::to_string(run_number) + ": " + summary_row_name(in)});
        break;
      case InputKind::Sweep:
        sweep_section(b, in, ++sweep_number, id);
        toc.push_back({id, "Sweep " + std::to_string(sweep_number) + ": " + in.sweep_name});
        break;
      case InputKind::Generation:
        generation_section(b, in, ++generation_number, id);
        toc.push_back({id, "Generation " + std::to_string(generation_number) + ": " +
                               str(object_at(in.doc, "generation"), "scenario", in.source)});
        break;
      case InputKind::Trace:
        trace_section(b, in, ++trace_number, id, inputs);
        toc.push_back({id, "Trace " + std::to_string(trace_number) + ": " + in.source});
        break;
    }
  }
  return b.finish(toc, intro_html, intro_md);
}

namespace {

void write_report_files(const Document& document, const fs::path& root, bool overwrite) {
  const fs::path html = root / "report.html", markdown = root / "report.md", figures = root / "figures";
  std::error_code ec;
  fs::create_directories(figures, ec);
  if (ec) throw InputError(root.string(), "/", "output.unwritable", "cannot create the folder: " + ec.message());
  // Figures go into figures/ itself, never through a link to somewhere else.
  if (fs::is_symlink(figures, ec) || !fs::is_directory(figures, ec))
    throw InputError(figures.string(), "/", "output.not-regular",
                     "is not a folder ipusim can write figures into (a link or a file?); remove it");
  std::set<std::string> produced;
  for (const Figure& f : document.figures) {
    replace_file((root / f.file).string(), f.svg, true);
    produced.insert(fs::path(f.file).filename().string());
  }
  if (overwrite) {  // drop figures of an earlier report that this one no longer has
    for (const auto& entry : fs::directory_iterator(figures, ec)) {
      const std::string name = entry.path().filename().string();
      const bool ours = name.size() > 7 && name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' &&
                        name[2] == '-' && entry.path().extension() == ".svg";
      if (ours && !produced.count(name)) fs::remove(entry.path(), ec);
    }
  }
  replace_file(markdown.string(), document.markdown, true);
  replace_file(html.string(), document.html, true);
}

} // namespace

void write_report(const Document& document, const std::string& dir, bool overwrite) {
  const fs::path root(dir);
  const fs::path html = root / "report.html", markdown = root / "report.md";
  std::error_code ec;
  if (!overwrite)
    for (const fs::path& p : {html, markdown})
      if (fs::symlink_status(p, ec).type() != fs::file_type::not_found)
        throw InputError(p.string(), "/", "output.exists", "a report is already there; pass --force to overwrite it");
  if (fs::symlink_status(root, ec).type() == fs::file_type::not_found) {
    // A new folder is filled under a temporary name and renamed: a failure (a full disk, a
    // kill) leaves no partial report to block the next run, and the next run removes it.
    if (!root.lexically_normal().parent_path().empty()) fs::create_directories(root.lexically_normal().parent_path(), ec);
    const std::string temp = make_temp_folder(dir);
    try {
      write_report_files(document, temp, overwrite);
      if (std::rename(temp.c_str(), root.lexically_normal().c_str()) != 0)
        throw InputError(dir, "/", "output.unwritable", std::string("cannot create the folder: ") + std::strerror(errno));
    } catch (...) {
      fs::remove_all(temp, ec);
      throw;
    }
    return;
  }
  // Into a folder that exists: report.md and report.html are written last, and one this
  // run created is removed again if the other cannot be written, so a failed run does
  // not leave half a report that blocks the next one.
  const bool had_markdown = fs::symlink_status(markdown, ec).type() != fs::file_type::not_found;
  try {
    write_report_files(document, root, overwrite);
  } catch (...) {
    if (!had_markdown) fs::remove(markdown, ec);
    throw;
  }
}

} // namespace ipusim::report
