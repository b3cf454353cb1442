// Autoregressive inference (a scenario's "generation", sim/generation, docs/generation.md):
// the decode step's floor in closed form (weights over SRAM bandwidth against FLOPs at peak),
// the KV cache's size, the first token as a run of the model at the prompt's length, the host's
// turn shared by the tokens of one device loop, the cache read back from Streaming Memory, and
// the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "sim/io/decode_step.hpp"
#include "sim/io/model_loader.hpp"
#include "temp_dir.hpp"

using namespace ipusim;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;
const std::string kPod16 = kSource + "/configs/bow-pod16.json";
// Llama 2 7B on 16 IPUs, 2 layers each (models/llama-2-7b.json's placement).
const std::string kSixteen = "--preset llama-2-7b --layers-per-ipu 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2";

// make_llama_model.py ARGUMENTS into `dir`/NAME.
std::string llama(const test::TempDir& dir, const std::string& name, const std::string& arguments) {
  const std::string out = dir.root() / (name + ".json");
  const std::string command =
      "/usr/bin/python3 '" + kSource + "/scripts/make_llama_model.py' " + arguments + " -o '" + out + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  return out;
}

// A generation scenario of `model` on the Bow Pod16, run with --json and `sets`.
nlohmann::json generate(const test::TempDir& dir, const std::string& model, const nlohmann::json& generation,
                        const std::vector<std::string>& sets = {}) {
  const std::string scenario = dir.write(
      "serve.json", nlohmann::json{{"model", model}, {"config", kPod16}, {"execution", {{"mode", "sharded"}}},
                                   {"generation", generation}});
  std::vector<std::string> args{"run", scenario, "--json"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const test::Result r = test::run_ipusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["generation"];
}

double step_time(const std::string& model) {
  const test::Result r = test::run_ipusim({"run", model, "--config", kPod16, "--mode", "sharded", "--set",
                                           "execution.batchesPerStep=1", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["runs"][0]["stepTimeSeconds"].get<double>();
}

} // namespace

TEST_CASE("generation: Llama 2 7B's decode step is bound by its weights' reads at batch 1, by compute at batch 16",
          "[generation]") {
  const test::TempDir dir;
  const std::string model = llama(dir, "llama-7b", kSixteen + " --seq 2048");
  const nlohmann::json one = generate(dir, model, {{"promptTokens", 512}, {"newTokens", 128}});
  const nlohmann::json& run = one["runs"][0];
  // 6,738,415,616 fp16 weights read once, over 1472 tiles x 16 B per cycle (the AMP's weight
  // load, ld128) x 1.85 GHz on each Bow IPU, one IPU after another.
  const double weights = 6738415616.0 * 2, bandwidth = 1472.0 * 16 * 1.85e9;
  CHECK(run["weightBound"] == true);
  CHECK(std::abs(run["decodeFloorSeconds"].get<double>() / (weights / bandwidth) - 1) < 1e-9);
  double ipu_weights = 0;
  for (const auto& ipu : run["ipus"]) ipu_weights += ipu["weightBytes"].get<double>();
  CHECK(ipu_weights == weights);
  // The simulated step pays far more than its floor: every op's exchange and sync, the
  // copies between IPUs, the host's turn (48 ms a run on this system).
  CHECK(run["meanTokenLatencySeconds"].get<double>() > 0.048 + weights / bandwidth);
  // The cache: K and V of 32 layers x 4096 fp16 per token, 512 KiB; at the last token (context
  // 512 + 127) in SRAM, for one sequence.
  CHECK(one["kvCacheBytesPerToken"] == 2.0 * 32 * 4096 * 2);
  double cache = 0;
  for (const auto& ipu : run["ipus"]) cache += ipu["kvCacheBytes"].get<double>();
  CHECK(cache == 524288.0 * 639);
  // 16 sequences at once: 16 x the FLOPs against the same weight reads: compute-bound.
  const nlohmann::json sixteen =
      generate(dir, model, {{"promptTokens", 512}, {"newTokens", 128}}, {"execution.microBatchSize=16"});
  CHECK(sixteen["runs"][0]["weightBound"] == false);
  CHECK(sixteen["runs"][0]["decodeTokensPerSecond"].get<double>() > run["decodeTokensPerSecond"].get<double>());
}

TEST_CASE("generation: the first token is the model's run at the prompt's length; without a cache a token is the run "
          "at its context",
          "[generation]") {
  const test::TempDir dir;
  const std::string model = llama(dir, "tiny", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 "
                                               "--layers-per-ipu 1,1 --seq 96");
  const nlohmann::json g =
      generate(dir, model, {{"promptTokens", 64}, {"newTokens", 9}, {"kvCache", "none"}})["runs"][0];
  // The same generator at --seq 64 and --seq 65 (the first decode step's context), run alone.
  CHECK(g["timeToFirstTokenSeconds"].get<double>() ==
        step_time(llama(dir, "at64", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 --layers-per-ipu 1,1 "
                                     "--seq 64")));
  CHECK(g["firstTokenLatencySeconds"].get<double>() ==
        step_time(llama(dir, "at65", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 --layers-per-ipu 1,1 "
                                     "--seq 65")));
  // 8 decode steps at their mean (the first and last's: the step is affine in its context).
  CHECK(g["meanTokenLatencySeconds"].get<double>() ==
        (g["firstTokenLatencySeconds"].get<double>() + g["lastTokenLatencySeconds"].get<double>()) / 2);
  CHECK(g["totalSeconds"].get<double>() ==
        g["timeToFirstTokenSeconds"].get<double>() + 8 * g["meanTokenLatencySeconds"].get<double>());
}

TEST_CASE("generation: a device loop shares the host's turn; a cache in Streaming Memory is read back every token",
          "[generation]") {
  const test::TempDir dir;
  const std::string model = llama(dir, "tiny", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 "
                                               "--layers-per-ipu 1,1 --seq 96");
  const nlohmann::json base = {{"promptTokens", 64}, {"newTokens", 9}};
  const auto sram = generate(dir, model, base)["runs"][0];
  nlohmann::json looped = base;
  looped["tokensPerRun"] = 8;
  const auto loop = generate(dir, model, looped)["runs"][0];
  // The Bow Pod16's host turn, 48 ms a run, paid once per 8 tokens.
  CHECK(std::abs(loop["firstTokenLatencySeconds"].get<double>() -
                 (sram["firstTokenLatencySeconds"].get<double>() - 0.048 + 0.048 / 8)) < 1e-12);
  nlohmann::json streamed = base;
  streamed["kvCache"] = "streaming-memory";
  const auto stream = generate(dir, model, streamed)["runs"][0];
  // One layer per IPU, each reading its K and V (2 KV heads x 64 wide, fp16: 512 B a token)
  // back at the context's length, one IPU after the other: latency plus bytes over bandwidth.
  // The IPU-M2000's Streaming Memory (configs/ipu-m2000.json), which the Bow-2000 keeps.
  const double bandwidth = 38.4e9, latency = 1e-6;
  auto read = [&](double context) { return 2 * (latency + 512.0 * context / bandwidth); };
  CHECK(std::abs(stream["kvCacheReadSeconds"].get<double>() - (read(65) + read(72)) / 2) < 1e-15);
  CHECK(std::abs(stream["firstTokenLatencySeconds"].get<double>() -
                 (sram["firstTokenLatencySeconds"].get<double>() + read(65))) < 1e-12);
  // No cache in SRAM then.
  for (const auto& ipu : stream["ipus"]) CHECK(ipu["kvCacheBytes"] == 0);
}

TEST_CASE("generation: the decode step's shapes: one query over the cached context", "[generation]") {
  const test::TempDir dir;
  const Model m = load_model(llama(dir, "tiny", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 "
                                                "--layers-per-ipu 1,1 --seq 96"));
  const SequenceLayout layout = find_sequence_layout(m, "tiny.json");
  CHECK(layout.sequence == 96);
  // Per token per layer: K and V of 2 heads x 64.
  CHECK(layout.cache_elements_per_token_by_ipu.at(0) == 256);
  CHECK(layout.cache_elements_per_token_by_ipu.at(1) == 256);
  const Model d = decode_step_model(m, layout, 200);
  for (const auto& [name, t] : d.tensors) {
    if (t.kind == TensorKind::Weight) continue;
    INFO(name);
    CHECK(std::count(t.shape.begin(), t.shape.end(), 96) == 0);
  }
  CHECK(d.tensor("input_ids").shape == std::vector<std::int64_t>{1});
}

TEST_CASE("generation: refused with rule ids: training, no attention, phased, an unknown cache", "[generation]") {
  const test::TempDir dir;
  const std::string tiny = llama(dir, "tiny", "--hidden 256 --heads 4 --ffn 688 --vocab 1000 --layers-per-ipu 1,1 --seq 96");
  auto refused = [&](const std::string& model, const nlohmann::json& execution, const nlohmann::json& generation) {
    const std::string s = dir.write("bad.json", nlohmann::json{{"model", model}, {"config", kPod16},
                                                               {"execution", execution}, {"generation", generation}});
    return test::run_ipusim({"run", s});
  };
  const nlohmann::json g{{"promptTokens", 8}, {"newTokens", 4}};
  const auto training = refused(tiny, {{"training", true}}, g);
  CHECK(training.exit_code == 2);
  CHECK_THAT(training.err, Catch::Matchers::Contains("[scenario.generation-training]"));
  const auto mlp = refused(kSource + "/models/mlp.json", nlohmann::json::object(), g);
  CHECK(mlp.exit_code == 2);
  CHECK_THAT(mlp.err, Catch::Matchers::Contains("[generation.no-attention]"));
  const auto phased = refused(tiny, {{"mode", "phased"}}, g);
  CHECK(phased.exit_code == 2);
  CHECK_THAT(phased.err, Catch::Matchers::Contains("[scenario.generation-mode]"));
  // --seq 256 with --hidden 256: the sequence cannot be told from the width.
  const std::string square = llama(dir, "square", "--hidden 256 --heads 4 --ffn 688 --vocab 1000 --layers-per-ipu 1,1 --seq 256");
  const auto ambiguous = refused(square, nlohmann::json::object(), g);
  CHECK(ambiguous.exit_code == 2);
  CHECK_THAT(ambiguous.err, Catch::Matchers::Contains("[generation.ambiguous-sequence]"));
  const auto cache = refused(tiny, nlohmann::json::object(), {{"promptTokens", 8}, {"newTokens", 4}, {"kvCache", "sarm"}});
  CHECK(cache.exit_code == 2);
  CHECK_THAT(cache.err, Catch::Matchers::Contains("[scenario.bad-kv-cache]") && Catch::Matchers::Contains("sram"));
}

TEST_CASE("docs/generation.md shows what the shipped Llama 2 7B generation prints today", "[generation][docs]") {
  std::ifstream in(kSource + "/docs/generation.md");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string serve = kSource + "/scenarios/llama-2-7b-serve-pod16.json";
  const std::vector<std::vector<std::string>> runs{
      {"run", serve},
      {"run", serve, "--set", "generation.tokensPerRun=128"},
      {"run", serve, "--set", "generation.kvCache=none"},
      {"run", kSource + "/models/llama-2-7b.json", "--config", kPod16, "--set", "generation.promptTokens=512", "--set",
       "generation.newTokens=128", "--mode", "pipelined"}};
  for (const auto& args : runs) {
    const test::Result r = test::run_ipusim(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    // Line by line, so a failure names the figure that moved.
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      INFO(line);
      CHECK(page.find(line) != std::string::npos);
    }
  }
}
