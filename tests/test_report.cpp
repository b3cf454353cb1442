// ipusim report: the SVG chart module against hand-computed geometry, the report
// end to end through the real binary, and the page rendered by headless Chromium.
#include <catch2/catch.hpp>

#include <algorithm>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sanitizer.hpp"

#include "sim/base/units.hpp"
#include "sim/report/report.hpp"
#include "sim/report/svg_chart.hpp"

using namespace ipusim;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Runs a shell command from the repository root; returns its exit code. Output goes
// to `log` when given.
int shell(const std::string& command, const fs::path& log = {}) {
  std::string line = "cd '" + std::string(IPUSIM_SOURCE_DIR) + "' && " + command;
  if (!log.empty()) line += " >'" + log.string() + "' 2>&1";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs a shell command as shell() does; returns its exit code and sets `peak_bytes` to the
// largest resident memory of it and what it ran (wait4 on that command alone: getrusage's
// RUSAGE_CHILDREN would give the largest child this whole test process ever had).
int shell_peak(const std::string& command, const fs::path& log, double& peak_bytes) {
  const std::string line = "cd '" + std::string(IPUSIM_SOURCE_DIR) + "' && " + command + " >'" + log.string() + "' 2>&1";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (child < 0 || ::wait4(child, &status, 0, &usage) != child) return -1;
  peak_bytes = static_cast<double>(usage.ru_maxrss) * 1024;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string binary() { return std::string("'") + IPUSIM_BINARY + "'"; }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ipusim-test-report-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A complete run document with round numbers: `samples` per step, step times chosen
// for the given throughputs (samples/s).
Json fake_run(int g, double sharded_throughput, double pipelined_throughput, double pipelined_bubble) {
  const double samples = 16.0 * g;
  auto run = [&](const char* mode, const char* schedule, double throughput, double bubble) {
    const double step = samples / throughput;
    return Json{{"mode", mode},
                {"schedule", schedule},
                {"stepTimeSeconds", step},
                {"throughputSamplesPerSecond", throughput},
                {"latencySeconds", {{"mean", 1e-3}, {"min", 1e-3}, {"max", 1e-3}}},
                {"bubbleFraction", bubble},
                {"microBatchesPerStep", g},
                {"samplesPerStep", samples},
                {"cycles", 0},
                {"ipus",
                 {{{"id", 0}, {"busySeconds", step / 4}, {"utilization", 0.25}, {"hostIoSeconds", 0}, {"exchangeSeconds", 0},
                   {"syncSeconds", 0}, {"idleSeconds", step * bubble}},
                  {{"id", 1}, {"busySeconds", step / 2}, {"utilization", 0.5}, {"hostIoSeconds", 0}, {"exchangeSeconds", 0},
                   {"syncSeconds", 0}, {"idleSeconds", step * bubble}}}},
                {"links", {{{"name", "ipu0->ipu1"}, {"bytes", 1024.0 * g}}}}};
  };
  return {{"scenario", "fake-mlp"},
          {"scenarioFile", "scenarios/fake-mlp.json"},
          {"model", "fake model"},
          {"config", "fake system"},
          {"execution",
           {{"training", true}, {"microBatchSize", 16}, {"gradientAccumulation", g}, {"batchesPerStep", 1},
            {"hostIo", false}, {"costModel", "compute"}, {"schedule", "popart"}}},
          {"plan", {{"stages", Json::array()}, {"copies", Json::array()}, {"ipus", Json::array()}}},
          {"runs",
           {run("sharded", "sharded", sharded_throughput, 0.5), run("pipelined", "popart", pipelined_throughput,
                                                                  pipelined_bubble)}}};
}

// A sweep folder over G = 4, 8, 16, 64 whose G = 8 point failed and G = 16 point does not fit.
void write_fake_sweep(const fs::path& dir) {
  write(dir / "sweep.json", Json{{"name", "fake G sweep"}, {"scenario", "scenarios/fake-mlp.json"}}.dump());
  std::string lines;
  lines += Json{{"point", 0}, {"id", "g4"}, {"status", "ok"}, {"axes", {{"execution.gradientAccumulation", 4}}},
                {"report", fake_run(4, 1000, 3000, 0.2)}}
               .dump() +
           "\n";
  lines += Json{{"point", 1}, {"id", "g8"}, {"status", "error"}, {"axes", {{"execution.gradientAccumulation", 8}}},
                {"error", "simulated failure <b>&"}}
               .dump() +
           "\n";
  // G = 16 is the fastest point, and does not fit: the pipelined run's IPU 1 overflows a tile.
  Json oom = fake_run(16, 1000, 5000, 0.1);
  oom["runs"][1]["memory"] = {{"fits", false},
                              {"ipus",
                               {{{"virtualIpu", 1}, {"totalBytes", 950.0 * 1048576}, {"capacityBytes", 900.0 * 1048576},
                                 {"fullestTileBytes", 700000.0}, {"tileCapacityBytes", 638976.0},
                                 {"fits", false}}}}};
  lines += Json{{"point", 2}, {"id", "g16"}, {"status", "oom"}, {"axes", {{"execution.gradientAccumulation", 16}}},
                {"report", oom}}
               .dump() +
           "\n";
  lines += Json{{"point", 3}, {"id", "g64"}, {"status", "ok"}, {"axes", {{"execution.gradientAccumulation", 64}}},
                {"report", fake_run(64, 1000, 3500, 0.05)}}
               .dump() +
           "\n";
  write(dir / "results.jsonl", lines);
}

// Two IPU tracks and a link: 3 events in a 10 us step.
void write_fake_trace(const fs::path& file) {
  Json events = Json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "sharded"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "IPU 0"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", "IPU 1"}}}});
  events.push_back({{"ph", "X"}, {"name", "stage 0 fwd mb 0"}, {"cat", "compute"}, {"ts", 100.0}, {"dur", 4.0},
                    {"pid", 1}, {"tid", 1}, {"args", Json::object()}});
  events.push_back({{"ph", "X"}, {"name", "copy phase"}, {"cat", "exchange"}, {"ts", 104.0}, {"dur", 1.0},
                    {"pid", 1}, {"tid", 1}, {"args", Json::object()}});
  events.push_back({{"ph", "X"}, {"name", "stage 1 fwd mb 0"}, {"cat", "compute"}, {"ts", 105.0}, {"dur", 5.0},
                    {"pid", 1}, {"tid", 2}, {"args", Json::object()}});
  write(file, Json{{"traceEvents", events}, {"otherData", {{"scenario", "fake-trace"}, {"model", "fake model"}}}}
                  .dump());
}

// run + report, as a person would: returns the report folder.
fs::path make_report(const fs::path& dir, bool with_memory) {
  REQUIRE(shell(binary() + " run scenarios/mlp-inference.json --json -o '" + (dir / "run.json").string() + "'",
                dir / "run.log") == 0);
  // The run without memory data (whether or not the simulator writes it), then the
  // same run with hand-made memory data.
  Json doc = Json::parse(read(dir / "run.json"));
  for (Json& r : doc["runs"]) r.erase("memory");
  write(dir / "run-nomemory.json", doc.dump(2));
  std::vector<std::string> inputs = {(dir / "run-nomemory.json").string()};
  if (with_memory) {
    for (Json& r : doc["runs"])
      r["memory"] = {{"fits", false},
                     {"ipus",
                      {{{"virtualIpu", 0}, {"totalBytes", 100.0 * 1048576}, {"capacityBytes", 900.0 * 1048576},
                        {"fullestTileBytes", 200000.0}, {"tileCapacityBytes", 638976.0}, {"fits", true}},
                       {{"virtualIpu", 1}, {"totalBytes", 950.0 * 1048576}, {"capacityBytes", 900.0 * 1048576},
                        {"fullestTileBytes", 700000.0}, {"tileCapacityBytes", 638976.0}, {"fits", false}}}}};
    write(dir / "run-memory.json", doc.dump(2));
    inputs.push_back((dir / "run-memory.json").string());
  }
  write_fake_sweep(dir / "sweep");
  inputs.push_back((dir / "sweep").string());
  write_fake_trace(dir / "trace.json");
  inputs.push_back((dir / "trace.json").string());
  write(dir / "notes.md", "# Study notes\n\nWhy we ran **this**: <i>two</i> splits.\n");
  std::string command = binary() + " report";
  for (const auto& i : inputs) command += " '" + i + "'";
  command += " -o '" + (dir / "out").string() + "' --title 'Sharded <vs> pipelined' --notes '" +
             (dir / "notes.md").string() + "'";
  REQUIRE(shell(command, dir / "report.log") == 0);
  return dir / "out";
}

std::string figure_file(const fs::path& out, const std::string& contains) {
  for (const auto& e : fs::directory_iterator(out / "figures"))
    if (e.path().filename().string().find(contains) != std::string::npos) return read(e.path());
  FAIL("no figure named like " << contains);
  return "";
}

} // namespace

// ------------------------------------------------------------------ chart module

TEST_CASE("chart text is XML-escaped", "[report][chart]") {
  CHECK(chart::escape("a<b & c>\"d'") == "a&lt;b &amp; c&gt;&quot;d&#39;");
  chart::BarChart c;
  c.title = "<&> title";
  c.y_label = "y";
  c.bars = {{"x<1>", 1, "", {"\"quoted\""}}};
  const std::string svg = chart::render(c);
  CHECK(svg.find("&lt;&amp;&gt; title") != std::string::npos);
  CHECK(svg.find("x&lt;1&gt;") != std::string::npos);
  CHECK(svg.find("&quot;quoted&quot;") != std::string::npos);
  CHECK(svg.find("<&>") == std::string::npos);
  CHECK(svg.find("x<1>") == std::string::npos);
}

TEST_CASE("a bar's pixel height is its share of the axis maximum", "[report][chart]") {
  // Frame 640 x 360, margins top 56 / bottom 64: plot 240 px high, 540 px wide.
  // Data max 100: nice ticks step 20, axis 0..100. Bar 50 -> 120 px, top at 56+240-120.
  chart::BarChart c;
  c.bars = {{"a", 50, "", {}}, {"b", 100, "", {}}};
  CHECK(chart::bar_axis_max(c) == Approx(100));
  const auto g = chart::bar_geometry(c);
  REQUIRE(g.size() == 2);
  CHECK(g[0].height == Approx(120));
  CHECK(g[0].y == Approx(176));
  CHECK(g[1].height == Approx(240));
  // Two bands of 270 px; bars min(0.6 x 270, 140) = 140 px wide, centred: 76 + 65.
  CHECK(g[0].x == Approx(141));
  CHECK(g[0].width == Approx(140));
  CHECK(g[1].x == Approx(411));
  const std::string svg = chart::render(c);
  CHECK(svg.find("<rect class=\"bar\" x=\"141.00\" y=\"176.00\" width=\"140.00\" height=\"120.00\"") !=
        std::string::npos);

  // Two note lines need 2 x 14 + 4 = 32 px of headroom: 100 x 240 / 208 = 115.4,
  // so the axis goes to the next tick, 120, and the bar is 100/120 x 240 = 200 px.
  c.bars[1].notes = {"100", "speed-up 2.00x"};
  CHECK(chart::bar_axis_max(c) == Approx(120));
  CHECK(chart::bar_geometry(c)[1].height == Approx(200));
}

TEST_CASE("nice linear ticks and log-scale ticks", "[report][chart]") {
  CHECK(chart::nice_ticks(0, 100) == std::vector<double>{0, 20, 40, 60, 80, 100});
  const auto t = chart::nice_ticks(0, 0.46);  // step 0.1
  REQUIRE(t.size() == 6);
  CHECK(t.back() == Approx(0.5));
  CHECK(t[3] == Approx(0.3));
  CHECK(chart::nice_ticks(0, 0) == std::vector<double>{0, 1});

  CHECK(chart::log_ticks(1, 1000) == std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000});
  CHECK(chart::log_ticks(1, 1e6) == std::vector<double>{1, 10, 100, 1e3, 1e4, 1e5, 1e6});  // 6 decades: 10^k only
  CHECK(chart::log_ticks(4, 64) == std::vector<double>{5, 10, 20, 50});
  CHECK(chart::log_ticks(3, 4) == std::vector<double>{3, 4});  // no nice value inside: the ends

  CHECK(chart::short_number(200000) == "200k");
  CHECK(chart::short_number(5000) == "5000");
  CHECK(chart::short_number(20000) == "20k");
  CHECK(chart::short_number(1.5e6) == "1.5M");
  CHECK(chart::short_number(0.25) == "0.25");
  CHECK(chart::short_number(0) == "0");
}

TEST_CASE("a log-scale line chart maps x by log10 and breaks the line at gaps", "[report][chart]") {
  // Plot 76..616 px wide, inset 16 px: x 4..64 maps to 92..600; 16 is the middle.
  chart::LineChart c;
  c.log_x = true;
  c.series = {{"s", "", {{4, 1.0}, {8, std::nullopt}, {16, 2.0}, {64, 3.0}}}};
  c.error_x = {8};
  CHECK(chart::line_x_pixel(c, 4) == Approx(92));
  CHECK(chart::line_x_pixel(c, 16) == Approx(346));
  CHECK(chart::line_x_pixel(c, 64) == Approx(600));
  const std::string svg = chart::render(c);
  // One path with two pieces: M(4) then M(16) L(64).
  const auto d = svg.find("class=\"series\" d=\"");
  REQUIRE(d != std::string::npos);
  const std::string path = svg.substr(d, svg.find('"', d + 18) - d);
  CHECK(count(path, "M") == 2);
  CHECK(count(path, "L") == 1);
  CHECK(path.find("M92.00 ") != std::string::npos);
  CHECK(svg.find("class=\"error-mark\"") != std::string::npos);
  CHECK(svg.find("(log scale)") != std::string::npos);
  CHECK(count(svg, "<circle") == 3 + 1);  // three points and the legend's marker
}

TEST_CASE("Gantt rectangles are exact for wide events and merged or bucketed when narrow", "[report][chart]") {
  // Row labels are short, so the left margin is its minimum of 70 px; right 24 px:
  // a 1200 px chart has 1106 px for a 4 s span.
  chart::GanttChart g;
  g.rows = {"IPU 0"};
  g.events = {{0, 0, 1, "compute", "a"}, {0, 1, 2, "compute", "b"}, {0, 2, 4, "sync", "c"}};
  auto rects = chart::gantt_rects(g);
  REQUIRE(rects.size() == 3);
  CHECK(rects[0].x0 == Approx(70));
  CHECK(rects[0].x1 == Approx(70 + 1106 / 4.0));
  CHECK(rects[1].x0 == Approx(70 + 1106 / 4.0));
  CHECK(rects[2].x1 == Approx(1176));
  CHECK(rects[2].label == "c");

  // 10,000 touching compute events of 0.11 px each become one rectangle.
  chart::GanttChart narrow;
  narrow.rows = {"IPU 0"};
  for (int i = 0; i < 10000; ++i) narrow.events.push_back({0, i * 1e-4, (i + 1) * 1e-4, "compute", ""});
  rects = chart::gantt_rects(narrow);
  REQUIRE(rects.size() == 1);
  CHECK(rects[0].events == 10000);
  CHECK(rects[0].x0 == Approx(70));
  CHECK(rects[0].x1 == Approx(1176));

  CHECK(rects[0].coverage == 1);

  // A quarter duty cycle of narrow events (0.14 px busy every 0.55 px) merges across
  // the sub-pixel gaps but keeps its busy share: 2 eighths.
  chart::GanttChart sparse;
  sparse.rows = {"IPU 0"};
  for (int i = 0; i < 2000; ++i) sparse.events.push_back({0, i * 5e-4, i * 5e-4 + 1.25e-4, "compute", ""});
  sparse.events.push_back({0, 1 - 1e-9, 1, "compute", ""});  // the span ends at 1 s
  rects = chart::gantt_rects(sparse);
  REQUIRE(rects.size() == 1);
  CHECK(rects[0].coverage == 0.25);
  CHECK(chart::render(sparse).find("fill-opacity=\"0.25\"") != std::string::npos);

  // Alternating categories cannot merge: 2 rows x 20,000 events. Over the cap, each
  // row is bucketed by pixel and shows its dominant category: compute (0.7 of each
  // pair) in the first half, sync in the second half -> two rectangles per row.
  chart::GanttChart dense;
  dense.rows = {"IPU 0", "IPU 1"};
  dense.max_rects = 3000;
  for (std::size_t row = 0; row < 2; ++row)
    for (int i = 0; i < 10000; ++i) {
      const double t = i * 1e-4;
      const bool first_half = i < 5000;
      dense.events.push_back({row, t, t + (first_half ? 0.7e-4 : 0.3e-4), "compute", ""});
      dense.events.push_back({row, t + (first_half ? 0.7e-4 : 0.3e-4), t + 1e-4, "sync", ""});
    }
  rects = chart::gantt_rects(dense);
  REQUIRE(rects.size() == 4);
  CHECK(rects[0].category == "compute");
  CHECK(rects[1].category == "sync");
  CHECK(rects[0].x0 == Approx(70));
  CHECK(rects[1].x1 == Approx(1176));
  CHECK(rects[0].x1 == Approx(70 + 553).margin(1.0));  // the switch at half the span, within a bucket
  const std::string svg = chart::render(dense);
  CHECK(count(svg, "<rect") <= 3000 + 20);  // plus background, row stripes and legend swatches
}

// ------------------------------------------------------------------ end to end

TEST_CASE("ipusim report builds HTML and Markdown from a run with a sweep and a trace", "[report][e2e]") {
  const fs::path dir = fresh_dir("e2e");
  const fs::path out = make_report(dir, true);
  const std::string html = read(out / "report.html");
  const std::string md = read(out / "report.md");
  const Json run = Json::parse(read(dir / "run.json"));

  // Self-contained: no scripts, no external references.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(count(html, "://") == count(html, "http://www.w3.org/2000/svg"));  // only the SVG namespace
  CHECK(count(html, "src=") == 0);
  CHECK(count(html, "<link") == 0);
  CHECK(html.find("<title>Sharded &lt;vs&gt; pipelined</title>") != std::string::npos);

  // (a) throughput and the speed-up, with the numbers of the run document.
  CHECK(html.find("Throughput: mlp-inference") != std::string::npos);
  for (const Json& r : run["runs"])
    CHECK(html.find(format_rate(r["throughputSamplesPerSecond"].get<double>(), "samples/s")) != std::string::npos);
  const std::string speedup = format_fixed(run["speedupPipelinedOverSharded"].get<double>(), 2) + "x";
  CHECK(html.find("speed-up " + speedup) != std::string::npos);
  // Two run inputs: a summary chart of their speed-ups.
  CHECK(html.find("Pipelined speed-up over sharded, per run input") != std::string::npos);
  // (c) utilisation, (f) tables with units, (g) provenance under the figures.
  CHECK(html.find("Utilisation per IPU: mlp-inference") != std::string::npos);
  CHECK(html.find("Step metrics: mlp-inference") != std::string::npos);
  CHECK(html.find(format_seconds(run["runs"][0]["stepTimeSeconds"].get<double>())) != std::string::npos);
  CHECK(html.find("Link traffic: mlp-inference") != std::string::npos);
  CHECK(html.find("Scenario: mlp-inference (scenarios/mlp-inference.json)") != std::string::npos);
  CHECK(html.find("batchesPerStep=64") != std::string::npos);
  // (d) no memory data for the plain run; the copy with memory gets its chart and table.
  CHECK(count(html, "no memory data") == 1);
  CHECK(html.find("Memory per virtual IPU: mlp-inference") != std::string::npos);
  // Memory is per virtual IPU (memory.ipus[].virtualIpu 0 and 1 in the document).
  CHECK(html.find(">vIPU 0<") != std::string::npos);
  CHECK(html.find(">vIPU 1<") != std::string::npos);
  CHECK(html.find("IPU -1") == std::string::npos);
  CHECK(html.find("capacity 900.0 MiB") != std::string::npos);
  CHECK(html.find("950.0 MiB") != std::string::npos);
  // (b) the sweep: figures against G, hand-made numbers, the failed point listed.
  CHECK(html.find("Throughput vs execution.gradientAccumulation") != std::string::npos);
  CHECK(html.find("Bubble fraction vs execution.gradientAccumulation") != std::string::npos);
  CHECK(html.find("3.000 ksamples/s") != std::string::npos);
  CHECK(html.find("3.500 ksamples/s") != std::string::npos);
  CHECK(html.find("3.00x") != std::string::npos);  // 64 ms / 21.3 ms at G = 4
  CHECK(html.find("simulated failure &lt;b&gt;&amp;") != std::string::npos);
  CHECK(html.find("failure <b>") == std::string::npos);
  CHECK(html.find("Failed points: fake G sweep") != std::string::npos);
  const std::string sweep_svg = figure_file(out, "fake-g-sweep-throughput");
  CHECK(sweep_svg.find("(log scale)") != std::string::npos);  // 4..64 spans 16x
  CHECK(sweep_svg.find(">64</text>") != std::string::npos);
  CHECK(sweep_svg.find("class=\"error-mark\"") != std::string::npos);
  // (e) the trace's Gantt chart.
  CHECK(html.find("Timeline of one step: fake-trace, sharded") != std::string::npos);
  CHECK(html.find("3 events on 2 tracks, drawn as 3 rectangles") != std::string::npos);

  // Markdown: the same tables, figures as files that exist.
  CHECK(md.find("| step time |") != std::string::npos);
  CHECK(md.find("simulated failure &lt;b&gt;&amp;") != std::string::npos);
  std::size_t figures = 0;
  for (auto p = md.find("](figures/"); p != std::string::npos; p = md.find("](figures/", p + 1)) {
    const std::string file = md.substr(p + 2, md.find(')', p) - p - 2);
    CHECK(fs::exists(out / file));
    CHECK(read(out / file).rfind("<?xml", 0) == 0);
    ++figures;
  }
  CHECK(figures >= 7);
  CHECK(count(html, "<figure") == figures);

  // No overwrite without --force; with it, the same inputs give the same bytes.
  const std::string inputs = " '" + (dir / "run-nomemory.json").string() + "' '" + (dir / "run-memory.json").string() +
                             "' '" + (dir / "sweep").string() + "' '" + (dir / "trace.json").string() +
                             "' --title 'Sharded <vs> pipelined' -o '" + (out).string() + "' --notes '" +
                             (dir / "notes.md").string() + "'";
  CHECK(shell(binary() + " report" + inputs, dir / "again.log") == 2);
  CHECK(read(dir / "again.log").find("--force") != std::string::npos);
  CHECK(shell(binary() + " report" + inputs + " --force", dir / "force.log") == 0);
  CHECK(read(out / "report.html") == html);
  CHECK(read(out / "report.md") == md);
  fs::remove_all(dir);
}

TEST_CASE("ipusim report rejects inputs it cannot read", "[report][e2e]") {
  const fs::path dir = fresh_dir("bad");
  write(dir / "other.json", "{\"foo\": 1}");
  CHECK(shell(binary() + " report '" + (dir / "other.json").string() + "' -o '" + (dir / "out").string() + "'",
              dir / "log") == 2);
  CHECK(read(dir / "log").find("report.input-kind") != std::string::npos);
  write(dir / "sweep" / "results.jsonl", "{\"status\": \"ok\", \"axes\": {}}\n");
  CHECK(shell(binary() + " report '" + (dir / "sweep").string() + "' -o '" + (dir / "out").string() + "'",
              dir / "log") == 2);
  CHECK(read(dir / "log").find("line 1") != std::string::npos);
  CHECK(read(dir / "log").find("[report.bad-sweep]") != std::string::npos);
  write(dir / "run.json", "{\"runs\": [{\"mode\": \"sharded\"}]}");
  CHECK(shell(binary() + " report '" + (dir / "run.json").string() + "' -o '" + (dir / "out").string() + "'",
              dir / "log") == 2);
  CHECK(read(dir / "log").find("at /runs/0: a run needs a number \"stepTimeSeconds\" [report.bad-run]") != std::string::npos);
  CHECK(!fs::exists(dir / "out" / "report.html"));
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ real browser

TEST_CASE("headless Chromium renders the report without errors", "[report][browser]") {
  if (!fs::exists("/usr/bin/chromium")) {
    WARN("skipped: /usr/bin/chromium is missing (apt-get install chromium)");
    return;
  }
  const fs::path dir = fresh_dir("browser");
  const fs::path out = make_report(dir, true);
  const std::string flags = "timeout 180 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic "
                            "--no-first-run --disable-background-networking --disable-component-update "
                            "--disable-sync --hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir='";
  const std::string page = "'file://" + fs::absolute(out / "report.html").string() + "'";
  const fs::path png = dir / "screenshot.png";
  REQUIRE(shell(flags + (dir / "profile1").string() + "' --window-size=1280,2000 --screenshot='" + png.string() +
                    "' " + page,
                dir / "screenshot.log") == 0);
  REQUIRE(shell(flags + (dir / "profile2").string() + "' --dump-dom " + page + " >'" + (dir / "dom.html").string() +
                    "' 2>'" + (dir / "dom.log").string() + "'") == 0);

  // The page logged nothing to the console: no script errors, no blocked loads
  // (its Content-Security-Policy forbids every fetch, so a reference out would show).
  for (const char* log : {"screenshot.log", "dom.log"}) {
    INFO(log << ":\n" << read(dir / log));
    CHECK(read(dir / log).find(":CONSOLE") == std::string::npos);
  }
  // The DOM Chromium built holds every inline SVG figure.
  const std::string dom = read(dir / "dom.html");
  const std::size_t figures = count(read(out / "report.html"), "<figure");
  CHECK(figures >= 8);
  CHECK(count(dom, "<svg") == figures);
  CHECK(dom.find("Throughput vs execution.gradientAccumulation") != std::string::npos);
  // The parts of issue 14 as the browser built them: findings opening the sections, the
  // user's notes rendered (their markup escaped), the stacked time breakdown, the
  // fullest-tile chart and the out-of-memory sweep point.
  CHECK(count(dom, "<p class=\"finding\"><b>Finding.</b>") >= 4);  // summary, 2 runs, sweep, trace
  CHECK(dom.find("<h3>Study notes</h3>") != std::string::npos);
  CHECK(dom.find("Why we ran <b>this</b>: &lt;i&gt;two&lt;/i&gt; splits.") != std::string::npos);
  CHECK(dom.find("Where the step time goes") != std::string::npos);
  CHECK(count(dom, "class=\"stack\"") > 10);
  CHECK(dom.find("Fullest tile per virtual IPU") != std::string::npos);
  CHECK(count(dom, "class=\"oom-mark\"") == 2);  // throughput and bubble charts of the sweep

  // The screenshot: right size, not blank, and the mode colours of the bars
  // (#0072B2 sharded, #E69F00 pipelined) filling many pixels.
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  REQUIRE(shell(python + " tests/png_stats.py '" + png.string() + "' 0072B2 E69F00", dir / "stats.txt") == 0);
  std::istringstream stats(read(dir / "stats.txt"));
  int width = 0, height = 0;
  long colours = 0, blue = 0, orange = 0;
  double stddev = 0, non_white = 0;
  stats >> width >> height >> colours >> stddev >> non_white >> blue >> orange;
  INFO("stats: " << read(dir / "stats.txt"));
  CHECK(width == 1280);
  CHECK(height == 2000);
  CHECK(colours > 100);
  CHECK(stddev > 15);
  CHECK(non_white > 0.05);
  CHECK(blue > 5000);
  CHECK(orange > 5000);
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ findings and notes

namespace {

// Two modes of G = 4 (64 samples per step): sharded at 1000 samples/s (64 ms), pipelined
// at 2500 samples/s (25.6 ms), with the attribution of the step time given by hand.
Json attributed_run() {
  Json doc = fake_run(4, 1000, 2500, 0.15);
  Json& sharded = doc["runs"][0];
  Json& pipelined = doc["runs"][1];
  sharded["timeShares"] = {{"compute", 0.4}, {"hostIo", 0.1}, {"exchange", 0.05}, {"sync", 0.0},
                            {"idleTurnWait", 0.45}};
  pipelined["timeShares"] = {{"compute", 0.5},         {"hostIo", 0.2},          {"exchange", 0.1},
                              {"sync", 0.05},           {"idleFillFlush", 0.1}, {"idleImbalance", 0.05},
                              {"idleCopyWait", 0.0}};
  pipelined["bottleneck"] = {{"ipu", 1}, {"stage", 1}};
  const double step = pipelined["stepTimeSeconds"].get<double>();
  // IPU 0 idles 20 % of the step (15 % fill and flush, 5 % imbalance), IPU 1 10 %.
  pipelined["ipus"][0]["idleSeconds"] = 0.2 * step;
  pipelined["ipus"][0]["idle"] = {{"fillFlushSeconds", 0.15 * step}, {"imbalanceSeconds", 0.05 * step}};
  pipelined["ipus"][1]["idleSeconds"] = 0.1 * step;
  pipelined["ipus"][1]["idle"] = {{"fillFlushSeconds", 0.05 * step}, {"imbalanceSeconds", 0.05 * step}};
  pipelined["memory"] = {{"fits", false},
                         {"ipus",
                          {{{"virtualIpu", 0}, {"fullestTileBytes", 200000.0}, {"tileCapacityBytes", 638976.0},
                            {"fits", true}},
                           {{"virtualIpu", 1}, {"fullestTileBytes", 700000.0}, {"tileCapacityBytes", 638976.0},
                            {"fits", false}}}}};
  return doc;
}

} // namespace

TEST_CASE("each report section opens with findings computed from the data, and --notes adds the user's text",
          "[report][e2e]") {
  const fs::path dir = fresh_dir("findings");
  write(dir / "run.json", attributed_run().dump());
  write_fake_sweep(dir / "sweep");
  write(dir / "notes.md", "# Why we ran this\n\nG = 4 on **two** IPUs <b>&amp;</b>.\n\n- first `x<y`\n- second\n");
  REQUIRE(shell(binary() + " report '" + (dir / "run.json").string() + "' '" + (dir / "sweep").string() +
                    "' --notes '" + (dir / "notes.md").string() + "' -o '" + (dir / "out").string() + "'",
                dir / "log") == 0);
  const std::string md = read(dir / "out" / "report.md");
  const std::string html = read(dir / "out" / "report.html");
  INFO(md);
  // The run: 2500 / 1000 samples/s = 2.50x; 64 samples in 64 ms and in 25.6 ms.
  CHECK(md.find("**Finding.** Pipelined (popart) wins: 2.50x the throughput of sharded (2.500 ksamples/s against "
                "1.000 ksamples/s; 25.60 ms against 64.00 ms per step).") != std::string::npos);
  CHECK(md.find("Its IPU time is 50.0 % compute, 20.0 % host I/O, 10.0 % copies, 5.0 % syncs, 15.0 % idle "
                "(10.0 % fill and flush, 5.0 % imbalance).") != std::string::npos);
  CHECK(md.find("Sharded loses 45.0 % of its IPU time to waiting for its turn.") != std::string::npos);
  CHECK(md.find("The bottleneck is IPU 1 (stage 1), 50.0 % busy; the most idle IPU is IPU 0, idle 20.0 % of the "
                "step, mostly fill and flush (15.0 %).") != std::string::npos);
  // 700000 B = 683.6 KiB against 638976 B = 624.0 KiB.
  CHECK(md.find("Pipelined (popart) does not fit in memory on vIPU 1 (fullest tile 683.6 KiB of 624.0 KiB).") !=
        std::string::npos);
  // The summary, one run input: speed-up 64 ms / 25.6 ms.
  CHECK(md.find("Pipelining is faster than sharding in 1 of 1 run input: 2.50x (fake-mlp).") != std::string::npos);
  // The sweep: G = 64 at 3500 samples/s beats G = 4 at 3000 (1.17x); G = 16 (5000) does not fit.
  CHECK(md.find("4 points: 2 ran and fit in memory, 1 out of memory (execution.gradientAccumulation=16), 1 failed "
                "(execution.gradientAccumulation=8).") != std::string::npos);
  CHECK(md.find("Fastest that fits: execution.gradientAccumulation=64, pipelined (popart), 3.500 ksamples/s: 1.17x "
                "the next best (execution.gradientAccumulation=4, 3.000 ksamples/s).") != std::string::npos);
  CHECK(md.find("Pipelining beats sharding at 2 of 2 points that fit.") != std::string::npos);
  CHECK(md.find("Faster but out of memory, so not possible as configured: execution.gradientAccumulation=16.") !=
        std::string::npos);
  // Findings open their sections: the run's comes before its first figure.
  CHECK(md.find("Pipelined (popart) wins") < md.find("![Figure 1"));
  // The same sentences in the HTML, escaped.
  CHECK(html.find("<p class=\"finding\"><b>Finding.</b> Pipelined (popart) wins: 2.50x") != std::string::npos);

  // The notes: verbatim in Markdown, escaped and rendered in HTML.
  CHECK(md.find("## Notes\n\n# Why we ran this\n\nG = 4 on **two** IPUs <b>&amp;</b>.\n\n- first `x<y`\n- second\n") !=
        std::string::npos);
  CHECK(html.find("<h3>Why we ran this</h3>\n<p>G = 4 on <b>two</b> IPUs &lt;b&gt;&amp;amp;&lt;/b&gt;.</p>\n<ul>\n"
                  "<li>first <code>x&lt;y</code></li>\n<li>second</li>\n</ul>") != std::string::npos);
  CHECK(html.find("<a href=\"#notes\">Notes</a>") != std::string::npos);

  // A missing or binary notes file: exit 2, located, nothing written.
  const std::string run = " '" + (dir / "run.json").string() + "' -o '" + (dir / "out2").string() + "'";
  CHECK(shell(binary() + " report" + run + " --notes '" + (dir / "absent.md").string() + "'", dir / "log") == 2);
  CHECK(read(dir / "log").find((dir / "absent.md").string()) != std::string::npos);
  CHECK(read(dir / "log").find("[file.missing]") != std::string::npos);
  write(dir / "binary.md", std::string("abc\xff\xfe", 5));
  CHECK(shell(binary() + " report" + run + " --notes '" + (dir / "binary.md").string() + "'", dir / "log") == 2);
  CHECK(read(dir / "log").find("binary.md") != std::string::npos);
  CHECK(read(dir / "log").find("[report.bad-notes]") != std::string::npos);
  CHECK(!fs::exists(dir / "out2" / "report.html"));
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ charts of issue 14

TEST_CASE("a long chart title wraps at spaces inside the chart's width", "[report][chart]") {
  const std::string title = "Throughput vs execution.gradientAccumulation with model by execution.microBatchSize "
                            "[execution.replicas=2, execution.recomputation=pipeline]";
  const auto lines = chart::title_lines(title, 640);
  REQUIRE(lines.size() >= 2);
  std::string joined;
  for (const auto& l : lines) {
    CHECK(chart::text_width(l, 15) <= 640 - 24);
    joined += (joined.empty() ? "" : " ") + l;
  }
  CHECK(joined == title);
  chart::LineChart c;
  c.title = title;
  c.series.push_back({"s", "", {{1, 1.0}, {2, 2.0}}});
  const std::string svg = chart::render(c);
  CHECK(count(svg, "font-weight=\"bold\"") == lines.size());
  // The plot moved down by 18 px per extra line: the default 640 x 360 chart grows.
  CHECK(svg.find("height=\"" + chart::coord(360 + 18.0 * static_cast<double>(lines.size() - 1)) + "\"") !=
        std::string::npos);
  CHECK(chart::title_lines("short", 640) == std::vector<std::string>{"short"});
}

TEST_CASE("report charts: time breakdown, fullest tile, out-of-memory points and one y-scale per sweep",
          "[report][e2e]") {
  const fs::path dir = fresh_dir("charts");
  write(dir / "run.json", attributed_run().dump());
  write_fake_sweep(dir / "sweep");
  // Four panels (two other axes, two values each) whose throughputs differ 8-fold.
  std::string lines;
  int point = 0;
  for (int a : {1, 2})
    for (int b : {1, 2})
      for (int g : {4, 64}) {
        const double scale = a * b * (g == 64 ? 2 : 1);  // 1 .. 8
        lines += Json{{"point", point}, {"id", "p" + std::to_string(point)}, {"status", "ok"},
                      {"axes", {{"execution.gradientAccumulation", g}, {"x.a", a}, {"x.b", b}}},
                      {"report", fake_run(g, 500 * scale, 1000 * scale, 0.1)}}
                     .dump() +
                 "\n";
        ++point;
      }
  write(dir / "panels" / "results.jsonl", lines);
  REQUIRE(shell(binary() + " report '" + (dir / "run.json").string() + "' '" + (dir / "sweep").string() + "' '" +
                    (dir / "panels").string() + "' -o '" + (dir / "out").string() + "'",
                dir / "log") == 0);
  const fs::path out = dir / "out";

  // Time breakdown: sharded has time_shares only (one bar), pipelined also per IPU (three).
  const std::string breakdown = figure_file(out, "time-breakdown");
  CHECK(breakdown.find("sharded: all IPUs, idle: waiting for its turn: 45.0%") != std::string::npos);
  CHECK(breakdown.find("pipelined (popart): all IPUs, compute: 50.0%") != std::string::npos);
  // IPU 0: busy 1/4 of the step, idle 15 % fill and flush and 5 % imbalance.
  CHECK(breakdown.find("pipelined (popart): IPU 0, compute: 25.0%") != std::string::npos);
  CHECK(breakdown.find("pipelined (popart): IPU 0, idle: fill and flush: 15.0%") != std::string::npos);
  CHECK(breakdown.find("pipelined (popart): IPU 1, idle: imbalance: 5.0%") != std::string::npos);
  CHECK(breakdown.find(">idle: waiting on updates<") == std::string::npos);  // zero everywhere: not in the legend

  // The per-tile verdict: 700000 B = 684 KiB over a 624.0 KiB tile.
  const std::string tiles = figure_file(out, "fullest-tile");
  CHECK(tiles.find("tile memory 624.0 KiB") != std::string::npos);
  CHECK(tiles.find(">684</text>") != std::string::npos);
  CHECK(tiles.find(">195</text>") != std::string::npos);  // 200000 B

  // G = 16 does not fit in pipelined mode: a hollow marker, once per chart, not a line point.
  for (const char* which : {"fake-g-sweep-throughput", "fake-g-sweep-bubble"}) {
    const std::string svg = figure_file(out, which);
    CHECK(count(svg, "class=\"oom-mark\"") == 1);
    CHECK(svg.find("out of memory (not possible)") != std::string::npos);
    CHECK(count(svg, "class=\"error-mark\"") == 1);  // G = 8 failed
  }
  // The 5000 samples/s of the out-of-memory point sets the scale, not a line: the
  // pipelined line is two segments (G = 4, then G = 64 after the gaps).
  const std::string sweep = figure_file(out, "fake-g-sweep-throughput");
  CHECK(sweep.find(">5000</text>") != std::string::npos);
  // Sharded: G = 4, gap (failed), G = 16 to 64; pipelined: G = 4, gaps, G = 64. One restart each.
  CHECK(count(sweep, "class=\"series\"") == 2);
  CHECK(count(sweep, " M") == 2);

  // Every throughput panel of the four-panel sweep has the same axis: up to 8000 samples/s.
  std::size_t panels = 0;
  for (const auto& e : fs::directory_iterator(out / "figures")) {
    const std::string name = e.path().filename().string();
    if (name.find("panels-throughput") == std::string::npos) continue;
    ++panels;
    CHECK(read(e.path()).find(">8000</text>") != std::string::npos);
  }
  CHECK(panels == 4);
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ large traces

TEST_CASE("a report from a large trace reads it as a stream, in bounded memory", "[report][e2e][large]") {
  const fs::path dir = fresh_dir("large");
  // 4 IPU tracks x 50,000 slices of 1 us back to back, as `run --trace` writes them (one
  // event a line, args included): about 30 MB.
  constexpr int kTracks = 4, kPerTrack = 50000;
  {
    std::ofstream out(dir / "big.trace.json", std::ios::binary);
    out << "{\"traceEvents\":[\n"
        << R"j({"args":{"name":"pipelined (popart)"},"name":"process_name","ph":"M","pid":1,"tid":0})j";
    for (int t = 1; t <= kTracks; ++t)
      out << ",\n{\"args\":{\"name\":\"IPU " << t - 1 << "\"},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << t
          << "}";
    for (int t = 1; t <= kTracks; ++t)
      for (int i = 0; i < kPerTrack; ++i)
        out << ",\n{\"args\":{\"ipu\":" << t - 1 << ",\"micro_batch\":" << i << ",\"pass\":\"forward\",\"stage\":" << t - 1
            << "},\"cat\":\"" << (i % 2 == 0 ? "compute" : "exchange") << "\",\"dur\":1.0,\"name\":\"stage " << t - 1
            << " fwd mb " << i << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << t << ",\"ts\":" << i << ".0}";
    out << "\n],\n\"otherData\":{\"scenario\":\"big\"}}\n";
  }
  const auto file_bytes = static_cast<double>(fs::file_size(dir / "big.trace.json"));
  REQUIRE(file_bytes > 25e6);
  double peak_bytes = 0;
  REQUIRE(shell_peak(binary() + " report '" + (dir / "big.trace.json").string() + "' -o '" + (dir / "out").string() + "'",
                     dir / "log", peak_bytes) == 0);
  // Every slice counted: 200,000 events on 4 tracks; half of each track's 50 ms computing.
  const std::string md = read(dir / "out" / "report.md");
  CHECK(md.find("200000 events on 4 tracks") != std::string::npos);
  CHECK(md.find("the 4 IPU tracks spend their 50.00 ms as 50.0 % compute, 50.0 % exchange") != std::string::npos);
  // Peak memory of the report: the program (38 MB),
  // the text once and compact records (122 MB in all for this 31 MB file), not a JSON
  // document of the events (425 MB when the report held one).
#ifdef IPUSIM_TEST_ASAN
  WARN("a sanitizer build's own memory overhead (750 MiB here) says nothing of the report's: not checked");
  (void)peak_bytes;
#else
  INFO("peak " << peak_bytes / 1048576 << " MiB for a " << file_bytes / 1048576 << " MiB trace");
  CHECK(peak_bytes < 5 * file_bytes);
#endif
  fs::remove_all(dir);
}

TEST_CASE("a 64-IPU report's chart labels never overlap, measured in headless Chromium", "[report][browser][costly]") {
  if (!fs::exists("/usr/bin/chromium")) {
    WARN("skipped: /usr/bin/chromium is missing (apt-get install chromium)");
    return;
  }
  const fs::path dir = fresh_dir("labels");
  // A 64-layer decoder, a layer per IPU of a Bow Pod64, training: 65 stages, 64 bars per
  // utilisation, memory and fullest-tile chart, 130 stacked bars.
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string per_ipu = "1";
  for (int i = 1; i < 64; ++i) per_ipu += ",1";
  REQUIRE(shell(python + " scripts/make_gpt_model.py --hidden 64 --heads 2 --seq 16 --vocab 100 --layers-per-ipu " +
                    per_ipu + " -o '" + (dir / "g64.json").string() + "'",
                dir / "make.log") == 0);
  REQUIRE(shell(binary() + " run '" + (dir / "g64.json").string() + "' --config configs/bow-pod64.json --set "
                           "execution.training=true --set execution.gradientAccumulation=256 --set "
                           "execution.optimizer.type=sgd --json -o '" + (dir / "run.json").string() + "'",
                dir / "run.log") == 0);
  REQUIRE(shell(binary() + " report '" + (dir / "run.json").string() + "' -o '" + (dir / "out").string() + "'",
                dir / "report.log") == 0);

  // The page: a control figure with two labels drawn on top of each other (the check must
  // find exactly that pair), then every figure of the report, then the measuring script.
  std::string page = "<!DOCTYPE html><html><body>"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"50\" font-size=\"12\">"
                     "<text x=\"10\" y=\"20\">IPU 10</text><text x=\"14\" y=\"22\">IPU 11</text>"
                     "<text x=\"120\" y=\"20\">apart</text></svg>\n";
  std::vector<fs::path> figures;
  for (const auto& e : fs::directory_iterator(dir / "out" / "figures")) figures.push_back(e.path());
  std::sort(figures.begin(), figures.end());
  REQUIRE(figures.size() >= 5);
  for (const fs::path& f : figures) page += read(f) + "\n";
  page += "<pre id=\"overlaps\"></pre><script>" + read(fs::path(IPUSIM_SOURCE_DIR) / "tests" / "label_overlaps.js") +
          "</script></body></html>\n";
  write(dir / "page.html", page);
  REQUIRE(shell("timeout 180 /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run "
                "--disable-background-networking --disable-component-update --disable-sync --user-data-dir='" +
                    (dir / "profile").string() + "' --dump-dom 'file://" + (dir / "page.html").string() + "' >'" +
                    (dir / "dom.html").string() + "' 2>'" + (dir / "dom.log").string() + "'") == 0);
  const std::string dom = read(dir / "dom.html");
  const std::size_t open = dom.find("<pre id=\"overlaps\">");
  REQUIRE(open != std::string::npos);
  const std::string result = dom.substr(open, dom.find("</pre>", open) - open);
  INFO(result);
  CHECK(result.find("0: \"IPU 10\" / \"IPU 11\"") != std::string::npos);  // the control
  CHECK(result.find("0: 3 texts checked") != std::string::npos);
  // Every report figure measured, none with an overlapping pair.
  for (std::size_t i = 1; i <= figures.size(); ++i) CHECK(result.find(std::to_string(i) + ": ") != std::string::npos);
  CHECK(count(result, "\" / \"") == 1);
  // The 64 IPU labels thinned: under the utilisation chart fewer than 64 "IPU n" labels.
  const std::string utilisation = read(figures.at(1));
  CHECK(utilisation.find("Utilisation per IPU") != std::string::npos);
  CHECK(count(utilisation, ">IPU ") < 64);
  CHECK(count(utilisation, ">IPU 0<") == 1);
  fs::remove_all(dir);
}
