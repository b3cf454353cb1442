// A researcher's shortcuts through the real binary: a model run on a config without a
// scenario file, --version and the exit codes in --help, PopART's and PopTorch's names,
// compare, and sweeps that mark points that do not fit.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"
#include "sim/base/units.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using ipusim::test::Result;
using ipusim::test::run_ipusim;
using ipusim::test::TempDir;
using Json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

std::string source(const std::string& relative) { return std::string(IPUSIM_SOURCE_DIR) + "/" + relative; }

const std::string kModel = source("models/mlp.json");
const std::string kConfig = source("configs/ipu-m2000.json");

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::size_t line_count(const std::string& text) { return count_of(text, "\n"); }

Json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> all = args;
  all.push_back("--json");
  const Result r = run_ipusim(all);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return Json::parse(r.out);
}

} // namespace

TEST_CASE("cli: run MODEL --config CONFIG is the scenario with every default", "[cli][workflow]") {
  const TempDir dir;
  // The same run from a scenario file that names the model, the config and batchesPerStep 64.
  const std::string scenario =
      dir.write("mlp.json", Json{{"model", kModel}, {"config", kConfig}, {"execution", {{"batchesPerStep", 64}}}});
  const Json from_file = run_json({"run", scenario});
  const Json direct = run_json({"run", kModel, "--config", kConfig});
  CHECK(direct.at("scenario") == "mlp");
  CHECK(direct.at("scenarioFile") == "command line");
  CHECK(direct.at("execution") == from_file.at("execution"));
  CHECK(direct.at("execution").at("training") == false);
  CHECK(direct.at("execution").at("batchesPerStep") == 64);
  CHECK(direct.at("execution").at("microBatchSize") == 1);
  REQUIRE(direct.at("runs").size() == 2);  // both modes by default
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(direct.at("runs")[i].at("stepTimeSeconds") == from_file.at("runs")[i].at("stepTimeSeconds"));

  // --set reaches the execution as in a scenario: G = 8 training, 2 batches per step.
  const Json trained = run_json({"run", kModel, "--config", kConfig, "--set", "execution.training=true", "--set",
                                 "execution.gradientAccumulation=8", "--set", "execution.batchesPerStep=2", "--mode",
                                 "pipelined"});
  CHECK(trained.at("execution").at("training") == true);
  CHECK(trained.at("runs")[0].at("microBatchesPerStep") == 16);

  // A bad setting is the flag's.
  const Result bad = run_ipusim({"run", kModel, "--config", kConfig, "--set", "execution.mode=piplined"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("--set: at execution.mode: unknown mode \"piplined\"") &&
                          Contains("(did you mean \"pipelined\"?)") && Contains("[scenario.bad-mode]"));
}

TEST_CASE("cli: a model given as a scenario is named as such", "[cli][workflow]") {
  const Result r = run_ipusim({"run", kModel});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("this is a model, not a scenario") && Contains("--config") &&
                        Contains("[scenario.is-a-model]"));
}

TEST_CASE("cli: --version, and every exit code in --help", "[cli][workflow]") {
  const Result version = run_ipusim({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out == "ipusim " IPUSIM_TEST_VERSION "\n");
  const Result help = run_ipusim({"--help"});
  CHECK(help.exit_code == 0);
  for (const char* code : {"0 success", "2 bad input", "3 internal fault", "4 some sweep points failed",
                           "5 out of memory", "6 sweep points still missing"})
    CHECK_THAT(help.out, Contains(code));
}

namespace {

std::string scenario_with(const TempDir& dir, const Json& execution) {
  return dir.write("s.json", Json{{"model", kModel}, {"config", kConfig}, {"execution", execution}});
}

} // namespace

TEST_CASE("cli: PopART and PopTorch names: aliases read as ipusim's keys", "[cli][workflow][vocabulary]") {
  const TempDir dir;
  // accumulationFactor (PopART) = gradientAccumulation, deviceIterations (PopTorch) =
  // batchesPerStep: 2 x 8 micro-batches per step, as with ipusim's own keys.
  const Json own = run_json({"run", scenario_with(dir, {{"training", true}, {"gradientAccumulation", 8},
                                                        {"batchesPerStep", 2}, {"mode", "pipelined"}})});
  const Json popart = run_json({"run", scenario_with(dir, {{"training", true}, {"accumulationFactor", 8},
                                                           {"deviceIterations", 2}, {"mode", "pipelined"}})});
  CHECK(popart.at("runs")[0].at("microBatchesPerStep") == 16);
  CHECK(popart.at("runs")[0].at("stepTimeSeconds") == own.at("runs")[0].at("stepTimeSeconds"));
  CHECK(popart.at("execution") == own.at("execution"));

  // replicationFactor (PopTorch) = replicas: 2 replicas of the 2-IPU pipeline.
  const Json replicated = run_json({"run", kModel, "--config", kConfig, "--set", "execution.replicationFactor=2"});
  CHECK(replicated.at("execution").at("replicas") == 2);

  // Both names: refused at the alias.
  const Result both = run_ipusim(
      {"run", scenario_with(dir, {{"training", true}, {"gradientAccumulation", 8}, {"accumulationFactor", 8}})});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Contains("at /execution/accumulationFactor") && Contains("[json.alias-twice]"));
  // A bad value under an alias is located at the alias.
  const Result zero = run_ipusim({"run", scenario_with(dir, {{"training", true}, {"accumulationFactor", 0}})});
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Contains("at /execution/accumulationFactor") &&
                           Contains("(\"accumulationFactor\" is read as \"gradientAccumulation\")"));
}

TEST_CASE("cli: PopART and PopTorch names: did you mean", "[cli][workflow][vocabulary]") {
  const TempDir dir;
  struct Case {
    Json execution;
    std::string expected, rule;
  };
  const std::vector<Case> cases = {
      {{{"enablePipelining", true}}, "\"mode\": \"pipelined\" runs the pipeline only", "json.unknown-key"},
      {{{"virtualGraphMode", "Manual"}}, "VirtualGraphMode::Manual", "json.unknown-key"},
      {{{"autoRecomputation", "Pipeline"}}, "\"recomputation\": \"pipeline\"", "json.unknown-key"},
      {{{"training", true}, {"recomputation", true}}, "not true (did you mean \"pipeline\"?)",
       "scenario.bad-recomputation"},
      {{{"training", true}, {"recomputation", "Pipeline"}}, "(did you mean \"pipeline\"?)",
       "scenario.bad-recomputation"},
      {{{"schedule", "1F1B"}}, "unknown pipeline schedule \"1F1B\" (did you mean \"1f1b\"?)",
       "scenario.unknown-schedule"},
      {{{"costModel", "poplib"}}, "(did you mean \"poplibs\"?)", "scenario.unknown-cost-model"},
      {{{"partialsTypeMatMuls", "float16"}}, "(did you mean \"float\"?)", "scenario.bad-partials-type"},
      {{{"training", true}, {"optimizer", {{"type", "Adam"}}}}, "(did you mean \"adam\"?)",
       "scenario.bad-optimizer"},
      {{{"training", true}, {"accumulateOuterFragmentSettings", {{"schedule", "serial"}}}},
       "(did you mean \"Serial\"?)", "scenario.bad-weight-update-schedule"},
  };
  for (const Case& c : cases) {
    INFO(c.execution.dump());
    const Result r = run_ipusim({"run", scenario_with(dir, c.execution)});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(c.expected) && Contains("[" + c.rule + "]"));
  }
  // Nothing close: no guess.
  const Result far = run_ipusim({"run", scenario_with(dir, {{"frobnicate", 1}})});
  CHECK(far.exit_code == 2);
  CHECK_THAT(far.err, Contains("unknown key \"frobnicate\" [json.unknown-key]"));
}

TEST_CASE("cli: a --set typo is the flag's, not the shipped file's", "[cli][workflow][vocabulary]") {
  const Result r = run_ipusim({"run", kModel, "--config", kConfig, "--set", "config.ipu.clockhz=1.85e9"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("ipusim: error: --set: at config.ipu.clockhz: unknown key \"clockhz\" (did you mean "
                             "\"clockHz\"?)") &&
                        Contains("[json.unknown-key]"));
  const Result value = run_ipusim({"run", source("scenarios/mlp-inference.json"), "--set", "execution.batchesPerStep=0"});
  CHECK(value.exit_code == 2);
  CHECK_THAT(value.err, Contains("--set: at execution.batchesPerStep:"));
  // Syntax: "--set a 8" gives the path without a value.
  const Result syntax = run_ipusim({"run", kModel, "--config", kConfig, "--set", "a", "8"});
  CHECK(syntax.exit_code == 2);
  CHECK_THAT(syntax.err, Contains("(--set takes one argument, path=value: --set a=8)") &&
                           Contains("[cli.unknown-argument]"));
}

namespace {

// The pipeline of test_attribution.cpp: IPU0 `flops0` ns, IPU1 2 ms per micro-batch,
// 4 micro-batches, 1 us copies, every overhead zeroed; written with run --json.
std::string chain_run(const TempDir& dir, const std::string& name, double flops0) {
  const Json model = ipusim::test::chain_model({{0, flops0}, {1, 2e6}}, 250);
  const Json scenario = {{"name", name},
                         {"model", model},
                         {"config", ipusim::test::zero_overhead_config(2)},
                         {"execution",
                          {{"training", false}, {"batchesPerStep", 4}, {"hostIo", false}, {"costModel", "compute"},
                           {"mode", "pipelined"}}}};
  const std::string out = dir.path(name + ".run.json");
  const Result r = run_ipusim({"run", dir.write(name + ".json", scenario), "--json", "-o", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

} // namespace

TEST_CASE("cli: compare puts two runs side by side with differences, ratios and what changed", "[cli][compare]") {
  const TempDir dir;
  // A: stages of 1 and 2 ms: step 2 ms x 4 + 1 ms + 5 x 1 us = 9.005 ms; compute 12 ms,
  // fill/flush 2 ms, imbalance 4 ms of IPU time. B: 2 and 2 ms: 2 ms x 5 + 5 us = 10.005 ms;
  // compute 16 ms, fill/flush 4 ms, no imbalance.
  const std::string a = chain_run(dir, "a", 1e6), b = chain_run(dir, "b", 2e6);
  const Result r = run_ipusim({"compare", a, b});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("A: " + a + " (scenario \"a\")"));
  // The models differ inline only: their content hashes tell them apart (issue 23; before,
  // "nothing recorded").
  CHECK_THAT(r.out, Contains("B differs from A in: modelHash \"fnv1a64:"));
  CHECK_THAT(r.out, !Contains("configHash"));
  // 10.005 ms is a tie at four digits: printed 10.00 or 10.01 by the last bit of the sum.
  // Catch2's || keeps references to its operands: they must outlive b_step.
  const auto rounded_down = Contains("10.00 ms"), rounded_up = Contains("10.01 ms");
  const auto b_step = rounded_down || rounded_up;
  CHECK_THAT(r.out, Contains("step time                  9.005 ms         10.0") && b_step &&
                        Contains(" ms         +1000.0 us       1.11x"));
  CHECK_THAT(r.out, Contains("  imbalance                22.2 %           0.0 %            -22.2 pts"));
  CHECK_THAT(r.out, Contains("bottleneck                 IPU 1, stage 1   IPU 0, stage 0"));
  CHECK_THAT(r.out, Contains("B against A, pipelined: the step is 1.11x longer (9.005 ms -> 10.0"));
  CHECK_THAT(r.out, Contains(" ms), throughput "
                             "x0.90. IPU time (summed over IPUs) changed most in imbalance -4.000 ms, computing "
                             "+4.000 ms, fill and flush +2.000 ms; the bottleneck moves from IPU 1, stage 1 to IPU 0, "
                             "stage 0."));

  // Execution differences are named; anything but a run document is refused.
  const Result self = run_ipusim({"compare", a, a});
  CHECK(self.exit_code == 0);
  CHECK_THAT(self.out, Contains("the same step time (9.005 ms)"));
  const Result scenario = run_ipusim({"compare", a, dir.path("b.json")});
  CHECK(scenario.exit_code == 2);
  CHECK_THAT(scenario.err, Contains(dir.path("b.json") + ": at /runs:") && Contains("[compare.not-a-run]"));
  const Result one = run_ipusim({"compare", a});
  CHECK(one.exit_code == 2);
}

TEST_CASE("cli: a sweep marks points that do not fit as oom, and --fail-on-oom exits 5", "[cli][sweep][oom]") {
  const TempDir dir;
  // The MLP's fullest tile holds about 11 KiB: 8 KiB per tile does not fit, 624 KiB does.
  const Json sweep = {{"scenario", source("scenarios/mlp-training.json")},
                      {"modes", "pipelined"},
                      {"axes", {{{"path", "config.ipu.sramBytesPerTile"}, {"values", {8192, 638976}}}}}};
  const std::string file = dir.write("oom.json", sweep);
  const Result r = run_ipusim({"sweep", file, "-o", dir.path("out"), "-j", "1"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("2 ok (1 out of memory), 0 failed"));
  const Result strict = run_ipusim({"sweep", file, "-o", dir.path("out"), "--fail-on-oom"});
  CHECK(strict.exit_code == 5);
  std::ifstream csv(dir.path("out/results.csv"));
  std::string header, small, large;
  std::getline(csv, header);
  std::getline(csv, small);
  std::getline(csv, large);
  CHECK_THAT(header, Contains("pipelined.bubbleFraction,pipelined.fits,phased.stepTimeSeconds"));
  CHECK_THAT(header, Contains("phased.fits,speedup,error"));
  CHECK_THAT(small, Contains(",oom,8192,"));
  CHECK_THAT(small, Contains(",false,"));
  CHECK_THAT(large, Contains(",ok,638976,"));
  CHECK_THAT(large, Contains(",true,"));
}

namespace {

// A CSV document without quoted cells: rows of cells, and a cell by column name.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string at(std::size_t row, const std::string& column) const {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (header[c] == column) return rows.at(row).at(c);
    FAIL("no column " << column);
    return "";
  }
};

Csv parse_csv(const std::string& text) {
  Csv out;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::vector<std::string> cells;
    const std::string line = text.substr(start, end - start);
    for (std::size_t a = 0, b;; a = b + 1) {
      b = line.find(',', a);
      cells.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
    }
    if (out.header.empty()) out.header = cells;
    else out.rows.push_back(cells);
  }
  return out;
}

} // namespace

TEST_CASE("cli: run --csv writes one row per mode with per-IPU columns", "[cli][csv]") {
  // The unequal-stages pipeline of test_attribution.cpp (IPU0 1 ms, IPU1 2 ms, 4 micro-batches,
  // 1 us copies): pipelined step 4 x 2 ms + 1 ms + 5 x 1 us = 9.005 ms, IPU0 1 ms flush and
  // 4 ms imbalance, IPU1 1 ms fill; sharded 4 x (1 ms + 1 us + 2 ms) = 12.004 ms, IPU0 waits
  // 4 x 2 ms for its turn.
  const TempDir dir;
  const Json scenario = {{"name", "csv"},
                         {"model", ipusim::test::chain_model({{0, 1e6}, {1, 2e6}}, 250)},
                         {"config", ipusim::test::zero_overhead_config(2)},
                         {"execution",
                          {{"training", false}, {"batchesPerStep", 4}, {"hostIo", false}, {"costModel", "compute"}}}};
  const std::string file = dir.write("csv.json", scenario);
  const std::string out = dir.path("csv.csv");
  const Result r = run_ipusim({"run", file, "--csv", "-o", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(out);
  const Csv csv = parse_csv(std::string(std::istreambuf_iterator<char>(in), {}));
  REQUIRE(csv.rows.size() == 2);
  REQUIRE(csv.header.size() == csv.rows[0].size());
  const std::size_t sharded = csv.at(0, "mode") == "sharded" ? 0 : 1, pipelined = 1 - sharded;
  CHECK(csv.at(pipelined, "mode") == "pipelined");
  CHECK(csv.at(pipelined, "scenario") == "csv");
  CHECK(csv.at(pipelined, "schedule") == "popart");
  const auto number = [&](std::size_t row, const std::string& column) { return std::stod(csv.at(row, column)); };
  CHECK(number(pipelined, "stepTimeSeconds") == Approx(9.005e-3).epsilon(1e-9));
  CHECK(number(pipelined, "ipu0.idle.fillFlushSeconds") == Approx(1e-3).epsilon(1e-9));
  CHECK(number(pipelined, "ipu0.idle.imbalanceSeconds") == Approx(4e-3).epsilon(1e-9));
  CHECK(number(pipelined, "ipu1.idle.fillFlushSeconds") == Approx(1e-3).epsilon(1e-9));
  CHECK(number(pipelined, "ipu1.busySeconds") == Approx(8e-3).epsilon(1e-9));
  CHECK(csv.at(pipelined, "bottleneck.ipu") == "1");
  CHECK(csv.at(pipelined, "memory.vipu1.fits") == "true");
  // 250 floats (1000 bytes) in each of the 5 cycles' copy phases: PopART copies every cycle.
  CHECK(number(pipelined, "links.ipu0->ipu1.bytes") == 5 * 1000);
  CHECK(number(sharded, "stepTimeSeconds") == Approx(12.004e-3).epsilon(1e-9));
  CHECK(number(sharded, "ipu0.idle.turnWaitSeconds") == Approx(8e-3).epsilon(1e-9));
  // The cells are the JSON's numbers, digit for digit.
  const Json doc = run_json({"run", file});
  for (const Json& run : doc.at("runs")) {
    const std::size_t row = run.at("mode") == "sharded" ? sharded : pipelined;
    CHECK(csv.at(row, "stepTimeSeconds") == run.at("stepTimeSeconds").dump());
    CHECK(csv.at(row, "timeShares.idleImbalance") == run.at("timeShares").at("idleImbalance").dump());
  }

  const Result both = run_ipusim({"run", file, "--csv", "--json"});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Contains("--csv"));
}

TEST_CASE("cli: a replicated, placed run names physical and virtual IPUs apart in every output",
          "[cli][workflow][placement]") {
  // Virtual IPU v of replica r on physical IPU 4v + r (the scenario's placement): utilisation
  // is per physical IPU, memory per virtual IPU (every replica holds the same).
  const std::string scenario = source("scenarios/bert-large-pod16-across-m2000s.json");
  const Json doc = run_json({"run", scenario});
  REQUIRE(doc.at("runs").size() == 1);
  const Json& run = doc.at("runs")[0];
  REQUIRE(run.at("ipus").size() == 16);
  for (const Json& ipu : run.at("ipus")) {
    INFO(ipu.dump());
    CHECK(ipu.at("id") == 4 * ipu.at("virtualIpu").get<int>() + ipu.at("replica").get<int>());
    CHECK(ipu.at("replica").get<int>() < 4);
  }
  const Json& memory = run.at("memory").at("ipus");
  REQUIRE(memory.size() == 4);
  for (int v = 0; v < 4; ++v) CHECK(memory[static_cast<std::size_t>(v)].at("virtualIpu") == v);
  const Json& bottleneck = run.at("bottleneck");
  CHECK(bottleneck.at("ipu") == 4 * bottleneck.at("virtualIpu").get<int>() + bottleneck.at("replica").get<int>());
  // The plan is one replica's pipeline over virtual IPUs: BERT's heads (stage 4) return to vIPU 0.
  const Json& plan = doc.at("plan");
  REQUIRE(plan.at("ipus").size() == 4);
  for (int v = 0; v < 4; ++v) CHECK(plan.at("ipus")[static_cast<std::size_t>(v)].at("virtualIpu") == v);
  CHECK(plan.at("stages")[4].at("virtualIpu") == 0);
  CHECK(plan.at("copies")[3].at("srcVirtualIpu") == 3);
  CHECK(plan.at("copies")[3].at("dstVirtualIpu") == 0);

  const Result table = run_ipusim({"run", scenario});
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Contains("IPU 5 (replica 1, vIPU 1) utilisation"));
  CHECK_THAT(table.out, Contains("IPU 15 (replica 3, vIPU 3) utilisation"));
  CHECK_THAT(table.out, Contains("vIPU 1 memory"));
  CHECK_THAT(table.out, Contains("vIPU 3 fullest tile"));
  CHECK_THAT(table.out, !Contains("IPU 4 memory") && !Contains("IPU 15 memory"));
  CHECK_THAT(table.out, Contains("The bottleneck is IPU " + bottleneck.at("ipu").dump() + " (replica " +
                                 bottleneck.at("replica").dump() + ", vIPU " + bottleneck.at("virtualIpu").dump() + ")"));

  const Result csv_run = run_ipusim({"run", scenario, "--csv"});
  REQUIRE(csv_run.exit_code == 0);
  const Csv csv = parse_csv(csv_run.out);
  REQUIRE(csv.rows.size() == 1);
  CHECK(csv.at(0, "ipu5.replica") == "1");
  CHECK(csv.at(0, "ipu5.virtualIpu") == "1");
  CHECK(csv.at(0, "ipu12.virtualIpu") == "3");
  CHECK(csv.at(0, "memory.vipu3.fits") == run.at("memory").at("ipus")[3].at("fits").dump());

  // compare names the bottleneck as the table does.
  const TempDir dir;
  const Json in_order = run_json({"run", source("scenarios/bert-large-pod16.json")});
  const std::string a = dir.write("a.json", in_order), b = dir.write("b.json", doc);
  const Result compared = run_ipusim({"compare", a, b});
  REQUIRE(compared.exit_code == 0);
  const auto named = [](const Json& d) {
    const Json& at = d.at("runs")[0].at("bottleneck");
    return "IPU " + at.at("ipu").dump() + " (replica " + at.at("replica").dump() + ", vIPU " +
           at.at("virtualIpu").dump() + "), stage " + at.at("stage").dump();
  };
  CHECK_THAT(compared.out, Contains("bottleneck                 " + named(in_order)));
  CHECK_THAT(compared.out, Contains(named(doc)));

  // Without replicas or a placement physical IPU n is virtual IPU n: the names stay plain.
  const Result plain = run_ipusim({"run", source("scenarios/mlp-training.json")});
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.out, Contains("IPU 1 utilisation") && Contains("IPU 1 memory") && !Contains("vIPU"));
}

TEST_CASE("cli: plan MODEL --config CONFIG plans as a scenario of that model and config does", "[cli][workflow][planner]") {
  const TempDir dir;
  const std::string model = source("models/gpt2-small.json"), config = source("configs/ipu-m2000.json");
  const std::string scenario = dir.write(
      "s.json", Json{{"model", model}, {"config", config}, {"execution", {{"batchesPerStep", 64}}}});
  const Result from_scenario = run_ipusim({"plan", scenario, "--set", "execution.training=true", "--set",
                                           "execution.gradientAccumulation=16", "--quiet"});
  const Result from_model = run_ipusim({"plan", model, "--config", config, "--set", "execution.training=true", "--set",
                                        "execution.gradientAccumulation=16", "--quiet"});
  REQUIRE(from_scenario.exit_code == 0);
  REQUIRE(from_model.exit_code == 0);
  CHECK_THAT(from_model.out, Contains("ipusim plan " + model + " --config " + config + ": gpt2-small"));
  // The same space, the same best, timed alike (the search's own time aside).
  for (const char* prefix : {"space:", "#1 ", "  engine:", "  memory:", "#2 ", "#3 "})
    CHECK(ipusim::test::line_starting(from_model.out, prefix) == ipusim::test::line_starting(from_scenario.out, prefix));
  CHECK_FALSE(ipusim::test::line_starting(from_model.out, "#1 ").empty());
  // The best's model figures: GPT-2 small's 124,439,808 parameters, 128-token samples, MFU.
  CHECK_THAT(ipusim::test::line_starting(from_model.out, "  model:"),
             Contains("124.4 M parameters") && Contains("ktokens/s") && Contains("MFU"));
}

TEST_CASE("cli: a 64-IPU run's table summarises its replicas and links; the JSON keeps every IPU and link",
          "[cli][workflow][table]") {
  const std::string scenario = source("scenarios/bert-large-mlperf-pod64.json");
  const Result table = run_ipusim({"run", scenario, "--mode", "pipelined"});
  REQUIRE(table.exit_code == 0);
  // 8 virtual IPUs x 8 replicas: one utilisation row per virtual IPU (481 lines before: a row
  // per IPU and per link direction).
  std::size_t lines = 0, utilisation = 0;
  std::istringstream in(table.out);
  for (std::string line; std::getline(in, line);) {
    ++lines;
    if (line.find("utilisation, all replicas") != std::string::npos) ++utilisation;
  }
  CHECK(utilisation == 8);
  CHECK(lines < 120);
  CHECK_THAT(table.out, Contains("link directions used") && Contains("busiest link"));
  const Result json = run_ipusim({"run", scenario, "--mode", "pipelined", "--json"});
  REQUIRE(json.exit_code == 0);
  const Json doc = Json::parse(json.out);
  CHECK(doc["runs"][0]["ipus"].size() == 64);
  const std::string used = ipusim::test::line_starting(table.out, "link directions used");
  CHECK_THAT(used, Contains(std::to_string(doc["runs"][0]["links"].size())));
}

TEST_CASE("cli: a 64-stage pipeline's table gives per-IPU ranges, the plan's ends and the 3 fullest IPUs",
          "[cli][workflow][table][costly]") {
  const TempDir dir;
  const std::string model = dir.path("g64.json");
  std::string per_ipu = "1";
  for (int i = 1; i < 64; ++i) per_ipu += ",1";
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  REQUIRE(std::system((python + " '" + source("scripts/make_gpt_model.py") + "' --hidden 1024 --heads 16 --seq 256 " +
                       "--layers-per-ipu " + per_ipu + " -o '" + model + "'")
                          .c_str()) == 0);
  const std::vector<std::string> args{"run", model, "--config", source("configs/bow-pod64.json"), "--set",
                                      "execution.training=true", "--set", "execution.gradientAccumulation=256",
                                      "--set", "execution.optimizer.type=sgd", "--mode", "pipelined"};
  const Result table = run_ipusim(args);
  REQUIRE(table.exit_code == 0);
  auto json_args = args;
  json_args.push_back("--json");
  const Json doc = Json::parse(run_ipusim(json_args).out);
  const Json& run = doc["runs"][0];
  REQUIRE(run["ipus"].size() == 64);
  // 129 stages and 128 copies: the first and last 8 of each, the rest counted.
  CHECK_THAT(table.out, Contains("  ... 113 more stages") && Contains("  ... 112 more copies"));
  CHECK(line_count(table.out) < 100);  // 626 lines with a row per IPU, stage, copy and verdict
  // The utilisation range is the JSON's lowest and highest, on the IPUs that hold them.
  double low = 1, high = 0;
  int low_ipu = -1, high_ipu = -1;
  for (const Json& m : run["ipus"]) {
    const double u = m["utilization"].get<double>();
    if (u < low) low = u, low_ipu = m["id"].get<int>();
    if (u > high) high = u, high_ipu = m["id"].get<int>();
  }
  CHECK_THAT(ipusim::test::line_starting(table.out, "utilisation, 64 IPUs"),
             Contains(ipusim::format_percent(low) + " .. " + ipusim::format_percent(high)));
  CHECK_THAT(table.out, Contains("IPU " + std::to_string(low_ipu) + " / IPU " + std::to_string(high_ipu)));
  // Out of memory: three verdicts in full and the others counted, as the JSON has them.
  std::size_t overfull = 0;
  for (const Json& m : run["memory"]["ipus"]) overfull += m["fits"].get<bool>() ? 0 : 1;
  REQUIRE(overfull > 3);
  CHECK(ipusim::test::line_starting(table.out, "IPUs out of memory").find(std::to_string(overfull)) !=
        std::string::npos);
  CHECK(count_of(table.out, "\nOUT OF MEMORY (pipelined)") == 3);
  CHECK_THAT(table.out, Contains("... and " + std::to_string(overfull - 3) + " more IPUs out of memory"));
}

TEST_CASE("cli: plan --json gives the confirmed candidates as data; the first's execution runs to its engine figures",
          "[cli][workflow][planner]") {
  const TempDir dir;
  const std::string scenario = source("scenarios/mlp-training.json"), prefix = dir.path("best");
  const std::vector<std::string> search = {"plan", scenario, "--ipus", "2", "--micro-batch", "8,16", "--top", "2", "--quiet"};
  std::vector<std::string> as_json = search;
  as_json.insert(as_json.end(), {"--json", "--write", prefix});
  const Result text = run_ipusim(search), json = run_ipusim(as_json);
  REQUIRE(text.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  const Json doc = Json::parse(json.out);
  CHECK(doc.at("fits") == true);
  CHECK(doc.at("training") == true);
  CHECK(doc.at("search").at("complete") == true);
  const Json& candidates = doc.at("candidates");
  REQUIRE(candidates.size() == 2);
  // The text report's ranking, candidate by candidate, and the report itself in "text".
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string rank = "#" + std::to_string(i + 1) + " ";
    CHECK(ipusim::test::line_starting(text.out, rank) == rank + candidates[i].at("description").get<std::string>());
    CHECK(ipusim::test::line_starting(doc.at("text").get<std::string>(), rank) == ipusim::test::line_starting(text.out, rank));
  }
  CHECK(candidates[0].at("engine").at("throughputSamplesPerSecond").get<double>() >=
        candidates[1].at("engine").at("throughputSamplesPerSecond").get<double>());
  const Json& best = candidates[0];
  CHECK(best.at("layersPerIpu") == Json::array({1, 1}));
  CHECK(best.at("globalBatch").get<long>() == best.at("execution").at("microBatchSize").get<long>() *
                                                 best.at("execution").at("gradientAccumulation").get<long>() *
                                                 best.at("execution").at("replicas").get<long>());
  // The written scenario runs the first candidate: its execution is the document's, and the
  // engine gives the step the document reports for it.
  std::ifstream written_file(prefix + ".scenario.json");
  const Json written = Json::parse(written_file);
  CHECK(written.at("execution") == best.at("execution"));
  const Result run = run_ipusim({"run", prefix + ".scenario.json", "--json", "--mode", "pipelined"});
  REQUIRE(run.exit_code == 0);
  CHECK(Json::parse(run.out).at("runs").at(0).at("stepTimeSeconds").get<double>() ==
        best.at("engine").at("stepTimeSeconds").get<double>());
  // A phased scenario's plan is text only: --json is refused, not answered with an empty list.
  const Result phased = run_ipusim({"plan", source("scenarios/bert-large-phased-pod16.json"), "--json", "--quiet"});
  CHECK(phased.exit_code == 2);
  CHECK_THAT(phased.err, Contains("--json") && Contains("cli.conflict"));
}
