// `ipusim sweep` driven through the real binary (IPUSIM_BINARY) on the shipped
// scenarios (IPUSIM_SOURCE_DIR), in temporary folders: rows against `ipusim run` of
// the same point, resuming after SIGKILL, failing points, bad sweep files, refusing
// another sweep's folder, and shards run through GNU parallel then merged.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cli_runner.hpp"
#include "temp_dir.hpp"

using ipusim::test::children_of;
using ipusim::test::TempDir;

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "sim/io/input_error.hpp"
#include "sim/sweep/child_process.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/sweep/sweep_spec.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace ipusim;

namespace {

const std::string kBinary = IPUSIM_BINARY;
const std::string kSource = IPUSIM_SOURCE_DIR;

std::string scenario(const std::string& name) { return kSource + "/scenarios/" + name; }


void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Result {
  int code;
  std::string out, err;
};

Result cli(const std::vector<std::string>& args) {
  const sweep::ChildResult c = sweep::run_child(kBinary, "ipusim", args);
  return {c.exit_code, c.out, c.err};
}

Result shell(const std::string& command) {
  const sweep::ChildResult c = sweep::run_child("/bin/sh", "sh", {"-c", command});
  return {c.exit_code, c.out, c.err};
}

std::vector<Json> read_jsonl(const std::string& path) {
  std::vector<Json> lines;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

// Rows of cells by header name; handles RFC 4180 quoting.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> table;
  const std::string text = read_text(path);
  std::vector<std::string> row(1);
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') row.back() += text[++i];
      else if (c == '"') quoted = false;
      else row.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.emplace_back();
    } else if (c == '\n') {
      table.push_back(row);
      row.assign(1, "");
    } else {
      row.back() += c;
    }
  }
  REQUIRE(!table.empty());
  std::vector<std::map<std::string, std::string>> rows;
  for (std::size_t r = 1; r < table.size(); ++r) {
    REQUIRE(table[r].size() == table[0].size());
    std::map<std::string, std::string> named;
    for (std::size_t c = 0; c < table[0].size(); ++c) named[table[0][c]] = table[r][c];
    rows.push_back(named);
  }
  return rows;
}

std::set<std::string> point_files(const std::string& dir) {
  std::set<std::string> names;
  if (!fs::exists(dir + "/points")) return names;
  for (const auto& e : fs::directory_iterator(dir + "/points"))
    if (e.path().extension() == ".json" && e.path().filename().string()[0] != '.')
      names.insert(e.path().filename().string());
  return names;
}

double step_time(const Json& report, const std::string& mode) {
  for (const Json& run : report.at("runs"))
    if (run.at("mode") == mode) return run.at("stepTimeSeconds").get<double>();
  FAIL("no " << mode << " run in the report");
  return 0;
}

// Four points over the inference MLP: batchesPerStep x (microBatchSize zipped with
// the IPU0-IPU1 link bandwidth), with a fixed host-link override.
Json grid_sweep() {
  return {{"name", "grid"},
          {"scenario", scenario("mlp-inference.json")},
          {"modes", "both"},
          {"set", {{"config.hostLink.latencySeconds", 2e-6}}},
          {"axes",
           {{{"path", "execution.batchesPerStep"}, {"values", {4, 8}}},
            {{"zip",
              {{{"path", "execution.microBatchSize"}, {"values", {8, 16}}},
               {{"path", "config.links.0.bandwidthBytesPerSecond"},
                {"range", {{"from", 16e9}, {"to", 32e9}, {"step", 16e9}}}}}}}}}};
}

} // namespace

TEST_CASE("sweep rows follow the cartesian order, zips move together, and match ipusim run", "[sweep]") {
  TempDir tmp;
  write_text(tmp / "grid.json", grid_sweep().dump(2));
  const Result r = cli({"sweep", tmp / "grid.json", "-o", tmp / "out", "-j", "2"});
  INFO(r.err);
  REQUIRE(r.code == 0);

  const auto rows = read_csv(tmp / "out/results.csv");
  const auto lines = read_jsonl(tmp / "out/results.jsonl");
  REQUIRE(rows.size() == 4);
  REQUIRE(lines.size() == 4);
  CHECK(point_files(tmp / "out").size() == 4);
  const int bps[] = {4, 4, 8, 8}, mbs[] = {8, 16, 8, 16};
  const double bandwidth[] = {16e9, 32e9, 16e9, 32e9};
  std::set<std::string> ids;
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("point " << i);
    const auto& row = rows[i];
    CHECK(row.at("point") == std::to_string(i));
    CHECK(row.at("status") == "ok");
    CHECK(row.at("execution.batchesPerStep") == std::to_string(bps[i]));
    CHECK(row.at("execution.microBatchSize") == std::to_string(mbs[i]));
    CHECK(std::stod(row.at("config.links.0.bandwidthBytesPerSecond")) == bandwidth[i]);
    ids.insert(row.at("id"));

    // The same point run by hand: the whole report and the CSV's metrics agree exactly.
    const Result direct = cli({"run", scenario("mlp-inference.json"), "--json", "--mode", "both",
                                  "--set", "config.hostLink.latencySeconds=2e-6",
                                  "--set", "execution.batchesPerStep=" + std::to_string(bps[i]),
                                  "--set", "execution.microBatchSize=" + std::to_string(mbs[i]),
                                  "--set", "config.links.0.bandwidthBytesPerSecond=" + Json(bandwidth[i]).dump()});
    REQUIRE(direct.code == 0);
    // Equal but for how each was invoked: the command line and the --set flags as written
    // (the sweep writes 2e-6 as 2e-06); the documents they made hash the same.
    Json report = Json::parse(direct.out), recorded = lines[i].at("report");
    for (Json* d : {&report, &recorded}) {
      d->erase("commandLine");
      d->erase("overrides");
    }
    CHECK(recorded == report);
    CHECK(lines[i].at("point") == i);
    CHECK(lines[i].at("id") == row.at("id"));
    CHECK(lines[i].at("axes").at("execution.microBatchSize") == mbs[i]);
    CHECK(std::stod(row.at("sharded.stepTimeSeconds")) == step_time(report, "sharded"));
    CHECK(std::stod(row.at("pipelined.stepTimeSeconds")) == step_time(report, "pipelined"));
    CHECK(std::stod(row.at("speedup")) == report.at("speedupPipelinedOverSharded").get<double>());
    CHECK(row.at("error").empty());
    // points/<id>.json holds the same record as the line.
    CHECK(Json::parse(read_text(tmp / ("out/points/" + row.at("id") + ".json"))) == lines[i]);
  }
  CHECK(ids.size() == 4);
  // More micro-batches per step fill the pipeline better: the speed-up grows with depth.
  CHECK(std::stod(rows[2].at("speedup")) > std::stod(rows[0].at("speedup")));
  // The folder records the sweep as run.
  CHECK(read_text(tmp / "out/sweep.json") == read_text(tmp / "grid.json"));

  // Rerunning resumes: nothing to do, same results.
  const std::string csv = read_text(tmp / "out/results.csv");
  const Result again = cli({"sweep", tmp / "grid.json", "-o", tmp / "out"});
  CHECK(again.code == 0);
  CHECK(again.err.find("ran 0, 4 already done") != std::string::npos);
  CHECK(read_text(tmp / "out/results.csv") == csv);
}

TEST_CASE("a failing point is recorded with its error and the others complete", "[sweep]") {
  TempDir tmp;
  const Json def = {{"scenario", scenario("mlp-training.json")},
                    {"axes", {{{"path", "execution.gradientAccumulation"}, {"values", {2, 4}}}}}};
  write_text(tmp / "training.json", def.dump());
  const Result r = cli({"sweep", tmp / "training.json", "-o", tmp / "out", "-j", "2"});
  CHECK(r.code == sweep::kExitPointsFailed);
  CHECK(r.err.find("1 ok, 1 failed") != std::string::npos);

  const auto lines = read_jsonl(tmp / "out/results.jsonl");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].at("status") == "error");
  CHECK(lines[0].at("exitCode") == 2);
  CHECK(lines[0].at("error").get<std::string>().find("[pipeline.depth]") != std::string::npos);
  CHECK(!lines[0].contains("report"));
  CHECK(lines[1].at("status") == "ok");
  CHECK(lines[1].at("report").at("execution").at("gradientAccumulation") == 4);
  CHECK(step_time(lines[1].at("report"), "pipelined") < step_time(lines[1].at("report"), "sharded"));

  const auto rows = read_csv(tmp / "out/results.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("status") == "error");
  CHECK(rows[0].at("execution.gradientAccumulation") == "2");
  CHECK(rows[0].at("error").find("G >= S: 2 < 3") != std::string::npos);
  CHECK(rows[0].at("sharded.stepTimeSeconds").empty());
  CHECK(rows[1].at("status") == "ok");
  CHECK(std::stod(rows[1].at("pipelined.stepTimeSeconds")) == step_time(lines[1].at("report"), "pipelined"));

  // A recorded failure is a result: a rerun keeps it, --retry-failed runs it again.
  const Result again = cli({"sweep", tmp / "training.json", "-o", tmp / "out"});
  CHECK(again.code == sweep::kExitPointsFailed);
  CHECK(again.err.find("ran 0, 2 already done") != std::string::npos);
  const Result retry = cli({"sweep", tmp / "training.json", "-o", tmp / "out", "--retry-failed"});
  CHECK(retry.code == sweep::kExitPointsFailed);
  CHECK(retry.err.find("ran 1 in") != std::string::npos);
  CHECK(read_jsonl(tmp / "out/results.jsonl").size() == 2);
}

TEST_CASE("a sweep killed with SIGKILL resumes with every point exactly once", "[sweep]") {
  TempDir tmp;
  // The last two points simulate 30,000 micro-batches of GPipe, whose unequal stages it runs
  // nearly in full (about half a second each; the steady state skips PopART's). They run
  // first (longest first), one after the other: the sweep is still running the second when
  // the first's file appears (kBatchMilliseconds after its record).
  const Json def = {{"scenario", scenario("mlp-inference.json")},
                    {"set", {{"execution.schedule", "gpipe"}}},
                    {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2, 4, 8, 30000, 30001}}}}}};
  write_text(tmp / "kill.json", def.dump());
  const std::string out = tmp / "out";

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: the kill below reaches the sweep and its runs
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    const std::string file = tmp / "kill.json";
    ::execl(kBinary.c_str(), "ipusim", "sweep", file.c_str(), "-o", out.c_str(), "-j", "1", nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  bool exited = false;
  while (point_files(out).empty() && std::chrono::steady_clock::now() < deadline)
    if ((exited = ::waitpid(pid, &status, WNOHANG) == pid)) break;
    else std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(!exited);  // the sweep must still be running (it exits 2 when the scenario does not load)
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  const std::set<std::string> before = point_files(out);
  REQUIRE(!before.empty());
  REQUIRE(before.size() < 5);
  std::map<std::string, std::string> contents;
  for (const auto& name : before) contents[name] = read_text(out + "/points/" + name);
  // Whatever results.jsonl the kill left is whole: every line parses.
  if (fs::exists(out + "/results.jsonl")) CHECK(read_jsonl(out + "/results.jsonl").size() <= before.size());

  const Result resumed = cli({"sweep", tmp / "kill.json", "-o", out, "-j", "2"});
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.err.find(std::to_string(before.size()) + " already done") != std::string::npos);
  CHECK(resumed.err.find("ran " + std::to_string(5 - before.size()) + " in") != std::string::npos);
  for (const auto& [name, text] : contents) CHECK(read_text(out + "/points/" + name) == text);  // not rerun

  const auto lines = read_jsonl(out + "/results.jsonl");
  REQUIRE(lines.size() == 5);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(lines[i].at("point") == i);
    CHECK(lines[i].at("status") == "ok");
    ids.insert(lines[i].at("id").get<std::string>());
  }
  CHECK(ids.size() == 5);
  CHECK(point_files(out).size() == 5);
  CHECK(read_csv(out + "/results.csv").size() == 5);
  CHECK(lines[3].at("report").at("execution").at("batchesPerStep") == 30000);
  CHECK(lines[4].at("report").at("execution").at("batchesPerStep") == 30001);
}

TEST_CASE("bad sweep files exit 2 naming the JSON pointer and write nothing", "[sweep]") {
  TempDir tmp;
  const std::string sc = scenario("mlp-inference.json");
  const Json bps = {{"path", "execution.batchesPerStep"}, {"values", {2, 4}}};
  struct Case {
    Json sweep;
    std::string pointer, rule;
  };
  const std::vector<Case> cases = {
      {{{"scenario", sc}, {"axis", Json::array()}}, "at /axis:", "[json.unknown-key]"},
      {{{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2}}, {"step", 1}}}}},
       "at /axes/0/step:", "[json.unknown-key]"},
      {{{"scenario", sc},
        {"axes", {{{"path", "execution.batchesPerStep"}, {"range", {{"from", 2}, {"to", 8}, {"step", 0}}}}}}},
       "at /axes/0/range/step:", "[sweep.bad-range]"},
      {{{"scenario", sc},
        {"axes", {{{"path", "execution.batchesPerStep"}, {"range", {{"from", 8}, {"to", 2}, {"step", 1}}}}}}},
       "at /axes/0/range:", "[sweep.bad-range]"},
      {{{"scenario", sc},
        {"axes",
         {bps, {{"zip",
                 {{{"path", "execution.microBatchSize"}, {"values", {1, 2}}},
                  {{"path", "config.clockHz"}, {"values", {1e9, 2e9, 3e9}}}}}}}}},
       "at /axes/1/zip/1:", "[sweep.zip-length]"},
      {{{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStepp"}, {"values", {2}}}}}},
       "at /axes/0/path:", "[sweep.bad-path]"},
      {{{"scenario", sc}, {"axes", {{{"path", "config.links.9.latencySeconds"}, {"values", {1e-6}}}}}},
       "at /axes/0/path:", "[sweep.bad-path]"},
      {{{"scenario", sc}, {"set", {{"execution.batchesPerStep", 8}}}, {"axes", {bps}}}, "at /axes/0/path:",
       "[sweep.duplicate-path]"},
      {{{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2, 4, 2}}}}}}, "at /axes/0:",
       "[sweep.duplicate-value]"},
      {{{"scenario", sc}, {"modes", "all"}}, "at /modes:", "[sweep.bad-modes]"},
      {{{"scenario", "no-such-scenario.json"}}, "at /scenario:", "[file.missing]"},
      {{{"scenario", sc}, {"name", "a/b"}}, "at /name:", "[sweep.bad-name]"},
      {{{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStep"}}}}}, "at /axes/0:", "[sweep.bad-axis]"},
      {{{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStep"}, {"values", Json::array()}}}}},
       "at /axes/0/values:", "[sweep.empty-values]"},
      {{{"scenario", sc},
        {"axes",
         {{{"path", "execution.batchesPerStep"}, {"range", {{"from", 1}, {"to", 99999}, {"step", 1}}}},
          {{"path", "execution.microBatchSize"}, {"range", {{"from", 1}, {"to", 99}, {"step", 1}}}}}}},
       "at /axes:", "[sweep.too-many-points]"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].sweep.dump());
    const std::string file = tmp / ("bad" + std::to_string(i) + ".json");
    write_text(file, cases[i].sweep.dump());
    const Result r = cli({"sweep", file, "-o", tmp / ("out" + std::to_string(i))});
    CHECK(r.code == 2);
    CHECK(r.err.find(file + ": " + cases[i].pointer) != std::string::npos);
    CHECK(r.err.find(cases[i].rule) != std::string::npos);
    CHECK(!fs::exists(tmp / ("out" + std::to_string(i))));
  }
  const Result shard = cli({"sweep", kSource + "/sweeps/mlp-depth.json", "-o", tmp / "s", "--shard", "3/3"});
  CHECK(shard.code == 2);
  CHECK(shard.err.find("[sweep.bad-shard]") != std::string::npos);
  const Result both = cli({"sweep", kSource + "/sweeps/mlp-depth.json", "-o", tmp / "s", "--merge", "--shard", "0/2"});
  CHECK(both.code == 2);
  CHECK(both.err.find("[cli.conflict]") != std::string::npos);
  const Result merge = cli({"sweep", kSource + "/sweeps/mlp-depth.json", "-o", tmp / "empty", "--merge"});
  CHECK(merge.code == 2);
  CHECK(merge.err.find("[sweep.no-results]") != std::string::npos);
}

TEST_CASE("a point file that is not the point's record stops the sweep with its name", "[sweep]") {
  TempDir tmp;
  write_text(tmp / "quick.json", Json{{"scenario", scenario("mlp-inference.json")}, {"modes", "sharded"},
                                      {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2, 3}}}}}}
                                     .dump());
  REQUIRE(cli({"sweep", tmp / "quick.json", "-o", tmp / "out"}).code == 0);
  const std::string first = tmp / "out" + "/points/" + *point_files(tmp / "out").begin();
  write_text(first, "{\"id\": \"someone else\", \"status\": \"ok\"}");
  const Result r = cli({"sweep", tmp / "quick.json", "-o", tmp / "out"});
  CHECK(r.code == 2);
  CHECK(r.err.find(first + ": at /:") != std::string::npos);
  CHECK(r.err.find("[sweep.bad-point-file]") != std::string::npos);
}

TEST_CASE("a folder holding another sweep's results is refused unless --force", "[sweep]") {
  TempDir tmp;
  const std::string sc = scenario("mlp-inference.json");
  Json a = {{"scenario", sc}, {"description", "first"},
            {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2, 4}}}}}};
  Json b = {{"scenario", sc}, {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {4, 8}}}}}};
  write_text(tmp / "a.json", a.dump());
  write_text(tmp / "b.json", b.dump());
  REQUIRE(cli({"sweep", tmp / "a.json", "-o", tmp / "out"}).code == 0);
  const std::string csv = read_text(tmp / "out/results.csv"), copy = read_text(tmp / "out/sweep.json");

  const Result refused = cli({"sweep", tmp / "b.json", "-o", tmp / "out"});
  CHECK(refused.code == 2);
  CHECK(refused.err.find("[sweep.dir-in-use]") != std::string::npos);
  CHECK(read_text(tmp / "out/results.csv") == csv);
  CHECK(read_text(tmp / "out/sweep.json") == copy);
  CHECK(point_files(tmp / "out").size() == 2);

  // The same points with another description is the same sweep.
  a["description"] = "edited";
  write_text(tmp / "a.json", a.dump());
  CHECK(cli({"sweep", tmp / "a.json", "-o", tmp / "out"}).code == 0);

  // A folder with sweep output but no sweep.json is not taken either.
  fs::create_directories(tmp / "other/points");
  CHECK(cli({"sweep", tmp / "a.json", "-o", tmp / "other"}).code == 2);

  // --force adds b's points; a's stay, and batchesPerStep=4 (the same run) is reused.
  const Result forced = cli({"sweep", tmp / "b.json", "-o", tmp / "out", "--force"});
  CHECK(forced.code == 0);
  CHECK(forced.err.find("ran 1 in") != std::string::npos);
  CHECK(point_files(tmp / "out").size() == 3);
  const auto rows = read_csv(tmp / "out/results.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("execution.batchesPerStep") == "4");
  CHECK(rows[1].at("execution.batchesPerStep") == "8");
}

TEST_CASE("shards run through GNU parallel, then merged, hold every point exactly once", "[sweep][parallel]") {
  if (shell("command -v parallel").code != 0)
    FAIL("GNU parallel is not installed (apt-get install parallel; scripts/setup.sh installs it)");
  TempDir tmp;
  const Json def = {{"scenario", scenario("mlp-inference.json")},
                    {"axes",
                     {{{"path", "execution.batchesPerStep"}, {"values", {2, 4, 8}}},
                      {{"path", "execution.microBatchSize"}, {"values", {4, 16}}}}}};
  write_text(tmp / "grid.json", def.dump());
  const std::string bin = kBinary, file = tmp / "grid.json", out = tmp / "out";

  // One shard alone, then a merge: the merge reports the missing points (exit 6).
  REQUIRE(cli({"sweep", file, "-o", out, "--shard", "0/3"}).code == 0);
  CHECK(point_files(out).size() == 2);  // points 0 and 3
  const Result partial = cli({"sweep", file, "-o", out, "--merge"});
  CHECK(partial.code == sweep::kExitIncomplete);
  CHECK(read_jsonl(out + "/results.jsonl").size() == 2);

  const Result r = shell("parallel --will-cite '" + bin + "' sweep '" + file + "' -o '" + out +
                         "' -j 1 --shard {}/3 ::: 0 1 2 && '" + bin + "' sweep '" + file + "' -o '" + out +
                         "' --merge");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("merged 6 of 6 points (6 ok, 0 failed, 0 missing)") != std::string::npos);
  const auto lines = read_jsonl(out + "/results.jsonl");
  REQUIRE(lines.size() == 6);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(lines[i].at("point") == i);
    CHECK(lines[i].at("status") == "ok");
    ids.insert(lines[i].at("id").get<std::string>());
  }
  CHECK(ids.size() == 6);
  CHECK(point_files(out).size() == 6);
  const auto rows = read_csv(out + "/results.csv");
  REQUIRE(rows.size() == 6);
  CHECK(rows[5].at("execution.batchesPerStep") == "8");
  CHECK(rows[5].at("execution.microBatchSize") == "16");
}

TEST_CASE("points one by one: --list-points, then --point through GNU parallel, merged, equal the whole sweep",
          "[sweep][parallel]") {
  if (shell("command -v parallel").code != 0)
    FAIL("GNU parallel is not installed (apt-get install parallel; scripts/setup.sh installs it)");
  TempDir tmp;
  write_text(tmp / "grid.json", grid_sweep().dump());
  const std::string bin = kBinary, file = tmp / "grid.json", whole = tmp / "whole", single = tmp / "single";
  REQUIRE(cli({"sweep", file, "-o", whole, "-j", "2"}).code == 0);

  // Four points, index, id and overrides a line; a shard lists its own.
  const Result listed = cli({"sweep", file, "--list-points"});
  REQUIRE(listed.code == 0);
  const auto records = read_jsonl(whole + "/results.jsonl");
  REQUIRE(records.size() == 4);
  std::istringstream lines(listed.out);
  std::vector<std::string> ids;
  for (std::string line; std::getline(lines, line);) {
    const auto tab = line.find('\t'), second = line.find('\t', tab + 1);
    REQUIRE(second != std::string::npos);
    CHECK(line.substr(0, tab) == std::to_string(ids.size()));
    ids.push_back(line.substr(tab + 1, second - tab - 1));
    CHECK(ids.back() == records[ids.size() - 1].at("id"));
  }
  REQUIRE(ids.size() == 4);
  CHECK(cli({"sweep", file, "--list-points", "--shard", "1/2"}).out ==
        "1\t" + ids[1] + "\texecution.batchesPerStep=4 execution.microBatchSize=16 "
        "config.links.0.bandwidthBytesPerSecond=32000000000.0\n3\t" + ids[3] +
        "\texecution.batchesPerStep=8 execution.microBatchSize=16 config.links.0.bandwidthBytesPerSecond=32000000000.0\n");
  CHECK(!fs::exists(tmp / "ipusim-sweeps"));
  // Listing runs nothing, so a flag that says how to run or where to write is refused, not ignored.
  for (const std::vector<std::string>& flag : std::vector<std::vector<std::string>>{
           {"-o", tmp / "listed"}, {"-j", "2"}, {"--force"}, {"--retry-failed"}, {"--fast"}, {"--fail-on-oom"}}) {
    std::vector<std::string> args{"sweep", file, "--list-points"};
    args.insert(args.end(), flag.begin(), flag.end());
    const Result refused = cli(args);
    INFO(flag.front());
    CHECK(refused.code == 2);
    CHECK(refused.err.find("[cli.conflict]") != std::string::npos);
    CHECK(refused.out.empty());
  }
  CHECK(!fs::exists(tmp / "listed"));

  // Each point in a process of its own (by index from the listing; one by id), then a merge:
  // the same results, byte for byte, as the whole sweep's.
  REQUIRE(cli({"sweep", file, "-o", single, "--point", ids[2]}).code == 0);
  CHECK(point_files(single) == std::set<std::string>{ids[2] + ".json"});
  const Result r = shell("'" + bin + "' sweep '" + file + "' --list-points | cut -f1 | parallel --will-cite '" + bin +
                         "' sweep '" + file + "' -o '" + single + "' -j 1 --point {} && '" + bin + "' sweep '" + file +
                         "' -o '" + single + "' --merge");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("merged 4 of 4 points (4 ok, 0 failed, 0 missing)") != std::string::npos);
  CHECK(read_text(single + "/results.csv") == read_text(whole + "/results.csv"));

  // A point the sweep does not have: exit 2, naming the flag, the value and the rule.
  for (const std::string bad : {"4", "0123456789abcdef", "x"}) {
    const Result refused = cli({"sweep", file, "-o", single, "--point", bad});
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Catch::Matchers::Contains("--point") && Catch::Matchers::Contains(bad) &&
                                Catch::Matchers::Contains("sweep.bad-point"));
  }
  CHECK(cli({"sweep", file, "-o", single, "--point", "1", "--shard", "0/2"}).code != 0);
}

TEST_CASE("sweep points: cartesian order, zips, inclusive ranges, stable ids", "[sweep]") {
  const Json doc = {{"scenario", "s.json"},
                    {"axes",
                     {{{"path", "execution.batchesPerStep"}, {"range", {{"from", 4}, {"to", 12}, {"step", 4}}}},
                      {{"zip",
                        {{{"path", "config.ipu.clockHz"}, {"range", {{"from", 0.1}, {"to", 0.3}, {"step", 0.1}}}},
                         {{"path", "execution.schedule"}, {"values", {"popart", "gpipe", "1f1b"}}}}}},
                      {{"path", "execution.hostIo"}, {"values", {true, false}}}}}};
  const sweep::Spec spec = sweep::parse_sweep(doc, "sweeps/x.json");
  CHECK(spec.name == "x");
  CHECK(spec.scenario_path == "sweeps/s.json");
  CHECK(spec.axis_paths() ==
        std::vector<std::string>{"execution.batchesPerStep", "config.ipu.clockHz", "execution.schedule",
                                 "execution.hostIo"});
  const auto points = sweep::expand_points(spec);
  REQUIRE(points.size() == 3 * 3 * 2);
  // Last axis fastest; the zip's members move together; ranges are inclusive and tidy.
  CHECK(points[0].axes[0].value == 4);
  CHECK(points[1].axes[3].value == false);
  CHECK(points[2].axes[1].value == 0.2);
  CHECK(points[2].axes[2].value == "gpipe");
  CHECK(points[5].axes[1].value == 0.3);
  CHECK(points[5].axes[2].value == "1f1b");
  CHECK(points[6].axes[0].value == 8);
  CHECK(points[17].axes[0].value == 12);
  CHECK(points[17].axes[0].value.is_number_integer());
  std::set<std::string> ids;
  for (const auto& p : points) {
    CHECK(p.id.size() == 16);
    ids.insert(p.id);
  }
  CHECK(ids.size() == points.size());
  // The command line each point runs.
  const auto args = sweep::run_arguments(spec, points[2]);
  CHECK(args == std::vector<std::string>{"run", "sweeps/s.json", "--json", "--set", "execution.batchesPerStep=4",
                                         "--set", "config.ipu.clockHz=0.2", "--set", "execution.schedule=\"gpipe\"",
                                         "--set", "execution.hostIo=true"});
  // Ids depend on what runs, not on the name or description, nor on where the file is.
  Json renamed = doc;
  renamed["name"] = "other";
  renamed["description"] = "text";
  const auto same = sweep::expand_points(sweep::parse_sweep(renamed, "elsewhere/y.json"));
  CHECK(same[7].id == points[7].id);
  CHECK(sweep::definition_hash(same) == sweep::definition_hash(points));
  Json more = doc;
  more["set"] = {{"execution.microBatchSize", 2}};
  const auto changed = sweep::expand_points(sweep::parse_sweep(more, "sweeps/x.json"));
  CHECK(changed[7].id != points[7].id);
  CHECK(sweep::definition_hash(changed) != sweep::definition_hash(points));
}

TEST_CASE("shards: K/N, or auto from a SLURM job array", "[sweep]") {
  CHECK(sweep::parse_shard("2/5").index == 2);
  CHECK(sweep::parse_shard("2/5").count == 5);
  for (const char* bad : {"5/5", "1/0", "1", "a/2", "-1/2", "1/2/3"})
    CHECK_THROWS_AS(sweep::parse_shard(bad), InputError);
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  CHECK_THROWS_AS(sweep::parse_shard("auto"), InputError);
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  CHECK(sweep::parse_shard("auto").index == 3);
  CHECK(sweep::parse_shard("auto").count == 4);
  // --array=1-4: task ids start at SLURM_ARRAY_TASK_MIN.
  ::setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  CHECK(sweep::parse_shard("auto").index == 2);
  // --array=0-12:4 (ids 0 4 8 12): the step divides.
  ::setenv("SLURM_ARRAY_TASK_ID", "8", 1);
  ::setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
  ::setenv("SLURM_ARRAY_TASK_STEP", "4", 1);
  CHECK(sweep::parse_shard("auto").index == 2);
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP"})
    ::unsetenv(v);
}

// The rule id parse_shard refuses `text` with, "none" when it accepts it.
std::string shard_rule(const std::string& text) {
  try {
    sweep::parse_shard(text);
  } catch (const InputError& e) {
    return e.rule();
  }
  return "none";
}

TEST_CASE("shards: a task submitted again alone keeps its shard with auto/N; MPI launchers' ranks", "[sweep]") {
  // sbatch --array=3 of a 16-task sweep: SLURM says a one-task array, ids 3..3. As auto it
  // would be shard 0 of 1 and run the other 15 shards' points: refused, naming auto/N.
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  ::setenv("SLURM_ARRAY_TASK_MIN", "3", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "1", 1);
  CHECK(shard_rule("auto") == "sweep.bad-shard");
  try {
    sweep::parse_shard("auto");
  } catch (const InputError& e) {
    CHECK_THAT(e.message(), Catch::Matchers::Contains("--shard auto/N"));
  }
  // auto/16: the task id is the shard, whatever the array it came in.
  CHECK(sweep::parse_shard("auto/16").index == 3);
  CHECK(sweep::parse_shard("auto/16").count == 16);
  CHECK(shard_rule("auto/3") == "sweep.bad-shard");  // id 3 is no shard of 3
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"}) ::unsetenv(v);
  // mpirun (Open MPI), then MPICH's PMI, then srun's tasks.
  CHECK(shard_rule("auto") == "sweep.bad-shard");
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  CHECK(sweep::parse_shard("auto").index == 2);
  CHECK(sweep::parse_shard("auto").count == 8);
  CHECK(sweep::parse_shard("auto/8").index == 2);
  CHECK(shard_rule("auto/4") == "sweep.bad-shard");  // 8 ranks, 4 shards: which is meant?
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("PMI_RANK", "5", 1);
  ::setenv("PMI_SIZE", "6", 1);
  CHECK(sweep::parse_shard("auto").index == 5);
  ::unsetenv("PMI_RANK");
  ::unsetenv("PMI_SIZE");
  ::setenv("SLURM_PROCID", "1", 1);
  ::setenv("SLURM_NTASKS", "2", 1);
  CHECK(sweep::parse_shard("auto").index == 1);
  CHECK(sweep::parse_shard("auto").count == 2);
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
}

TEST_CASE("shards: Grid Engine and PBS job arrays", "[sweep]") {
  // qsub -t 1-16 (Grid Engine ids start at 1): task 4 is shard 3 of 16.
  ::setenv("SGE_TASK_ID", "4", 1);
  ::setenv("SGE_TASK_FIRST", "1", 1);
  ::setenv("SGE_TASK_LAST", "16", 1);
  ::setenv("SGE_TASK_STEPSIZE", "1", 1);
  CHECK(sweep::parse_shard("auto").index == 3);
  CHECK(sweep::parse_shard("auto").count == 16);
  CHECK(sweep::parse_shard("auto/16").index == 3);
  // qsub -t 2-14:4 (ids 2 6 10 14): task 10 is shard 2 of 4; an id off the step is refused.
  ::setenv("SGE_TASK_ID", "10", 1);
  ::setenv("SGE_TASK_FIRST", "2", 1);
  ::setenv("SGE_TASK_LAST", "14", 1);
  ::setenv("SGE_TASK_STEPSIZE", "4", 1);
  CHECK(sweep::parse_shard("auto").index == 2);
  CHECK(sweep::parse_shard("auto").count == 4);
  ::setenv("SGE_TASK_ID", "11", 1);
  CHECK(shard_rule("auto") == "sweep.bad-shard");
  // qsub -t 4 again alone: a one-task array 4..4 would run every shard's points: refused;
  // auto/16 keeps it shard 3.
  ::setenv("SGE_TASK_ID", "4", 1);
  ::setenv("SGE_TASK_FIRST", "4", 1);
  ::setenv("SGE_TASK_LAST", "4", 1);
  ::setenv("SGE_TASK_STEPSIZE", "1", 1);
  CHECK(shard_rule("auto") == "sweep.bad-shard");
  CHECK(sweep::parse_shard("auto/16").index == 3);
  // Outside an array Grid Engine says "undefined": not an array task.
  ::setenv("SGE_TASK_ID", "undefined", 1);
  CHECK(shard_rule("auto/16") == "sweep.bad-shard");
  for (const char* v : {"SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST", "SGE_TASK_STEPSIZE"}) ::unsetenv(v);
  // PBS Pro (qsub -J 0-7) and Torque (qsub -t 0-7) give the index only: auto/N, not auto.
  ::setenv("PBS_ARRAY_INDEX", "5", 1);
  CHECK(sweep::parse_shard("auto/8").index == 5);
  CHECK(shard_rule("auto") == "sweep.bad-shard");
  CHECK(shard_rule("auto/5") == "sweep.bad-shard");
  ::unsetenv("PBS_ARRAY_INDEX");
  ::setenv("PBS_ARRAYID", "7", 1);
  CHECK(sweep::parse_shard("auto/8").index == 7);
  ::unsetenv("PBS_ARRAYID");
}

TEST_CASE("the shipped sweeps load", "[sweep]") {
  const auto depth = sweep::load_sweep(kSource + "/sweeps/mlp-depth.json");
  CHECK(sweep::point_count(depth) == 7);
  const auto training = sweep::load_sweep(kSource + "/sweeps/mlp-training-depth.json");
  REQUIRE(sweep::point_count(training) >= 2);
  CHECK(sweep::expand_points(training)[0].axes[0].value == 2);  // fails the depth rule: a recorded error
  CHECK_NOTHROW(sweep::check_paths(depth));
  CHECK_NOTHROW(sweep::check_paths(training));
}

namespace {

// Starts `ipusim sweep FILE -o OUT -j 2` in its own process group; returns its pid. Its two
// points start at once, so the quick one is recorded while the slow one runs (with one slot the
// slow one, the longest by the estimate, would run first).
pid_t start_sweep(const std::string& file, const std::string& out, const std::string& shard = "0/1") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    ::execl(kBinary.c_str(), "ipusim", "sweep", file.c_str(), "-o", out.c_str(), "-j", "2", "--shard", shard.c_str(),
            nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

bool group_alive(pid_t group) { return ::kill(-group, 0) == 0; }

// A sweep whose last point runs for many seconds: still running after the first. GPipe
// training of the MLP, whose two unequal stages have no common period while both run
// their forwards, so G = 10^6 is simulated nearly in full (a steady state's skipped periods
// cost nothing since they are added up); 2 ends at once.
Json slow_sweep(const std::vector<int>& depths) {
  return {{"scenario", scenario("mlp-training.json")}, {"modes", "pipelined"},
          {"axes",
           {{{"path", "execution.schedule"}, {"values", {"gpipe"}}},
            {{"path", "execution.gradientAccumulation"}, {"values", depths}}}}};
}

} // namespace

TEST_CASE("a sweep killed with SIGKILL leaves no process behind: its runs and simulations die with it", "[sweep]") {
  TempDir tmp;
  write_text(tmp / "slow.json", slow_sweep({2, 1000000}).dump());
  const std::string out = tmp / "out";
  const pid_t pid = start_sweep(tmp / "slow.json", out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (point_files(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(point_files(out).size() == 1);  // the slow point is running
  ::kill(pid, SIGKILL);                   // the sweep only, not its group
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (group_alive(pid) && std::chrono::steady_clock::now() < gone_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(!group_alive(pid));
  ::kill(-pid, SIGKILL);
}

TEST_CASE("a point whose process dies is recorded as failed, and the rest of that process's points run in a new one",
          "[sweep]") {
  TempDir tmp;
  // 8 points, -j2: each process takes a share of two, the longest first, so the slow point's
  // process holds one more point, which can only run after it.
  write_text(tmp / "slow.json", slow_sweep({1000000, 2, 3, 4, 5, 6, 7, 8}).dump());
  const std::string out = tmp / "out";
  const pid_t pid = start_sweep(tmp / "slow.json", out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((point_files(out).size() < 6 || children_of(pid).size() != 1) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(point_files(out).size() == 6);
  const std::vector<pid_t> running = children_of(pid);
  REQUIRE(running.size() == 1);  // the slow point's process, its other point not begun
  // A signal no handler takes (SimGrid's and AddressSanitizer's take SIGSEGV): the process dies of it.
  ::kill(running[0], SIGUSR1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 4);  // every point has a record, one of them an error
  const auto lines = read_jsonl(out + "/results.jsonl");
  REQUIRE(lines.size() == 8);
  for (const Json& line : lines) {
    const int depth = line.at("axes").at("execution.gradientAccumulation").get<int>();
    INFO("G = " << depth);
    if (depth == 1000000) {
      CHECK(line.at("status") == "error");
      CHECK(line.at("error").get<std::string>().find("killed by signal " + std::to_string(SIGUSR1)) != std::string::npos);
    } else {
      CHECK(line.at("status") == "ok");
    }
  }
  CHECK(point_files(out).size() == 8);
  ::kill(-pid, SIGKILL);
}

TEST_CASE("one sweep owns a folder at a time: another sweep is refused while it runs", "[sweep]") {
  TempDir tmp;
  write_text(tmp / "a.json", slow_sweep({2, 3, 1000000}).dump());
  write_text(tmp / "b.json", slow_sweep({3}).dump());
  const std::string out = tmp / "out";
  const pid_t a = start_sweep(tmp / "a.json", out, "0/2");  // points 0 and 2, the slow one
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (point_files(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(point_files(out).size() == 1);
  // Even --force, which may take over a folder nobody uses, waits for an idle folder.
  const Result b = cli({"sweep", tmp / "b.json", "-o", out, "--force"});
  CHECK(b.code == 2);
  CHECK(b.err.find("[sweep.dir-busy]") != std::string::npos);
  // The same sweep, or the same shard, started again would run the running points twice.
  for (const std::string shard : {"0/1", "0/2"}) {
    const Result again = cli({"sweep", tmp / "a.json", "-o", out, "--shard", shard});
    CHECK(again.code == 2);
    CHECK(again.err.find("started twice") != std::string::npos);
    CHECK(again.err.find("[sweep.dir-busy]") != std::string::npos);
  }
  // Another shard of it joins and runs its own point.
  const Result other = cli({"sweep", tmp / "a.json", "-o", out, "--shard", "1/2"});
  CHECK(other.code == 0);
  CHECK(point_files(out).size() == 2);
  ::kill(-a, SIGKILL);
  int status = 0;
  ::waitpid(a, &status, 0);
  CHECK(read_text(out + "/sweep.json") == read_text(tmp / "a.json"));
}

TEST_CASE("temporary files a killed writer left are removed when the sweep resumes", "[sweep]") {
  TempDir tmp;
  write_text(tmp / "quick.json", slow_sweep({2, 3}).dump());
  const std::string out = tmp / "out";
  REQUIRE(cli({"sweep", tmp / "quick.json", "-o", out}).code == 0);
  write_text(out + "/points/.0123456789abcdef.json.tmp-4242-0", "half a rec");
  write_text(out + "/.results.csv.tmp-4242-1", "half a csv");
  write_text(out + "/points/.my-notes", "the user's");  // not ours: kept
  const Result resumed = cli({"sweep", tmp / "quick.json", "-o", out});
  CHECK(resumed.code == 0);
  CHECK(!fs::exists(out + "/points/.0123456789abcdef.json.tmp-4242-0"));
  CHECK(!fs::exists(out + "/.results.csv.tmp-4242-1"));
  CHECK(fs::exists(out + "/points/.my-notes"));
  for (const auto& entry : fs::directory_iterator(out))
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
}

namespace {

// The bytes of the MLP's one inter-IPU copy (x2: 512 float32 per sample), from the report's plan.
double mlp_copy_bytes(const Json& report) {
  const Json& copies = report.at("plan").at("copies");
  REQUIRE(copies.size() == 1);
  return copies[0].at("bytes").get<double>();
}

} // namespace

TEST_CASE("sweep --set and --mode apply to every point, are stored, and a resume with other flags is refused",
          "[sweep]") {
  TempDir tmp;
  // The file runs both modes at the scenario's microBatchSize 16.
  const Json def = {{"name", "flags"}, {"scenario", scenario("mlp-inference.json")}, {"modes", "both"},
                    {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {4, 8}}}}}};
  write_text(tmp / "flags.json", def.dump());
  const std::vector<std::string> flags = {"--set", "execution.microBatchSize=32", "--mode", "pipelined"};
  std::vector<std::string> args = {"sweep", tmp / "flags.json", "-o", tmp / "out", "-j", "2"};
  args.insert(args.end(), flags.begin(), flags.end());
  const Result r = cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);

  const auto lines = read_jsonl(tmp / "out/results.jsonl");
  const auto rows = read_csv(tmp / "out/results.csv");
  REQUIRE(lines.size() == 2);
  REQUIRE(rows.size() == 2);
  const int bps[] = {4, 8};
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("point " << i);
    const Json& report = lines[i].at("report");
    // --mode pipelined: one run per point, and the CSV's sharded cells are empty.
    REQUIRE(report.at("runs").size() == 1);
    const Json& run = report.at("runs")[0];
    CHECK(run.at("mode") == "pipelined");
    CHECK(rows[i].at("sharded.stepTimeSeconds").empty());
    CHECK(std::stod(rows[i].at("pipelined.stepTimeSeconds")) == run.at("stepTimeSeconds").get<double>());
    // --set execution.microBatchSize=32: the copy of x2 carries 512 float32 x 32 samples
    // (16 in the scenario: 32768 bytes), and a step is 32 x batchesPerStep samples.
    CHECK(report.at("execution").at("microBatchSize") == 32);
    CHECK(mlp_copy_bytes(report) == 512.0 * 4 * 32);
    CHECK(run.at("throughputSamplesPerSecond").get<double>() ==
          Approx(32.0 * bps[i] / run.at("stepTimeSeconds").get<double>()).epsilon(1e-12));
    // The point is exactly `ipusim run` with the flags.
    const Result direct = cli({"run", scenario("mlp-inference.json"), "--json", "--mode", "pipelined", "--set",
                               "execution.batchesPerStep=" + std::to_string(bps[i]), "--set",
                               "execution.microBatchSize=32"});
    REQUIRE(direct.code == 0);
    // Equal but for how each was invoked: the command line, and the order of the --set flags.
    Json by_hand = Json::parse(direct.out), recorded = report;
    for (Json* d : {&by_hand, &recorded}) {
      d->erase("commandLine");
      std::sort((*d)["overrides"].begin(), (*d)["overrides"].end());
    }
    CHECK(by_hand == recorded);
  }
  // Without the flags the copy is half as large: the flag, not the scenario, made it 32.
  const Result plain = cli({"run", scenario("mlp-inference.json"), "--json", "--mode", "pipelined"});
  REQUIRE(plain.code == 0);
  CHECK(mlp_copy_bytes(Json::parse(plain.out)) == 512.0 * 4 * 16);

  // The folder stores the merged definition.
  const Json stored = Json::parse(read_text(tmp / "out/sweep.json"));
  CHECK(stored.at("set").at("execution.microBatchSize") == 32);
  CHECK(stored.at("modes") == "pipelined");

  // The same command resumes; other flags, or none, are refused where they differ.
  const Result again = cli(args);
  CHECK(again.code == 0);
  CHECK(again.err.find("ran 0, 2 already done") != std::string::npos);
  const std::string csv = read_text(tmp / "out/results.csv");
  const Result other = cli({"sweep", tmp / "flags.json", "-o", tmp / "out", "--mode", "pipelined", "--set",
                            "execution.microBatchSize=64"});
  CHECK(other.code == 2);
  CHECK(other.err.find(tmp / "out/sweep.json" + ": at /set/execution.microBatchSize: the sweep in this folder "
                                                 "ran with execution.microBatchSize=32, this one with "
                                                 "execution.microBatchSize=64") != std::string::npos);
  CHECK(other.err.find("[sweep.dir-in-use]") != std::string::npos);
  const Result no_set = cli({"sweep", tmp / "flags.json", "-o", tmp / "out", "--mode", "pipelined"});
  CHECK(no_set.code == 2);
  CHECK(no_set.err.find("at /set/execution.microBatchSize: the sweep in this folder ran with "
                        "execution.microBatchSize=32, this one without it") != std::string::npos);
  const Result no_flags = cli({"sweep", tmp / "flags.json", "-o", tmp / "out"});
  CHECK(no_flags.code == 2);
  CHECK(no_flags.err.find("at /modes: the sweep in this folder ran with modes \"pipelined\", this one with "
                          "\"both\"") != std::string::npos);
  CHECK(read_text(tmp / "out/results.csv") == csv);
  CHECK(point_files(tmp / "out").size() == 2);

  // A --set of an axis, or one that does not apply, is refused before any point runs.
  const Result axis = cli({"sweep", tmp / "flags.json", "-o", tmp / "axis", "--set", "execution.batchesPerStep=2"});
  CHECK(axis.code == 2);
  CHECK(axis.err.find("--set: at execution.batchesPerStep:") != std::string::npos);
  CHECK(axis.err.find("[sweep.duplicate-path]") != std::string::npos);
  const Result typo = cli({"sweep", tmp / "flags.json", "-o", tmp / "typo", "--set", "execution.microBatchSise=32"});
  const Result run_typo = cli({"run", scenario("mlp-inference.json"), "--set", "execution.microBatchSise=32"});
  CHECK(typo.code == 2);
  CHECK(run_typo.code == 2);
  CHECK(typo.err == run_typo.err);  // the error of `ipusim run --set`, naming the flag
  CHECK(!fs::exists(tmp / "typo/points"));
  const Result syntax = cli({"sweep", tmp / "flags.json", "-o", tmp / "syntax", "--set", "execution.microBatchSize"});
  CHECK(syntax.code == 2);
  CHECK(syntax.err.find("[override.syntax]") != std::string::npos);
}

TEST_CASE("sweep's default output folder is ipusim-sweeps/<name> in the working directory, never the sweep "
          "file's folder", "[sweep]") {
  TempDir tmp;
  fs::create_directories(tmp / "sweeps");
  write_text(tmp / "sweeps/depth.json",
             Json{{"scenario", scenario("mlp-inference.json")}, {"modes", "sharded"},
                  {"axes", {{{"path", "execution.batchesPerStep"}, {"values", {2}}}}}}
                 .dump());
  const Result r = shell("cd '" + tmp.root().string() + "' && '" + kBinary + "' sweep sweeps/depth.json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(read_csv(tmp / "ipusim-sweeps/depth/results.csv").size() == 1);
  CHECK(std::distance(fs::directory_iterator(tmp / "sweeps"), fs::directory_iterator()) == 1);  // the file alone
  CHECK(r.err.find("results in ipusim-sweeps/depth/results.csv") != std::string::npos);
}

TEST_CASE("more points than -j slots run longest first by ipusim's own estimate; results stay in index order",
          "[sweep]") {
  // G = 64, 100000, 1000 of the seed MLP: estimate_run counts the programs' steps, which grow with
  // G, so with one slot the points run 1, 2, 0, as the point files' modification times show.
  TempDir tmp;
  const Json sweep = {{"name", "longest-first"},
                      {"scenario", scenario("mlp-training.json")},
                      {"modes", "pipelined"},
                      {"axes", {{{"path", "execution.gradientAccumulation"}, {"values", {64, 100000, 1000}}}}}};
  write_text(tmp / "s.json", sweep.dump());
  REQUIRE(cli({"sweep", tmp / "s.json", "-o", tmp / "out", "-j", "1"}).code == 0);
  const auto records = read_jsonl(tmp / "out/results.jsonl");
  REQUIRE(records.size() == 3);
  std::vector<std::pair<fs::file_time_type, int>> finished;
  for (const Json& r : records) {
    CHECK(r.at("point") == finished.size());  // index order in the results
    finished.push_back({fs::last_write_time(tmp / ("out/points/" + r.at("id").get<std::string>() + ".json")),
                        r.at("point").get<int>()});
  }
  std::sort(finished.begin(), finished.end());
  CHECK(finished[0].second == 1);
  CHECK(finished[1].second == 2);
  CHECK(finished[2].second == 0);
  // As many slots as points: nothing waits, so nothing is estimated or reordered; the same results.
  REQUIRE(cli({"sweep", tmp / "s.json", "-o", tmp / "wide", "-j", "3"}).code == 0);
  CHECK(read_text(tmp / "wide/results.csv") == read_text(tmp / "out/results.csv"));
}
