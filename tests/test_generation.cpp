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
#include "sim/base/units.hpp"
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

TEST_CASE("generation: refused with rule ids: training, no attention, quantised phased, an unknown cache", "[generation]") {
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
  // Phased generation streams float16 weights: quantised ones are refused there.
  const std::string phased_tiny = llama(dir, "phased", "--hidden 256 --heads 4 --ffn 688 --vocab 1000 --layers 2 "
                                                       "--phased 1 --seq 96");
  nlohmann::json quantised = g;
  quantised["weightFormat"] = "int8";
  const auto phased = refused(phased_tiny, {{"mode", "phased"}, {"executionPhaseSettings", {{"stages", 1}}}}, quantised);
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

TEST_CASE("generation: quantised weights: bytes by hand, their decompression added to every step, groups that do not "
          "tile refused", "[generation]") {
  const test::TempDir dir;
  const std::string model = llama(dir, "tiny", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 "
                                               "--layers-per-ipu 1,1 --seq 96");
  const nlohmann::json base = {{"promptTokens", 64}, {"newTokens", 9}};
  auto with = [&](const nlohmann::json& extra) {
    nlohmann::json g = base;
    g.update(extra);
    return generate(dir, model, g);
  };
  const auto f16 = with(nlohmann::json::object()), int8 = with({{"weightFormat", "int8"}});
  const auto int4 = with({{"weightFormat", "int4"}, {"groupSize", 16}});
  CHECK(int8["weightFormat"] == "int8");
  CHECK(int4["groupSize"] == 16);
  // The linear layers' weights (the embedding, a Gather's, stays float16). IPU 0, layer 0:
  // q_proj 256x256, k_proj and v_proj 256x128, o_proj 256x256, gate_proj and up_proj 256x688,
  // down_proj 688x256: 724,992 weights and 2,400 output columns; IPU 1 adds the head 256x1000:
  // 980,992 weights, 3,400 columns. int8 holds a byte a weight and a float16 scale a column,
  // int4 half a byte a weight and a float16 scale and bias per 16 along the contracted side.
  const double held0 = f16["runs"][0]["ipus"][0]["weightBytes"].get<double>();
  const double held1 = f16["runs"][0]["ipus"][1]["weightBytes"].get<double>();
  CHECK(held0 - int8["runs"][0]["ipus"][0]["weightBytes"].get<double>() == 2 * 724992.0 - (724992.0 + 2 * 2400));
  CHECK(held1 - int8["runs"][0]["ipus"][1]["weightBytes"].get<double>() == 2 * 980992.0 - (980992.0 + 2 * 3400));
  CHECK(held0 - int4["runs"][0]["ipus"][0]["weightBytes"].get<double>() == 2 * 724992.0 - (724992.0 / 2 + 4 * 724992.0 / 16));
  // Sharded, the IPUs decompress in turn: the prefill and every decode step grow by the sum.
  for (const auto* q : {&int8, &int4}) {
    const auto& run = (*q)["runs"][0];
    const double each = run["ipus"][0]["dequantiseSeconds"].get<double>() + run["ipus"][1]["dequantiseSeconds"].get<double>();
    CHECK(each > 0);
    CHECK(std::abs(run["dequantiseSeconds"].get<double>() - each) < 1e-15);
    CHECK(std::abs(run["timeToFirstTokenSeconds"].get<double>() -
                   (f16["runs"][0]["timeToFirstTokenSeconds"].get<double>() + each)) < 1e-12);
    CHECK(std::abs(run["meanTokenLatencySeconds"].get<double>() -
                   (f16["runs"][0]["meanTokenLatencySeconds"].get<double>() + each)) < 1e-12);
    CHECK(std::abs(run["decodeFloorSeconds"].get<double>() - (f16["runs"][0]["decodeFloorSeconds"].get<double>() + each)) <
          1e-15);
  }
  // int4 makes four passes over each weight, int8 two.
  CHECK(int4["runs"][0]["dequantiseSeconds"].get<double>() > int8["runs"][0]["dequantiseSeconds"].get<double>());
  CHECK(f16["runs"][0]["dequantiseSeconds"] == 0);
  // Four vector passes over every weight (each a compute set and its sync) outweigh the AMP's
  // 16 B a cycle of reads: the floor is the decompression.
  CHECK(int4["runs"][0]["dequantiseBound"] == true);
  CHECK(f16["runs"][0]["dequantiseBound"] == false);

  auto refused = [&](const nlohmann::json& extra, const std::string& command) {
    nlohmann::json g = base;
    g.update(extra);
    const std::string s = dir.write("bad.json", nlohmann::json{{"model", model}, {"config", kPod16},
                                                               {"execution", {{"mode", "sharded"}}}, {"generation", g}});
    return test::run_ipusim({command, s});
  };
  for (const char* command : {"run", "validate"}) {
    const auto group = refused({{"weightFormat", "int4"}, {"groupSize", 64}}, command);  // 688 = 16 x 43
    CHECK(group.exit_code == 2);
    CHECK_THAT(group.err, Catch::Matchers::Contains("[generation.group-size]") && Catch::Matchers::Contains("688"));
  }
  const auto odd = refused({{"weightFormat", "int4"}, {"groupSize", 6}}, "run");
  CHECK(odd.exit_code == 2);
  CHECK_THAT(odd.err, Catch::Matchers::Contains("[scenario.bad-group-size]"));
  const auto lone = refused({{"weightFormat", "int8"}, {"groupSize", 16}}, "run");
  CHECK(lone.exit_code == 2);
  CHECK_THAT(lone.err, Catch::Matchers::Contains("[scenario.bad-group-size]"));
  const auto format = refused({{"weightFormat", "int3"}}, "run");
  CHECK(format.exit_code == 2);
  CHECK_THAT(format.err, Catch::Matchers::Contains("[scenario.bad-weight-format]") && Catch::Matchers::Contains("int4"));
}

TEST_CASE("generation: phased, every token streams the weights in from Streaming Memory", "[generation]") {
  const test::TempDir dir;
  const std::string model = llama(dir, "phased", "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 "
                                                 "--layers 2 --phased 1 --seq 96");
  const std::string scenario = dir.write(
      "serve.json", nlohmann::json{{"model", model},
                                   {"config", kPod16},
                                   {"execution", {{"mode", "phased"}, {"executionPhaseSettings", {{"stages", 1}}}}},
                                   {"generation", {{"promptTokens", 64}, {"newTokens", 9}, {"tokensPerRun", 8}}}});
  const test::Result r = test::run_ipusim({"run", scenario, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto run = nlohmann::json::parse(r.out)["generation"]["runs"][0];
  CHECK(run["mode"] == "phased");
  // Every phase on IPU 0 (stages 1): its weights, all of them, streamed in every step at the
  // Bow-2000's Streaming Memory bandwidth, 38.4 GB/s (configs/ipu-m2000.json).
  REQUIRE(run["ipus"].size() == 1);
  const double weights = run["ipus"][0]["weightBytes"].get<double>();
  CHECK(std::abs(run["ipus"][0]["weightReadSeconds"].get<double>() / (weights / 38.4e9) - 1) < 1e-12);
  CHECK(run["weightBound"] == true);
  CHECK(std::abs(run["decodeFloorSeconds"].get<double>() / (weights / 38.4e9) - 1) < 1e-12);
  // The simulated step streams them too, and adds the host's turn shared by 8 tokens and the ops.
  CHECK(run["firstTokenLatencySeconds"].get<double>() > weights / 38.4e9 + 0.048 / 8);
}

TEST_CASE("generation: ipusim report reads a generation document: its figures as the JSON has them", "[generation][report]") {
  const test::TempDir dir;
  const std::string doc = dir.path("serve.json");
  const test::Result run =
      test::run_ipusim({"run", kSource + "/scenarios/llama-2-7b-serve-pod16.json", "--json", "-o", doc});
  REQUIRE(run.exit_code == 0);
  const test::Result report = test::run_ipusim({"report", doc, "-o", dir.path("report")});
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  std::ifstream in(dir.path("report") + "/report.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream json(doc);
  const auto g = nlohmann::json::parse(json)["generation"];
  const auto& sharded = g["runs"][0];
  using Catch::Matchers::Contains;
  CHECK_THAT(md, Contains("(generation)") && Contains("## Generation 1: llama-2-7b-serve-pod16"));
  CHECK_THAT(md, Contains("| time to first token | " + format_seconds(sharded["timeToFirstTokenSeconds"].get<double>())));
  CHECK_THAT(md, Contains("| end to end tokens/s (system) | " +
                          format_rate(sharded["tokensPerSecond"].get<double>(), "tokens/s")));
  CHECK_THAT(md, Contains("| decode step bound by | weights (floor " +
                          format_seconds(sharded["decodeFloorSeconds"].get<double>()) + ")"));
  // A generation run without its figures is refused, naming the run.
  auto broken = nlohmann::json::parse(std::ifstream(doc));
  broken["generation"]["runs"][0].erase("tokensPerSecond");
  const std::string bad = dir.write("bad.json", broken.dump());
  const test::Result refused = test::run_ipusim({"report", bad, "-o", dir.path("bad-report")});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("[report.bad-run]") && Contains("/generation/runs/0"));
}

TEST_CASE("docs/generation.md shows what the shipped Llama 2 7B generation prints today", "[generation][docs]") {
  std::ifstream in(kSource + "/docs/generation.md");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string serve = kSource + "/scenarios/llama-2-7b-serve-pod16.json";
  std::vector<std::vector<std::string>> runs{
      {"run", serve},
      {"run", serve, "--set", "generation.tokensPerRun=128"},
      {"run", serve, "--set", "generation.kvCache=none"},
      {"run", serve, "--set", "generation.tokensPerRun=128", "--set", "generation.weightFormat=int4", "--set",
       "generation.groupSize=16", "--set", "execution.tensorParallel=8", "--set", "execution.replicas=2"},
      {"run", kSource + "/models/llama-2-7b.json", "--config", kPod16, "--set", "generation.promptTokens=512", "--set",
       "generation.newTokens=128", "--mode", "pipelined"}};
  // Phased: GPT-J 6B generated as the page says.
  const test::TempDir dir;
  const std::string gptj = dir.root() / "gpt-j-6b.json";
  REQUIRE(std::system(("/usr/bin/python3 '" + kSource + "/scripts/make_gpt_model.py' --preset gpt-j-6b --phased 1 "
                       "--seq 2048 -o '" + gptj + "'").c_str()) == 0);
  runs.push_back({"run", gptj, "--config", kPod16, "--mode", "phased", "--set", "execution.tensorParallel=16", "--set",
                  "execution.executionPhaseSettings.stages=1", "--set", "execution.numIOTiles=128", "--set",
                  "generation.promptTokens=512", "--set", "generation.newTokens=128", "--set",
                  "generation.tokensPerRun=128"});
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
