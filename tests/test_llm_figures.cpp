// The language-model figures of every run (sim/output/model_figures.cpp): parameters, tokens
// per second, model FLOPs utilisation against the system's fp16 peak, a cost per million
// tokens from the config's price; and the warning when training names no optimizer.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "sim/base/units.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

} // namespace

TEST_CASE("llm figures: GPT-2 medium on a Bow Pod16: tokens/s, MFU and cost per million tokens in closed form",
          "[llm-figures][cli]") {
  const ipusim::test::Result r =
      ipusim::test::run_ipusim({"run", kSource + "/scenarios/gpt2-medium-bow-pod16.json", "--mode", "pipelined",
                                "--set", "config.pricePerIpuHour=1.5", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  // GPT-2 medium's 354,823,168 parameters (Radford et al. 2019, as Hugging Face counts them).
  CHECK(doc["modelFigures"]["parameters"] == 354823168.0);
  CHECK(doc["modelFigures"]["tokensPerSample"] == 1024);
  const double forward = doc["modelFigures"]["forwardFlopsPerSample"].get<double>();
  CHECK(doc["modelFigures"]["modelFlopsPerSample"].get<double>() == 3 * forward);  // training: forward + backward
  const auto& run = doc["runs"][0];
  const double samples = run["throughputSamplesPerSecond"].get<double>();
  const auto& llm = run["llm"];
  // 8 virtual IPUs x 2 replicas; each Bow IPU 1472 tiles x 128 FLOP/cycle x 1.85 GHz.
  CHECK(llm["ipus"] == 16);
  CHECK(llm["tokensPerSecond"].get<double>() == samples * 1024);
  CHECK(std::abs(llm["modelFlopsUtilization"].get<double>() / (3 * forward * samples / (16 * 1472.0 * 128 * 1.85e9)) - 1) <
        1e-12);
  CHECK(std::abs(llm["costPerMillionTokens"].get<double>() / (16 * 1.5 / 3600 / (samples * 1024) * 1e6) - 1) < 1e-12);
  // A forward FLOP per sample is at least two per weight per token (each weight multiplies
  // and adds once per token), which the head and attention add to.
  CHECK(forward > 2 * 354823168.0 * 1024);
}

TEST_CASE("llm figures: a model without attention has no token figures; training names its optimizer or is warned",
          "[llm-figures][cli]") {
  const ipusim::test::Result mlp =
      ipusim::test::run_ipusim({"run", kSource + "/scenarios/mlp-training.json", "--json"});
  REQUIRE(mlp.exit_code == 0);
  const auto doc = nlohmann::json::parse(mlp.out);
  CHECK(doc["modelFigures"]["tokensPerSample"].is_null());
  CHECK(doc["runs"][0]["llm"]["tokensPerSecond"].is_null());
  CHECK(doc["runs"][0]["llm"]["costPerMillionTokens"].is_null());
  // mlp-training.json names no optimizer: SGD, said; naming one silences it.
  CHECK_THAT(mlp.err, Catch::Matchers::Contains("training with no optimizer named: SGD is assumed"));
  const ipusim::test::Result named = ipusim::test::run_ipusim(
      {"run", kSource + "/scenarios/mlp-training.json", "--set", "execution.optimizer.type=sgd", "--json"});
  REQUIRE(named.exit_code == 0);
  CHECK_THAT(named.err, !Catch::Matchers::Contains("no optimizer named"));
}

TEST_CASE("llm figures in compare and report: tokens/s, MFU and cost rows from the run documents", "[llm-figures][cli]") {
  const ipusim::test::TempDir dir;
  const std::string scenario = kSource + "/scenarios/gpt2-medium-bow-pod16.json";
  for (const char* g : {"32", "64"}) {
    const ipusim::test::Result r = ipusim::test::run_ipusim(
        {"run", scenario, "--mode", "pipelined", "--set", "config.pricePerIpuHour=1.5", "--set",
         std::string("execution.gradientAccumulation=") + g, "--json", "-o", dir.path(std::string("g") + g + ".json")});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const auto doc = [&](const char* name) {
    std::ifstream in(dir.path(name));
    return nlohmann::json::parse(in);
  };
  const auto a = doc("g32.json")["runs"][0]["llm"], b = doc("g64.json")["runs"][0]["llm"];
  const ipusim::test::Result compared = ipusim::test::run_ipusim({"compare", dir.path("g32.json"), dir.path("g64.json")});
  REQUIRE(compared.exit_code == 0);
  using Catch::Matchers::Contains;
  const std::string tokens = ipusim::test::line_starting(compared.out, "throughput (tokens)");
  CHECK_THAT(tokens, Contains(ipusim::format_rate(a["tokensPerSecond"].get<double>(), "tokens/s")) &&
                         Contains(ipusim::format_rate(b["tokensPerSecond"].get<double>(), "tokens/s")) &&
                         Contains(ipusim::format_fixed(b["tokensPerSecond"].get<double>() /
                                                           a["tokensPerSecond"].get<double>(), 2) + "x"));
  CHECK_THAT(ipusim::test::line_starting(compared.out, "model FLOPs utilisation"),
             Contains(ipusim::format_percent(a["modelFlopsUtilization"].get<double>())));
  CHECK_THAT(ipusim::test::line_starting(compared.out, "cost per 1M tokens"),
             Contains(ipusim::format_fixed(a["costPerMillionTokens"].get<double>(), 2)));

  const ipusim::test::Result report =
      ipusim::test::run_ipusim({"report", dir.path("g32.json"), "-o", dir.path("report")});
  REQUIRE(report.exit_code == 0);
  std::ifstream in(dir.path("report") + "/report.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(md, Contains("Model: 354.8 M parameters") && Contains("1024 tokens per sample"));
  CHECK_THAT(md, Contains("throughput (tokens) | " + ipusim::format_rate(a["tokensPerSecond"].get<double>(), "tokens/s")));
  CHECK_THAT(md, Contains("model FLOPs utilisation | " + ipusim::format_percent(a["modelFlopsUtilization"].get<double>())));
}
