// Inputs that crashed, ran without bound or left files behind before issue 23, each through
// the binary: `plan` makes the checks `run` makes; outputs: --write prefixes, -o -, bounded error lines, temporary
// files and report folders of killed writers.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.hpp"
#include "temp_dir.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"

using Catch::Matchers::Contains;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

} // namespace

TEST_CASE("plan: replicas beyond the system and a bad placement are refused as run refuses them", "[plan][cli]") {
  const std::string scenario = kSource + "/scenarios/mlp-training.json";
  // Both were heap overflows in the evaluator (routes for IPUs 4-7 of a 4-IPU M2000).
  const auto replicas = ipusim::test::run_ipusim({"plan", scenario, "--set", "execution.replicas=4"});
  CHECK(replicas.exit_code == 2);
  CHECK_THAT(replicas.err, Contains("4 replica(s) of a pipeline of 2 IPUs or more do not fit") &&
                               Contains("(4 IPUs)") && Contains("[plan.replicas]"));
  const auto placement = ipusim::test::run_ipusim({"plan", scenario, "--set", "execution.placement=[4,1]"});
  CHECK(placement.exit_code == 2);
  CHECK_THAT(placement.err, Contains("at /execution/placement/0") && Contains("IPU 4 does not exist") &&
                                Contains("[scenario.bad-placement]"));
  // What run says of the same flags.
  const auto run = ipusim::test::run_ipusim({"run", scenario, "--set", "execution.replicas=4"});
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Contains("[scenario.not-enough-ipus]"));
  // A plan wider than the system: 8 IPUs asked of a 4-IPU M2000.
  const auto wide = ipusim::test::run_ipusim({"plan", kSource + "/scenarios/resnet50-training.json", "--ipus", "8"});
  CHECK(wide.exit_code == 2);
  CHECK_THAT(wide.err, Contains("a pipeline takes 2 to 4 IPUs") && Contains("asked for 8") && Contains("[plan.ipus]"));
}

TEST_CASE("modelDtype: the precision a model runs in, whatever its file stores", "[loaders][cli]") {
  const std::string scenario = kSource + "/scenarios/mlp-training.json";
  const ipusim::Scenario fp32 = ipusim::load_scenario(scenario);
  const ipusim::Scenario fp16 = ipusim::load_scenario(scenario, {ipusim::parse_override("modelDtype=float16")});
  int floats = 0;
  for (const auto& [name, t] : fp16.model.tensors) {
    INFO(name);
    if (!ipusim::is_float_dtype(fp32.model.tensor(name).dtype)) continue;
    ++floats;
    CHECK(t.dtype == ipusim::DType::Float16);
    const ipusim::Tensor& stored = fp32.model.tensor(name);
    CHECK(t.bytes() == stored.bytes() / ipusim::dtype_bytes(stored.dtype) * 2);
  }
  CHECK(floats > 0);
  // The run document records it when the scenario gives it, and only then.
  CHECK_FALSE(fp32.model_dtype.has_value());
  REQUIRE(fp16.model_dtype.has_value());
  const auto run = ipusim::test::run_ipusim({"run", scenario, "--set", "modelDtype=float16", "--json"});
  REQUIRE(run.exit_code == 0);
  CHECK(nlohmann::json::parse(run.out).at("modelDtype") == "float16");
  CHECK_FALSE(nlohmann::json::parse(ipusim::test::run_ipusim({"run", scenario, "--json"}).out).contains("modelDtype"));
  const auto bad = ipusim::test::run_ipusim({"run", scenario, "--set", "modelDtype=half"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("at modelDtype") && Contains("[scenario.bad-model-dtype]"));
}

namespace {

// A PID that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

std::string lines_longer_than(const std::string& text, std::size_t limit) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.size() > limit) return line.substr(0, 200);
  return "";
}

} // namespace

TEST_CASE("outputs: plan --write refuses -, devices and bare folders; convert and annotate write -o - to standard output",
          "[cli]") {
  const ipusim::test::TempDir dir;
  const std::string scenario = kSource + "/scenarios/mlp-training.json";
  const auto device = ipusim::test::run_ipusim({"plan", scenario, "--write", "/dev/null"});
  CHECK(device.exit_code == 2);
  CHECK_THAT(device.err, Contains("at --write") && Contains("/dev/null is a device") && Contains("[cli.bad-value]"));
  CHECK(!std::filesystem::exists("/dev/null.model.json"));
  const auto folder = ipusim::test::run_ipusim({"plan", scenario, "--write", dir.root().string() + "/"});
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.err, Contains("names a folder") && Contains("[cli.bad-value]"));
  CHECK(dir.entries() == 0);  // no hidden .model.json inside it
  // "-" is standard output for the commands that write one file; plan writes two (it wrote
  // files named -.model.json and -.scenario.json, exit 0).
  const auto dash = ipusim::test::run_ipusim({"plan", scenario, "--write", "-"}, dir.root().string());
  CHECK(dash.exit_code == 2);
  CHECK_THAT(dash.err, Contains("--write - would be standard output") && Contains("[cli.bad-value]"));
  CHECK(dir.entries() == 0);

  const std::string model = kSource + "/models/mlp.json";
  const auto converted = ipusim::test::run_ipusim({"convert", "-o", "-", kSource + "/tests/no-such.onnx"});
  CHECK(converted.exit_code == 2);  // the input is checked before anything is written
  if (std::system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") != 0) return;
  REQUIRE(std::system(("/usr/bin/python3 '" + kSource + "/tests/make_onnx_fixtures.py' '" + dir.root().string() + "'")
                          .c_str()) == 0);
  const auto json = ipusim::test::run_ipusim({"convert", dir / "mlp.onnx", "-o", "-"});
  REQUIRE(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out)["ops"].size() == 4);
  CHECK_THAT(json.err, Contains("4 ops"));
  const auto onnx = ipusim::test::run_ipusim({"annotate", dir / "layered.onnx", "--layers-per-ipu", "2,2", "-o", "-"});
  REQUIRE(onnx.exit_code == 0);
  const std::string annotated = dir.write("annotated.onnx", onnx.out);
  const auto valid = ipusim::test::run_ipusim({"validate", annotated});
  CHECK(valid.exit_code == 0);
  CHECK_THAT(valid.out, Contains("2 stage(s)"));
}

TEST_CASE("outputs: an error line echoes at most a few hundred bytes of a 1 MB key", "[cli][hardening]") {
  const ipusim::test::TempDir dir;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kSource + "/scenarios/mlp-training.json"));
  doc["model"] = kSource + "/models/mlp.json";
  doc["config"] = kSource + "/configs/ipu-m2000.json";
  doc[std::string(1 << 20, 'k')] = 1;
  const auto r = ipusim::test::run_ipusim({"run", dir.write("s.json", doc)});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("[json.unknown-key]") && Contains("more bytes)"));
  CHECK(r.err.size() < 2500);  // was 2 MB: the key in the pointer and in the message
  CHECK(lines_longer_than(r.err, 2500).empty());
}

TEST_CASE("outputs: temporary files and report folders of killed writers are removed by the next write",
          "[cli][hardening]") {
  const ipusim::test::TempDir dir;
  const std::string scenario = kSource + "/scenarios/mlp-inference.json";
  const std::string stale = dir.write(".out.json.tmp-" + std::to_string(dead_pid()) + "-0", "half a run");
  const std::string live = dir.write(".out.json.tmp-" + std::to_string(::getpid()) + "-0", "being written");
  const std::string other = dir.write(".other.json.tmp-" + std::to_string(dead_pid()) + "-0", "not this name's");
  REQUIRE(ipusim::test::run_ipusim({"run", scenario, "--json", "-o", dir / "out.json"}).exit_code == 0);
  CHECK(!std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live));   // its writer still runs
  CHECK(std::filesystem::exists(other));  // another file's: removed when that file is written

  // A report killed while writing (file size limit: SIGXFSZ) leaves only its temporary
  // folder, which does not block the rerun and is removed by it.
  const std::string run = dir / "out.json";
  const std::string report = dir / "report";
  const std::string killed = "ulimit -f 4; exec '" + std::string(IPUSIM_BINARY) + "' report '" + run + "' -o '" +
                             report + "' >/dev/null 2>&1";
  CHECK(std::system(("/bin/sh -c \"" + killed + "\" 2>/dev/null").c_str()) != 0);
  CHECK(!std::filesystem::exists(report));
  std::size_t temps = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.root()))
    if (e.path().filename().string().rfind(".report.tmp-", 0) == 0) ++temps;
  CHECK(temps == 1);
  const auto rerun = ipusim::test::run_ipusim({"report", run, "-o", report});
  CHECK(rerun.exit_code == 0);
  CHECK(std::filesystem::exists(report + "/report.html"));
  for (const auto& e : std::filesystem::directory_iterator(dir.root()))
    CHECK(e.path().filename().string().rfind(".report.tmp-", 0) != 0);
}

TEST_CASE("run documents record what reruns them, and compare names every difference", "[cli][report]") {
  const ipusim::test::TempDir dir;
  const std::string scenario = kSource + "/scenarios/mlp-training.json";
  const auto a = ipusim::test::run_ipusim({"run", scenario, "--json", "-o", dir / "a.json"});
  const auto b = ipusim::test::run_ipusim({"run", scenario, "--json", "-o", dir / "b.json", "--set",
                                           "execution.replicas=2", "--set", "execution.availableMemoryProportion=0.5",
                                           "--set", "model.ops.2.virtualGraph=0"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const auto doc = nlohmann::json::parse(std::ifstream(dir / "a.json"));
  const auto& ex = doc.at("execution");
  CHECK(ex.at("availableMemoryProportion") == nlohmann::json::array({0.6}));
  CHECK(ex.at("optimizerStateLocation") == "on-chip");
  CHECK(ex.at("optimizerStateDtype") == "float32");
  CHECK(ex.at("modes") == nlohmann::json::array({"sharded", "pipelined"}));
  CHECK(doc.at("modelFile") == kSource + "/models/mlp.json");
  CHECK(doc.at("modelHash").get<std::string>().rfind("fnv1a64:", 0) == 0);
  CHECK(doc.at("configFile") == kSource + "/configs/ipu-m2000.json");
  CHECK(doc.at("overrides") == nlohmann::json::array());
  CHECK(doc.at("commandLine").at(1) == "run");
  CHECK(doc.at("ipusimVersion") == IPUSIM_TEST_VERSION);
  // "B differs from A in: replicas" hid the split and the memory proportion before.
  const auto c = ipusim::test::run_ipusim({"compare", dir / "a.json", dir / "b.json"});
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Contains("replicas 1 -> 2") && Contains("availableMemoryProportion [0.6] -> [0.5]") &&
                        Contains("split (ops per virtual IPU) [2,3] -> [3,2]") &&
                        Contains("\"model.ops.2.virtualGraph=0\""));
  // The report names the second run by its flags, so the two are told apart.
  const auto r = ipusim::test::run_ipusim({"report", dir / "a.json", dir / "b.json", "-o", dir / "report"});
  REQUIRE(r.exit_code == 0);
  std::ostringstream md;
  md << std::ifstream(dir / "report/report.md").rdbuf();
  CHECK_THAT(md.str(), Contains("mlp-training \\[execution.replicas=2, execution.availableMemoryProportion=0.5") &&
                           Contains(doc.at("modelHash").get<std::string>()));
}

TEST_CASE("run --from RUN.json reruns a run document and gives the same document", "[cli]") {
  const ipusim::test::TempDir dir;
  for (const std::string name : {"mlp-training", "mlp-inference", "bert-tiny-training", "bert-tiny-inference"}) {
    INFO(name);
    const std::string first = dir / (name + ".json"), again = dir / (name + "-again.json");
    REQUIRE(ipusim::test::run_ipusim({"run", kSource + "/scenarios/" + name + ".json", "--json", "-o", first, "--set",
                                      "execution.batchesPerStep=8", "--mode", "pipelined"})
                .exit_code == 0);
    REQUIRE(ipusim::test::run_ipusim({"run", "--from", first, "--json", "-o", again}).exit_code == 0);
    auto a = nlohmann::json::parse(std::ifstream(first)), b = nlohmann::json::parse(std::ifstream(again));
    CHECK(b.at("commandLine").at(2) == "--from");
    a.erase("commandLine");
    b.erase("commandLine");
    CHECK(a.dump() == b.dump());  // bit for bit, the --set flags and the one mode included
  }
  // A model edited since is refused, not rerun as something else.
  const std::string model = dir.write("m.json", nlohmann::json::parse(std::ifstream(kSource + "/models/mlp.json")));
  const std::string run = dir / "run.json";
  REQUIRE(ipusim::test::run_ipusim({"run", model, "--config", kSource + "/configs/ipu-m2000.json", "--json", "-o", run})
              .exit_code == 0);
  CHECK(ipusim::test::run_ipusim({"run", "--from", run, "--json"}).exit_code == 0);  // a run without a scenario file
  auto edited = nlohmann::json::parse(std::ifstream(model));
  edited["ops"][0]["flops"] = 1e9;
  dir.write("m.json", edited);
  const auto changed = ipusim::test::run_ipusim({"run", "--from", run});
  CHECK(changed.exit_code == 2);
  CHECK_THAT(changed.err, Contains("at /modelHash") && Contains("[run.from-changed]"));
  const auto incomplete = ipusim::test::run_ipusim({"run", "--from", dir.write("old.json", "{\"runs\": []}")});
  CHECK(incomplete.exit_code == 2);
  CHECK_THAT(incomplete.err, Contains("[run.from-incomplete]"));
  CHECK(ipusim::test::run_ipusim({"run", "--from", run, "--set", "execution.replicas=2"}).exit_code == 2);
}

TEST_CASE("compare: a plan stage whose pass is not a string is read as no pass (run campaign: exit 3)", "[cli]") {
  const ipusim::test::TempDir dir;
  const std::string a = dir / "a.json";
  REQUIRE(ipusim::test::run_ipusim({"run", kSource + "/scenarios/mlp-training.json", "--json", "-o", a}).exit_code == 0);
  auto doc = nlohmann::json::parse(std::ifstream(a));
  for (const nlohmann::json& pass : {nlohmann::json::object(), nlohmann::json(), nlohmann::json::array()}) {
    doc["plan"]["stages"][0]["pass"] = pass;
    const auto r = ipusim::test::run_ipusim({"compare", a, dir.write("b.json", doc)});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, !Contains("internal fault"));
  }
}
