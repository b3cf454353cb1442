// `ipusim run --schedules`: one scenario under every pipeline schedule side by side, through
// the binary: each row is the run `--set execution.schedule=NAME` gives, a refused schedule
// is a row with its rule id, and compare, report, sweep and trace read such runs.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli_runner.hpp"
#include "support.hpp"
#include "sim/base/units.hpp"
#include "sim/report/sections.hpp"
#include "sim/schedule/schedule.hpp"
#include "temp_dir.hpp"

using namespace ipusim::test;
namespace fs = std::filesystem;

namespace {

std::string source(const std::string& relative) { return std::string(IPUSIM_SOURCE_DIR) + "/" + relative; }

const std::string kMlp = source("scenarios/mlp-training.json");

Json json_of(const Result& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return Json::parse(r.out);
}

// The pipeline schedules `ipusim list` prints, in its order ("sharded" is a mode).
std::vector<std::string> listed_schedules() {
  const Result list = run_ipusim({"list"});
  REQUIRE(list.exit_code == 0);
  std::vector<std::string> out;
  std::istringstream lines(list.out);
  std::string line;
  std::getline(lines, line);  // "Schedules (...):"
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    const std::string name = line.substr(2, line.find(':') - 2);
    if (name != "sharded" && name != "phased") out.push_back(name);
  }
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The one figure of the report folder whose file name contains `part`.
std::string figure(const fs::path& dir, const std::string& part) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir / "figures"))
    if (e.path().filename().string().find(part) != std::string::npos) found.push_back(e.path());
  REQUIRE(found.size() == 1);
  return read(found.front());
}

} // namespace

TEST_CASE("run --schedules all: a run per schedule, each the run --set execution.schedule gives", "[side-by-side]") {
  const std::vector<std::string> listed = listed_schedules();
  // `list` prints the registry's pipeline schedules in its order (popart, 3 TensorFlow, gpipe,
  // 1f1b, then the what-if orders): a schedule added to the registry is a row here too.
  std::vector<std::string> registered;
  for (const ipusim::ScheduleInfo& s : ipusim::schedules())
    if (s.pipeline) registered.push_back(s.name);
  REQUIRE(listed == registered);
  REQUIRE(listed.size() >= 14);  // none of the 6 framework and GPU-style and 8 what-if schedules lost
  const Json doc = json_of(run_ipusim({"run", kMlp, "--schedules", "all", "--json"}));
  CHECK(doc.at("schedules") == Json(listed));
  CHECK(doc.at("runs").size() + doc.at("schedulesRefused").size() == listed.size());

  std::set<std::string> ran;
  for (const Json& run : doc.at("runs")) {
    const std::string schedule = run.at("schedule");
    INFO(schedule);
    ran.insert(schedule);
    CHECK(run.at("mode") == "pipelined");
    const Json one = json_of(run_ipusim({"run", kMlp, "--set", "execution.schedule=" + schedule, "--json"}));
    const Json* alone = nullptr;
    for (const Json& r : one.at("runs"))
      if (r.at("mode") == "pipelined") alone = &r;
    REQUIRE(alone != nullptr);
    // Bit for bit: the same scenario, plan, schedule and memory model.
    CHECK(run.at("stepTimeSeconds").get<double>() == alone->at("stepTimeSeconds").get<double>());
    CHECK(run.at("throughputSamplesPerSecond").get<double>() == alone->at("throughputSamplesPerSecond").get<double>());
    CHECK(run.at("bubbleFraction").get<double>() == alone->at("bubbleFraction").get<double>());
    CHECK(run.at("memory") == alone->at("memory"));
    // What-if: every schedule but PopART's and TensorFlow's (no IPU framework runs GPipe or 1F1B either).
    CHECK(run.value("whatIf", false) == (schedule != "popart" && schedule.rfind("tf-", 0) != 0));
    // TensorFlow keeps the annotated stages: its plan is recorded where it is not popart's.
    const bool own_plan = doc.contains("schedulePlans") && doc.at("schedulePlans").contains(schedule);
    CHECK((own_plan ? doc.at("schedulePlans").at(schedule) : doc.at("plan")) == one.at("plan"));
  }
  // mlp-training has one stage per IPU: PopART's, TensorFlow's, GPipe, 1F1B, ZB-H and DualPipe run.
  for (const char* s :
       {"popart", "tf-grouped", "tf-interleaved", "tf-sequential", "gpipe", "1f1b", "zb-h1", "zb-h2", "dualpipe"})
    CHECK(ran.count(s) == 1);
  std::map<std::string, std::string> rules;
  for (const Json& f : doc.at("schedulesRefused")) rules[f.at("schedule")] = f.at("rule");
  CHECK(rules.at("interleaved-1f1b") == "pipeline.virtual-stages");  // two stages on two IPUs: no virtual stages
  CHECK(rules.at("zb-v") == "pipeline.v-placement");
  CHECK(rules.count("dualpipe") == 0);
}

TEST_CASE("run --schedules: the table has a row per schedule, refusals with their rule id", "[side-by-side]") {
  const Result r = run_ipusim({"run", kMlp, "--schedules", "popart,zb-h1,interleaved-1f1b"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // one ran at least
  const Json doc = json_of(run_ipusim({"run", kMlp, "--schedules", "popart,zb-h1,interleaved-1f1b", "--json"}));
  std::map<std::string, std::string> row;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    for (const char* s : {"popart", "zb-h1", "interleaved-1f1b"})
      if (line.rfind(std::string(s) + " ", 0) == 0) {
        CHECK(row.count(s) == 0);
        row[s] = line;
      }
  REQUIRE(row.size() == 3);
  CHECK(row["interleaved-1f1b"].find("refused [pipeline.virtual-stages]") != std::string::npos);
  CHECK(row["zb-h1"].find("what-if schedule") != std::string::npos);
  CHECK(row["popart"].find("what-if") == std::string::npos);
  // Each ran row shows its step time as the document has it, and its verdict.
  std::string fastest;
  double least = 1e300;
  for (const Json& run : doc.at("runs")) {
    const std::string s = run.at("schedule");
    const double step = run.at("stepTimeSeconds");
    CHECK(row[s].find(" " + ipusim::format_seconds(step) + " ") != std::string::npos);
    const std::string fits = run.at("/memory/fits"_json_pointer).get<bool>() ? " yes " : " no ";
    CHECK((row[s] + " ").find(fits) != std::string::npos);  // the last cell of a row without a note
    if (step < least) least = step, fastest = s;
  }
  CHECK(doc.at("runs").size() == 2);
  CHECK(r.out.find("Fastest: " + fastest + " (" + ipusim::format_seconds(least) + ")") != std::string::npos);
}

TEST_CASE("run --schedules: every schedule refused is exit 2, an unknown name too", "[side-by-side]") {
  const Result none = run_ipusim({"run", kMlp, "--schedules", "zb-v,dualpipe", "--set", "execution.gradientAccumulation=3"});
  CHECK(none.exit_code == 2);
  CHECK(none.out.empty());
  CHECK(none.err.find("[run.no-schedule-ran]") != std::string::npos);
  CHECK(none.err.find("zb-v refused [pipeline.v-placement]") != std::string::npos);
  CHECK(none.err.find("dualpipe refused [pipeline.dualpipe-depth]") != std::string::npos);
  const Result unknown = run_ipusim({"run", kMlp, "--schedules", "popart,zb-h3"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("[scenario.unknown-schedule]") != std::string::npos);
  CHECK(unknown.err.find("zb-h1") != std::string::npos);  // did you mean
  const Result empty = run_ipusim({"run", kMlp, "--schedules", ""});
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("an empty schedule name") != std::string::npos);
  const Result traced = run_ipusim({"run", kMlp, "--schedules", "all", "--trace", "-"});
  CHECK(traced.exit_code == 2);
  CHECK(traced.err.find("[cli.conflict]") != std::string::npos);
}

TEST_CASE("compare and report read a document of several schedules", "[side-by-side][report]") {
  TempDir dir;
  const std::string file = dir / "schedules.json";
  REQUIRE(run_ipusim({"run", kMlp, "--schedules", "popart,1f1b,zb-h1,interleaved-1f1b", "--json", "-o", file}).exit_code == 0);
  const Json doc = Json::parse(read(file));
  REQUIRE(doc.at("runs").size() == 3);

  const Result c = run_ipusim({"compare", file});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("A: " + file + " [popart]") != std::string::npos);
  CHECK(c.out.find("B: " + file + " [1f1b]") != std::string::npos);
  CHECK(c.out.find("B differs from A in: schedule \"popart\" -> \"1f1b\"") != std::string::npos);
  CHECK(c.out.find("C differs from A in: schedule \"popart\" -> \"zb-h1\"") != std::string::npos);
  CHECK(c.out.find("C against A, pipelined: ") != std::string::npos);
  const Result single = run_ipusim({"compare", source("scenarios/mlp-training.json")});
  CHECK(single.exit_code == 2);  // one document of one schedule: nothing to compare

  const Result report = run_ipusim({"report", file, "-o", dir / "report"});
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  const std::string svg = figure(dir.root() / "report", "schedules");
  // One marker per schedule that ran (filled: fits; hollow: does not), and the fits line.
  CHECK(count(svg, "</circle>") == 3);  // the legend's circles have no title
  for (const char* s : {"popart", "1f1b", "zb-h1"}) CHECK(svg.find(std::string(">") + s + "<") != std::string::npos);
  // The MLP's stash (KiB) is far below the 900 MiB of SRAM an IPU has: the title names it.
  CHECK(count(svg, "class=\"x-line\"") == 0);
  CHECK(svg.find("stash that fits: ") != std::string::npos);
  CHECK(read(dir.root() / "report" / "report.html").find("interleaved-1f1b refused [pipeline.virtual-stages]") !=
        std::string::npos);
}

TEST_CASE("a sweep over execution.schedule: a point per schedule, the refused one failed", "[side-by-side][sweep]") {
  TempDir dir;
  // sweeps/mlp-training-schedules.json: 7 schedules x G in {16, 64}.
  const Result r = run_ipusim({"sweep", source("sweeps/mlp-training-schedules.json"), "-o", dir / "out", "-j", "1"});
  INFO(r.out + r.err);
  CHECK(r.exit_code == 4);  // some points failed (docs/sweeps.md)
  const Json doc = json_of(run_ipusim({"run", kMlp, "--schedules", "all", "--json"}));  // G = 64
  std::map<std::string, double> step;
  for (const Json& run : doc.at("runs")) step[run.at("schedule")] = run.at("stepTimeSeconds");
  std::ifstream results(dir.root() / "out" / "results.jsonl");
  std::map<std::pair<std::string, int>, std::string> status;
  for (std::string line; std::getline(results, line);) {
    const Json point = Json::parse(line);
    const std::string schedule = point.at("axes").at("execution.schedule");
    const int G = point.at("axes").at("execution.gradientAccumulation");
    status[{schedule, G}] = point.at("status");
    if (point.at("status") == "ok" && G == 64)
      CHECK(point.at("/report/runs/0/stepTimeSeconds"_json_pointer).get<double>() == step.at(schedule));
    if (point.at("status") == "error")
      CHECK(point.at("error").get<std::string>().find("[pipeline.virtual-stages]") != std::string::npos);
  }
  REQUIRE(status.size() == 14);
  for (const auto& [key, value] : status) {
    INFO(key.first << " G=" << key.second);
    CHECK(value == (key.first == "interleaved-1f1b" ? "error" : "ok"));
  }
  REQUIRE(run_ipusim({"report", dir / "out", "-o", dir / "report"}).exit_code == 0);
  CHECK(count(figure(dir.root() / "report", "-schedules-schedules"), "</circle>") == 12);
}

TEST_CASE("trace: F, B and W slices have their own names and colours", "[side-by-side][trace]") {
  TempDir dir;
  for (const char* schedule : {"zb-h1", "1f1b"}) {
    INFO(schedule);
    const std::string file = dir / (std::string(schedule) + ".trace.json");
    REQUIRE(run_ipusim({"run", kMlp, "--mode", "pipelined", "--set", std::string("execution.schedule=") + schedule,
                        "--trace", file, "-o", "/dev/null"})
                .exit_code == 0);
    const Json trace = Json::parse(read(file));
    std::map<std::string, std::set<std::string>> colours, words;  // work -> cname, name word
    std::map<std::tuple<std::int64_t, std::int64_t>, double> b_end;  // (stage, micro-batch) -> end of its B
    std::vector<std::tuple<std::int64_t, std::int64_t, double>> w_start;
    for (const Json& e : trace.at("traceEvents")) {
      if (e.value("cat", "") != "compute" || !e.at("args").contains("work")) continue;
      const std::string work = e.at("args").at("work");
      colours[work].insert(e.at("cname"));
      const std::string name = e.at("name");
      words[work].insert(name.substr(name.find(' ', 6) + 1, name.find(" mb") - name.find(' ', 6) - 1));
      const auto key = std::make_tuple(e.at("args").at("stage").get<std::int64_t>(),
                                       e.at("args").at("microBatch").get<std::int64_t>());
      if (work == "B") b_end[key] = e.at("ts").get<double>() + e.at("dur").get<double>();
      if (work == "W") w_start.emplace_back(std::get<0>(key), std::get<1>(key), e.at("ts").get<double>());
    }
    if (std::string(schedule) == "zb-h1") {
      CHECK(colours == std::map<std::string, std::set<std::string>>{{"F", {"good"}}, {"B", {"bad"}}, {"W", {"rail_load"}}});
      CHECK(words == std::map<std::string, std::set<std::string>>{{"F", {"fwd"}}, {"B", {"bwd-input"}}, {"W", {"wgrad"}}});
      // W of a micro-batch follows its B (the weights' gradient needs the input's dY).
      REQUIRE(!w_start.empty());
      for (const auto& [stage, mb, start] : w_start) CHECK(start >= b_end.at({stage, mb}));
    } else {
      CHECK(colours == std::map<std::string, std::set<std::string>>{{"F", {"good"}}, {"BW", {"bad"}}});
      CHECK(words == std::map<std::string, std::set<std::string>>{{"F", {"fwd"}}, {"BW", {"bwd"}}});
    }
  }
}

TEST_CASE("bubble against stash: a point per schedule at its largest stash, the line at the stash that fits",
          "[side-by-side][report]") {
  constexpr double MiB = 1024.0 * 1024;
  // vIPU 0: 100 MiB of SRAM, 40 MiB of other memory; 20 MiB of stash fits, 70 does not.
  const auto run = [&](const char* schedule, double stash, bool fits) {
    return Json{{"mode", "pipelined"}, {"schedule", schedule}, {"bubbleFraction", stash / 1000 / MiB},
                {"memory", {{"fits", fits}, {"ipus", {{{"virtualIpu", 0}, {"capacityBytes", 100 * MiB},
                                                     {"totalBytes", 40 * MiB + stash},
                                                     {"categories", {{{"name", "stash"}, {"bytes", stash}}}}},
                                                    {{"virtualIpu", 1}, {"capacityBytes", 100 * MiB},
                                                     {"totalBytes", 10 * MiB},
                                                     {"categories", {{{"name", "stash"}, {"bytes", 1 * MiB}}}}}}}}}};
  };
  const Json a = run("popart", 20 * MiB, true), b = run("gpipe", 70 * MiB, false);
  const auto c = ipusim::report::schedule_memory_chart("x", {&a, &b});
  REQUIRE(c);
  REQUIRE(c->series.size() == 2);
  CHECK(c->series[0].name == "popart");
  CHECK(c->series[0].points.at(0).x == 20);
  CHECK(*c->series[0].points.at(0).y == Approx(0.02));
  CHECK_FALSE(c->series[0].points.at(0).out_of_memory);
  CHECK(c->series[1].points.at(0).x == 70);
  CHECK(c->series[1].points.at(0).out_of_memory);
  REQUIRE(c->x_lines.size() == 1);
  CHECK(c->x_lines[0].value == 60);  // 100 MiB - (60 - 20) MiB, from the first run
  const Json only = run("popart", 20 * MiB, true);
  CHECK_FALSE(ipusim::report::schedule_memory_chart("x", {&a, &only}));  // one schedule: no chart
}

TEST_CASE("run --schedules on a V: TensorFlow's schedules run with two stages on one IPU", "[side-by-side]") {
  // BERT-Large placed as a V: stages 3 and 4 both on IPU 3. tf-sequential and tf-grouped keep
  // them apart, and their plan listed a copy from IPU 3 to itself: the simulation process
  // died (internal fault, exit 3). Consecutive stages on one IPU now hand over in place.
  const Result r = run_ipusim({"run", source("scenarios/bert-large-v-training.json"),
                               "--schedules", "popart,tf-sequential,tf-grouped", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  std::map<std::string, double> step;
  for (const auto& run : doc.at("runs")) step[run.at("schedule").get<std::string>()] = run.at("stepTimeSeconds").get<double>();
  REQUIRE(step.size() == 3);
  // One stage at a time against all at once: sequential is slower than both lockstep pipelines.
  CHECK(step["tf-sequential"] > 3 * step["popart"]);
  CHECK(step["tf-sequential"] > 3 * step["tf-grouped"]);
}

TEST_CASE("plan: the best is a schedule an IPU framework runs; GPipe and 1F1B are what-if rows unless asked for",
          "[side-by-side][planner]") {
  // On mlp-training 1F1B is faster than PopART by a little (its fill overlaps the backward).
  const Result by_default = run_ipusim({"plan", kMlp, "--top", "1", "--quiet"});
  INFO(by_default.err);
  REQUIRE(by_default.exit_code == 0);
  const std::string first = line_starting(by_default.out, "#1 ");
  CHECK(first.find(", popart,") != std::string::npos);
  CHECK(line_starting(by_default.out, "space: ").find("(what-if, ranked apart: gpipe,1f1b)") != std::string::npos);
  REQUIRE(line_starting(by_default.out, "what-if: gpipe, 1f1b (no IPU framework runs them").size() > 0);
  const std::string what_if_best = line_starting(by_default.out, "  best: ");
  CHECK(what_if_best.find(", 1f1b,") != std::string::npos);
  CHECK(by_default.out.find("better in throughput: what these schedules would gain") != std::string::npos);
  // Asked for, the what-if schedules compete: the best is the what-if row's configuration.
  const Result asked = run_ipusim({"plan", kMlp, "--top", "1", "--quiet", "--schedule", "popart,1f1b"});
  REQUIRE(asked.exit_code == 0);
  CHECK(line_starting(asked.out, "#1 ") == "#1 " + what_if_best.substr(8));
  CHECK(asked.out.find("what-if: ") == std::string::npos);
}
