// The real ipusim binary, driven through fork + exec: exit codes (0 ok, 2 bad input),
// what lands on stdout and stderr, the JSON report's shape, determinism and --output.
#include <catch2/catch.hpp>

#include "cli_runner.hpp"
#include "temp_dir.hpp"

using ipusim::test::Result;
using ipusim::test::run_ipusim;
using ipusim::test::TempDir;

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

using Json = nlohmann::json;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string source(const std::string& relative) { return std::string(IPUSIM_SOURCE_DIR) + "/" + relative; }

const std::string kInference = source("scenarios/mlp-inference.json");


std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scenario next to the shipped one's files, with `execution` as given.
std::string scenario_text(const std::string& execution) {
  return "{\"name\": \"cli\", \"model\": \"" + source("models/mlp.json") + "\", \"config\": \"" +
         source("configs/ipu-m2000.json") + "\", \"execution\": " + execution + "}";
}

const Json& run_of(const Json& report, const std::string& mode) {
  for (const Json& r : report.at("runs"))
    if (r.at("mode") == mode) return r;
  FAIL("no run for mode " << mode);
  throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("cli: run --json reports both modes with every metric", "[cli]") {
  const Result r = run_ipusim({"run", kInference, "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const Json report = Json::parse(r.out);
  REQUIRE(report.at("runs").size() == 2);
  CHECK(report["runs"][0]["mode"] == "sharded");
  CHECK(report["runs"][1]["mode"] == "pipelined");
  for (const Json& run : report["runs"]) {
    INFO(run.at("mode"));
    const double step = run.at("step_time_s");
    CHECK(step > 0);
    // 16 samples per micro-batch x 64 batchesPerStep.
    CHECK(run.at("samples_per_step") == 1024);
    CHECK(run.at("throughput_samples_per_s").get<double>() == Approx(1024 / step).epsilon(1e-12));
    const Json& latency = run.at("latency_s");
    CHECK(latency.at("min").get<double>() > 0);
    CHECK(latency.at("min").get<double>() <= latency.at("mean").get<double>());
    CHECK(latency.at("mean").get<double>() <= latency.at("max").get<double>());
    CHECK(latency.at("max").get<double>() <= step);
    const double bubble = run.at("bubble_fraction");
    CHECK(bubble >= 0);
    CHECK(bubble < 1);
    REQUIRE(run.at("ipus").size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      const Json& ipu = run["ipus"][i];
      CHECK(ipu.at("id") == static_cast<int>(i));
      CHECK(ipu.at("busy_s").get<double>() > 0);
      CHECK(ipu.at("utilization").get<double>() == Approx(ipu["busy_s"].get<double>() / step).epsilon(1e-9));
    }
    bool ipu0_to_ipu1 = false;
    for (const Json& link : run.at("links")) {
      CHECK(link.at("name").is_string());
      CHECK(link.at("bytes").get<double>() >= 0);
      if (link["name"] == "ipu0->ipu1") ipu0_to_ipu1 = link["bytes"].get<double>() > 0;
    }
    CHECK(ipu0_to_ipu1);  // the activation x2 crosses from IPU0 to IPU1
  }
  // Sharded: one IPU at a time, so the two utilizations add up to at most 1.
  const Json& sharded = run_of(report, "sharded");
  CHECK(sharded["ipus"][0]["utilization"].get<double>() + sharded["ipus"][1]["utilization"].get<double>() <= 1.0);
  const double speedup = report.at("speedup_pipelined_over_sharded");
  CHECK(speedup > 1);
  CHECK(speedup == Approx(sharded["step_time_s"].get<double>() /
                          run_of(report, "pipelined")["step_time_s"].get<double>())
                       .epsilon(1e-12));
}

TEST_CASE("cli: the same run twice gives byte-identical output", "[cli]") {
  const Result a = run_ipusim({"run", kInference, "--json"});
  const Result b = run_ipusim({"run", kInference, "--json"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(a.out.size() > 100);
  CHECK(a.out == b.out);
  const Result t1 = run_ipusim({"run", source("scenarios/mlp-training.json")});
  const Result t2 = run_ipusim({"run", source("scenarios/mlp-training.json")});
  REQUIRE(t1.exit_code == 0);
  CHECK(t1.out == t2.out);
}

TEST_CASE("cli: --mode sharded runs one mode", "[cli]") {
  const Result r = run_ipusim({"run", kInference, "--json", "--mode", "sharded"});
  REQUIRE(r.exit_code == 0);
  const Json report = Json::parse(r.out);
  REQUIRE(report.at("runs").size() == 1);
  CHECK(report["runs"][0]["mode"] == "sharded");
  CHECK_FALSE(report.contains("speedup_pipelined_over_sharded"));
}

TEST_CASE("cli: --set execution.microBatchSize=32 doubles the samples per step", "[cli]") {
  const Result base = run_ipusim({"run", kInference, "--json"});
  const Result doubled = run_ipusim({"run", kInference, "--json", "--set", "execution.microBatchSize=32"});
  REQUIRE(base.exit_code == 0);
  REQUIRE(doubled.exit_code == 0);
  const Json b = Json::parse(base.out), d = Json::parse(doubled.out);
  CHECK(d["execution"]["micro_batch_size"] == 32);
  for (const std::string mode : {"sharded", "pipelined"}) {
    CHECK(run_of(b, mode)["samples_per_step"] == 1024);
    CHECK(run_of(d, mode)["samples_per_step"] == 2048);
    CHECK(run_of(d, mode)["micro_batches_per_step"] == run_of(b, mode)["micro_batches_per_step"]);
  }
  SECTION("config. overrides reach the config file") {
    const Result r = run_ipusim({"run", kInference, "--json", "--set", "config.ipu.clockHz=2.65e9"});
    REQUIRE(r.exit_code == 0);
    // Twice the clock: every compute step is twice as fast, so the step time drops.
    CHECK(run_of(Json::parse(r.out), "sharded")["step_time_s"].get<double>() <
          run_of(b, "sharded")["step_time_s"].get<double>());
  }
  SECTION("a malformed --set") {
    const Result r = run_ipusim({"run", kInference, "--set", "execution.microBatchSize"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--set") && Contains("override.syntax"));
  }
}

TEST_CASE("cli: a malformed scenario exits 2 naming the file and the line", "[cli]") {
  TempDir dir;
  const std::string path = dir.write("broken.json", "{\n  \"name\": \"x\",\n  \"model\": \n}\n");
  const Result r = run_ipusim({"run", path});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains(path) && Contains("line 4") && Contains("json.syntax"));
}

TEST_CASE("cli: an unknown key exits 2 with its pointer", "[cli]") {
  TempDir dir;
  const std::string path =
      dir.write("unknown.json", scenario_text("{\"microBatchSize\": 16, \"batchesPerStep\": 64, \"pipelineDepth\": 4}"));
  const Result r = run_ipusim({"run", path});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(path) && Contains("/execution/pipelineDepth") && Contains("json.unknown-key"));
}

TEST_CASE("cli: a pipeline too shallow for its stages exits 2 with pipeline.depth", "[cli]") {
  const Result r = run_ipusim({"run", kInference, "--set", "execution.batchesPerStep=1"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains("pipeline.depth") && Contains("/execution/batchesPerStep") && Contains(kInference));
  // Sharded alone has no depth rule.
  CHECK(run_ipusim({"run", kInference, "--set", "execution.batchesPerStep=1", "--mode", "sharded"}).exit_code == 0);
  // Training on 2 IPUs: G = 2 < 3 fails, G = 3 passes.
  const std::string training = source("scenarios/mlp-training.json");
  const Result g2 = run_ipusim({"run", training, "--set", "execution.gradientAccumulation=2"});
  CHECK(g2.exit_code == 2);
  CHECK_THAT(g2.err, Contains("pipeline.depth") && Contains("2 < 3"));
  CHECK(run_ipusim({"run", training, "--set", "execution.gradientAccumulation=3"}).exit_code == 0);
}

TEST_CASE("cli: a model only pipelining refuses runs with --mode sharded and both modes are refused together", "[cli]") {
  // The MLP's loss moved back to IPU0 (0 -> 1 -> 0), or its output Relu on IPU1 also reading the host input x0.
  const std::string training = source("scenarios/mlp-training.json");
  const std::vector<std::pair<std::string, std::string>> cases{
      {"model.ops.4.virtualGraph=0", "annotation.consumed-before-produced"},
      {"model.ops.3.inputs=[\"x3\",\"x0\"]", "annotation.input-on-several-ipus"}};
  for (const auto& [set, rule] : cases) {
    INFO(set);
    const Result both = run_ipusim({"run", training, "--set", set});
    CHECK(both.exit_code == 2);
    CHECK(both.out.empty());
    CHECK_THAT(both.err, Contains(rule) && Contains("only when pipelining") && Contains("--mode sharded"));
    const Result pipelined = run_ipusim({"run", training, "--set", set, "--mode", "pipelined"});
    CHECK(pipelined.exit_code == 2);
    CHECK_THAT(pipelined.err, Contains(rule));
    const Result sharded = run_ipusim({"run", training, "--set", set, "--mode", "sharded", "--json"});
    CHECK(sharded.exit_code == 0);
    const Json doc = Json::parse(sharded.out);
    REQUIRE(doc.at("runs").size() == 1);
    CHECK(doc.at("runs").at(0).at("mode") == "sharded");
    CHECK(doc.at("plan").at("pipelining_refused").at("rule") == rule);
  }
  // A model pipelining accepts carries no such entry.
  CHECK_FALSE(Json::parse(run_ipusim({"run", training, "--mode", "sharded", "--json"}).out).at("plan").contains(
      "pipelining_refused"));
}

TEST_CASE("cli: validate accepts a model, a config and a scenario, and rejects a broken model", "[cli]") {
  const Result model = run_ipusim({"validate", source("models/mlp.json")});
  CHECK(model.exit_code == 0);
  CHECK_THAT(model.out, Contains("valid model") && Contains("5 ops"));
  const Result config = run_ipusim({"validate", source("configs/ipu-m2000.json")});
  CHECK(config.exit_code == 0);
  CHECK_THAT(config.out, Contains("valid config") && Contains("4 IPU(s)"));
  const Result scenario = run_ipusim({"validate", kInference});
  CHECK(scenario.exit_code == 0);
  CHECK_THAT(scenario.out, Contains("valid scenario") && Contains("2 stage(s)"));

  TempDir dir;
  std::string text = read_file(source("models/mlp.json"));
  const std::string from = "\"outputs\": [\"x2\"]";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), "\"outputs\": [\"x1\"]");  // Relu writes the Gemm's x1 again
  const std::string broken = dir.write("broken-model.json", text);
  const Result bad = run_ipusim({"validate", broken});
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.empty());
  CHECK_THAT(bad.err, Contains(broken) && Contains("/ops/1/outputs/0") && Contains("tensor.multiple-producers") &&
                          Contains("dense1/Gemm") && Contains("dense1/Relu"));

  // The loss back on IPU0: valid for sharded runs, and validate says what pipelining refuses.
  std::string wrapped = read_file(source("models/mlp.json"));
  const std::string loss = "\"outputs\": [\"loss\"], \"virtualGraph\": 1";
  REQUIRE(wrapped.find(loss) != std::string::npos);
  wrapped.replace(wrapped.find(loss), loss.size(), "\"outputs\": [\"loss\"], \"virtualGraph\": 0");
  const Result sharded_only = run_ipusim({"validate", dir.write("wrapped-model.json", wrapped)});
  CHECK(sharded_only.exit_code == 0);
  CHECK_THAT(sharded_only.out, Contains("valid model") && Contains("sharded runs only") && Contains("/ops/4/inputs/0") &&
                                   Contains("[annotation.consumed-before-produced]"));
}

TEST_CASE("cli: -o writes the file, refuses to overwrite without --force", "[cli]") {
  TempDir dir;
  const std::string out = dir.path("report.json");
  const Result first = run_ipusim({"run", kInference, "--json", "-o", out});
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.empty());
  const std::string written = read_file(out);
  CHECK(Json::parse(written).at("runs").size() == 2);

  const Result second = run_ipusim({"run", kInference, "--json", "--mode", "sharded", "-o", out});
  CHECK(second.exit_code == 2);
  CHECK_THAT(second.err, Contains(out) && Contains("--force"));
  CHECK(read_file(out) == written);

  const Result forced = run_ipusim({"run", kInference, "--json", "--mode", "sharded", "-o", out, "--force"});
  CHECK(forced.exit_code == 0);
  CHECK(Json::parse(read_file(out)).at("runs").size() == 1);
  CHECK(dir.entries() == 1);  // no temporary file left behind
}

TEST_CASE("cli: --help, unknown flags and missing files", "[cli]") {
  const Result help = run_ipusim({"--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("run") && Contains("validate") && Contains("list"));
  const Result run_help = run_ipusim({"run", "--help"});
  CHECK(run_help.exit_code == 0);
  CHECK_THAT(run_help.out, Contains("--set") && Contains("--force"));

  const Result flag = run_ipusim({"run", kInference, "--frobnicate"});
  CHECK(flag.exit_code == 2);
  CHECK_THAT(flag.err, Contains("--frobnicate"));

  const Result mode = run_ipusim({"run", kInference, "--mode", "phased"});
  CHECK(mode.exit_code == 2);

  const std::string missing = source("scenarios/no-such-scenario.json");
  const Result none = run_ipusim({"run", missing});
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Contains("no-such-scenario.json"));

  const Result nothing = run_ipusim({});
  CHECK(nothing.exit_code == 2);
}
