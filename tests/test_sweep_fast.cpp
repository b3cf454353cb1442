// `ipusim sweep --fast` through the real binary: points the exact evaluators answer give
// the engine's figures to the planner's tolerance (docs/planner.md: 1e-9), each record
// names its evaluator, points they cannot answer run on the engine, and a sweep without
// --fast runs the exactly answered points again on the engine.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "sim/cli/sweep_exact.hpp"
#include "sim/io/overrides.hpp"
#include "sim/sweep/child_process.hpp"
#include "temp_dir.hpp"

using ipusim::test::TempDir;
using Json = nlohmann::json;

namespace {

const std::string kBinary = IPUSIM_BINARY;
const std::string kSource = IPUSIM_SOURCE_DIR;

ipusim::sweep::ChildResult cli(const std::vector<std::string>& args) { return ipusim::sweep::run_child(kBinary, "ipusim", args); }

std::vector<Json> results(const std::string& dir) {
  std::ifstream in(dir + "/results.jsonl");
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

const Json& run_of(const Json& record, const std::string& mode) {
  for (const Json& run : record.at("report").at("runs"))
    if (run.at("mode") == mode) return run;
  FAIL("no " << mode << " run");
  return record;
}

// The figures both evaluators give, within the planner's 1e-9.
void check_same_figures(const Json& fast, const Json& engine) {
  for (const char* mode : {"sharded", "pipelined"}) {
    INFO("point " << fast.at("point") << " " << mode);
    const Json& f = run_of(fast, mode);
    const Json& e = run_of(engine, mode);
    CHECK(f.at("stepTimeSeconds").get<double>() == Approx(e.at("stepTimeSeconds").get<double>()).epsilon(1e-9));
    CHECK(f.at("throughputSamplesPerSecond").get<double>() ==
          Approx(e.at("throughputSamplesPerSecond").get<double>()).epsilon(1e-9));
    CHECK(f.at("samplesPerStep") == e.at("samplesPerStep"));
    CHECK(f.at("microBatchesPerStep") == e.at("microBatchesPerStep"));
    CHECK(f.at("memory") == e.at("memory"));  // the same memory model, the same verdict and fixes
  }
  // The rest of the document is the scenario's: files, hashes, execution, plan, estimate, flags.
  Json rest = fast.at("report"), engine_rest = engine.at("report");
  for (Json* r : {&rest, &engine_rest})
    for (const char* key : {"runs", "speedupPipelinedOverSharded", "commandLine"}) r->erase(key);
  CHECK(rest == engine_rest);
  CHECK(fast.at("report").at("speedupPipelinedOverSharded").get<double>() ==
        Approx(engine.at("report").at("speedupPipelinedOverSharded").get<double>()).epsilon(1e-9));
}

} // namespace

TEST_CASE("sweep --fast: exact points give the engine's figures, the others run on the engine", "[sweep][fast]") {
  TempDir tmp;
  // Inference: depth 1 fails PopART's depth rule (the engine records it); I/O tiles overlap
  // host streams with compute, which no evaluator answers exactly: those points go to the engine.
  const Json inference = {{"name", "fast-inference"},
                          {"scenario", kSource + "/scenarios/mlp-inference.json"},
                          {"modes", "both"},
                          {"axes",
                           {{{"path", "execution.numIOTiles"}, {"values", {0, 32}}},
                            {{"path", "execution.batchesPerStep"}, {"values", {1, 2, 5, 64}}}}}};
  // Training: the sharded weight update, PopART's three stages over two IPUs.
  const Json training = {{"name", "fast-training"},
                         {"scenario", kSource + "/scenarios/mlp-training.json"},
                         {"modes", "both"},
                         {"axes", {{{"path", "execution.gradientAccumulation"}, {"values", {3, 4, 16}}}}}};
  for (const Json& def : {inference, training}) {
    const std::string name = def.at("name").get<std::string>();
    std::ofstream(tmp / (name + ".json")) << def.dump();
    const auto fast = cli({"sweep", tmp / (name + ".json"), "-o", tmp / (name + "-fast"), "--fast", "-j", "2"});
    const auto engine = cli({"sweep", tmp / (name + ".json"), "-o", tmp / (name + "-engine"), "-j", "2"});
    INFO(fast.err << engine.err);
    const auto f = results(tmp / (name + "-fast")), e = results(tmp / (name + "-engine"));
    REQUIRE(f.size() == e.size());
    REQUIRE(f.size() == (name == "fast-inference" ? 8u : 3u));
    std::size_t exact = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      INFO("point " << i << ": " << f[i].at("axes").dump());
      CHECK(e[i].at("evaluator") == "engine");
      CHECK(f[i].at("status") == e[i].at("status"));
      const bool io_tiles = f[i].at("axes").value("execution.numIOTiles", 0) > 0;
      const bool too_shallow = f[i].at("axes").value("execution.batchesPerStep", 2) < 2;
      if (io_tiles || too_shallow) {
        CHECK(f[i].at("evaluator") == "engine");
        if (e[i].contains("report")) CHECK(run_of(f[i], "pipelined") == run_of(e[i], "pipelined"));  // the same engine run
        if (too_shallow) CHECK(f[i].at("error").get<std::string>().find("[pipeline.depth]") != std::string::npos);
        continue;
      }
      CHECK(f[i].at("evaluator") == "exact");
      ++exact;
      check_same_figures(f[i], e[i]);
    }
    CHECK(exact == (name == "fast-inference" ? 3u : 3u));
    CHECK(fast.exit_code == (name == "fast-inference" ? 4 : 0));  // the depth-1 points failed
  }

  // Without --fast, the folder's exactly answered points run again on the engine; the engine's stay.
  const std::string dir = tmp / "fast-training-fast";
  const auto again = cli({"sweep", tmp / "fast-training.json", "-o", dir});
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(again.err.find("ran 3 in") != std::string::npos);
  for (const Json& r : results(dir)) CHECK(r.at("evaluator") == "engine");
  // And with --fast again, the engine's records are kept.
  const auto kept = cli({"sweep", tmp / "fast-training.json", "-o", dir, "--fast"});
  CHECK(kept.err.find("3 already done") != std::string::npos);
}

// The evaluator a sweep keeps reloads only the execution when only it changes; each point's
// report must be the one a fresh load gives, whatever the order of points.
TEST_CASE("sweep --fast: the kept scenario gives every point the report a fresh load gives", "[sweep][fast]") {
  const std::string scenario = kSource + "/scenarios/mlp-training.json";
  const std::vector<std::vector<std::string>> points = {
      {"execution.gradientAccumulation=8"},
      {"execution.gradientAccumulation=16", "execution.microBatchSize=2"},
      {"config.ipu.clockHz=1.5e9", "execution.gradientAccumulation=8"},
      {"execution.gradientAccumulation=4", "config.ipu.clockHz=1.5e9"},
      {"execution.gradientAccumulation=8"},
      {"execution.gradientAccumulation=0"},  // bad input: the engine reports it
      {"execution.schedule=\"1f1b\"", "execution.gradientAccumulation=8"},
      {"execution={\"training\": true, \"gradientAccumulation\": 4}", "execution.microBatchSize=2"}};
  ipusim::cli::ExactPointEvaluator kept;
  int answered = 0;
  for (const auto& sets : points) {
    std::vector<ipusim::Override> overrides;
    for (const std::string& s : sets) overrides.push_back(ipusim::parse_override(s));
    INFO(Json(sets).dump());
    const auto fresh = ipusim::cli::exact_point_report(scenario, "", overrides);
    const auto reused = kept(scenario, "", overrides);
    REQUIRE(fresh.has_value() == reused.has_value());
    if (fresh) {
      ++answered;
      CHECK(*fresh == *reused);
    }
  }
  CHECK(answered >= 5);  // the bad point and at most the schedule's are left to the engine
}
