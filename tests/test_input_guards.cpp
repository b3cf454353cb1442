// Inputs that crashed or ran without bound before issue 23, each through the binary: `plan`
// makes the checks `run` makes before it searches, and refuses a search too large for the
// machine (plan.too-large) at once.
#include <catch2/catch.hpp>

#include <chrono>

#include "cli_runner.hpp"
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
  CHECK_THAT(replicas.err, Contains("at /execution/replicas") && Contains("need 8 IPUs") &&
                               Contains("[scenario.not-enough-ipus]"));
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
  CHECK_THAT(wide.err, Contains("8-IPU pipeline need 8 IPUs") && Contains("[scenario.not-enough-ipus]"));
}

TEST_CASE("plan.too-large: a search beyond the machine's memory or 10 minutes is refused before it starts",
          "[plan][cli]") {
  const std::string resnet = kSource + "/scenarios/resnet50-training.json";
  const auto start = std::chrono::steady_clock::now();
  // 48 layers over 8 IPUs of a POD16: C(47, 7) = 62,891,499 splits x 2 head placements x 2
  // (recomputation) = 251,565,996 candidates, 240 GiB at 1 KiB each (was 14.3 GB and exit 3).
  const auto wide = ipusim::test::run_ipusim(
      {"plan", resnet, "--set", "config=../configs/ipu-pod16.json", "--ipus", "8"});
  CHECK(wide.exit_code == 2);
  CHECK_THAT(wide.err, Contains("251565996 candidates") && Contains("239.9 GiB") && Contains("[plan.too-large]"));
  // G = 2^20: 64,860 candidates each timing 2^20 micro-batches (2.7 GB, growing with G, before).
  const auto deep = ipusim::test::run_ipusim({"plan", resnet, "--gradient-accumulation", "1048576"});
  CHECK(deep.exit_code == 2);
  CHECK_THAT(deep.err, Contains("64860 candidates") && Contains("longer than the 600.0 s") &&
                           Contains("[plan.too-large]"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
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
  const auto bad = ipusim::test::run_ipusim({"run", scenario, "--set", "modelDtype=half"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("at modelDtype") && Contains("[scenario.bad-model-dtype]"));
}
