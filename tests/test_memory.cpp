// The memory model against hand-computed bytes: categories, per-tile spreading, stash
// depth x slot, optimizer state on and off chip, and the out-of-memory verdict.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include "sim/graph/model_graph.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

Json two_layers() { return two_layer_model(1e6, 1e6); }

const MemoryCategory& category(const IpuMemory& m, const std::string& name) {
  for (const auto& c : m.categories)
    if (c.name == name) return c;
  FAIL("no category " << name);
  throw;
}

MemoryReport memory_of(const Json& config, const Json& execution) {
  const Scenario sc = make_scenario(two_layers(), config, execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  const Schedule s = make_schedule(Mode::Pipelined, sc, plan);
  return estimate_memory(sc, plan, s.stash_depth, s.recompute);
}

} // namespace

TEST_CASE("memory categories on one-tile IPUs: weights, accumulators, Adam state, stash, activations", "[memory]") {
  // One tile per IPU: every byte is on the fullest tile.
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"microBatchSize", 2}, {"hostIo", true},
                          {"costModel", "compute"}, {"optimizer", {{"type", "adam"}}}};
  const MemoryReport r = memory_of(zero_overhead_config(2), execution);
  REQUIRE(r.ipus.size() == 2);
  const IpuMemory& ipu0 = r.ipus[0];
  CHECK(category(ipu0, "weights").bytes == 4000);
  CHECK(category(ipu0, "gradient accumulators").bytes == 4000);
  CHECK(category(ipu0, "optimizer state").bytes == 2 * 4000);  // Adam: m and v in float32
  // Stage 0 stashes x (the MatMul's backward reads its input): 1000 B x 2 samples, 3 deep (2(P-1-0)+1, P = 2).
  CHECK(category(ipu0, "stash").bytes == 3 * 2000);
  // Activations: the backward stage holds the forward's live tensors twice (x and a1: 4000 B) plus W0's gradient.
  CHECK(category(ipu0, "activations").bytes == 2 * 4000 + 4000);
  // Host buffers: x in (2000 B) on IPU0; a2 out (2000 B) on IPU1.
  CHECK(category(ipu0, "host stream buffers").bytes == 2000);
  CHECK(ipu0.fullest_tile_bytes == ipu0.total_bytes);
  CHECK(ipu0.total_bytes == 4000 + 4000 + 8000 + 6000 + 12000 + 2000);
  // The loss stage stashes nothing.
  CHECK(category(r.ipus[1], "stash").bytes == 0);
  CHECK(r.fits);
}

TEST_CASE("tensors spread over tiles by a grain of minElementsPerTile elements", "[memory]") {
  // 1000 tiles, grain 10 floats = 40 B: W0 (4000 B) covers 100 tiles, 40 B on tile 0.
  Json config = zero_overhead_config(2);
  config["ipu"]["tiles"] = 1000;
  config["ipu"]["minElementsPerTile"] = 10;
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}};
  const MemoryReport r = memory_of(config, execution);
  CHECK(category(r.ipus[0], "weights").tile_bytes == 40);
  CHECK(category(r.ipus[0], "weights").bytes == 4000);
  CHECK(category(r.ipus[0], "optimizer state").bytes == 0);  // SGD keeps none
}

TEST_CASE("optimizer state in Streaming Memory leaves SRAM and is streamed in and out around the update", "[memory]") {
  Json config = zero_overhead_config(2);
  config["streamingMemory"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}};
  Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"},
                    {"optimizer", {{"type", "adam"}, {"stateLocation", "streaming-memory"}}}};
  const MemoryReport r = memory_of(config, execution);
  CHECK(category(r.ipus[0], "optimizer state").bytes == 0);
  const Scenario sc = make_scenario(two_layers(), config, execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  // Adam: 12 FLOPs per weight (12 us for 1000 weights); its 2 x 1000 float state (8000 B) is
  // loaded before and stored after, over the Streaming Memory (test_weight_update.cpp times it).
  CHECK(plan.ipus[0].update_seconds == Approx(12e-6).epsilon(1e-12));
  CHECK(plan.ipus[0].state_bytes == 8000);
  // Without streaming memory in the system it is an error.
  CHECK(rule_of([&] { make_plan(make_scenario(two_layers(), zero_overhead_config(2), execution),
                                build_graph(sc.model)); }) == "scenario.no-streaming-memory");
}

TEST_CASE("a run that does not fit gets a verdict naming the IPU, its fullest tile and its largest consumers",
          "[memory]") {
  Json config = zero_overhead_config(2);
  config["ipu"]["sramBytesPerTile"] = 20000;  // IPU0 needs 36000 B with Adam
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"microBatchSize", 2}, {"hostIo", true},
                          {"costModel", "compute"}, {"optimizer", {{"type", "adam"}}}};
  const MemoryReport r = memory_of(config, execution);
  CHECK_FALSE(r.fits);
  CHECK_FALSE(r.ipus[0].fits);
  CHECK(r.ipus[1].fits);
  const std::string verdict = out_of_memory_verdict(r.ipus[0]);
  CHECK_THAT(verdict, Catch::Contains("IPU 0 is out of memory") && Catch::Contains("35.16 KiB of 19.53 KiB") &&
                          Catch::Contains("activations 11.72 KiB"));
}

TEST_CASE("the shipped BERT-Large without recomputation is out of memory, and --fail-on-oom says so", "[memory][cli]") {
  const std::string command = std::string(IPUSIM_BINARY) + " run " + IPUSIM_SOURCE_DIR +
                              "/scenarios/bert-large-no-recomputation.json --set execution.gradientAccumulation=16"
                              " --fail-on-oom > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 5);
  const std::string fits = std::string(IPUSIM_BINARY) + " run " + IPUSIM_SOURCE_DIR +
                           "/scenarios/bert-large-training.json --mode pipelined --set execution.gradientAccumulation=16"
                           " --fail-on-oom > /dev/null 2>&1";
  const int ok = std::system(fits.c_str());
  REQUIRE(WIFEXITED(ok));
  CHECK(WEXITSTATUS(ok) == 0);
}

TEST_CASE("with recomputation a stage also stashes the tensors it sends to another IPU that its backward reads",
          "[memory]") {
  // IPU0: h = MatMul(x, W0), r = Relu(h), s = LAST(r); IPU1: MatMul(s, W1). 250 floats per
  // sample (1000 B), micro-batch 1. PopART checkpoints the op whose output is copied to IPU1:
  // a Sigmoid's backward reads its output s, so s is stashed rather than recomputed; a Relu's
  // reads its input r, which the backward stage recomputes.
  const auto model = [](const std::string& last) {
    const Json act = {{"shape", {250}}, {"kind", "activation"}};
    return Json{{"tensors",
                 {{"x", {{"shape", {250}}, {"kind", "input"}}},
                  {"W0", {{"shape", {1000}}, {"kind", "weight"}}},
                  {"W1", {{"shape", {1000}}, {"kind", "weight"}}},
                  {"h", act}, {"r", act}, {"s", act}, {"out", act}}},
                {"ops",
                 {{{"name", "mm0"}, {"type", "MatMul"}, {"inputs", {"x", "W0"}}, {"outputs", {"h"}}, {"virtualGraph", 0},
                   {"flops", 1e6}},
                  {{"name", "relu"}, {"type", "Relu"}, {"inputs", {"h"}}, {"outputs", {"r"}}, {"virtualGraph", 0}},
                  {{"name", "last"}, {"type", last}, {"inputs", {"r"}}, {"outputs", {"s"}}, {"virtualGraph", 0}},
                  {{"name", "mm1"}, {"type", "MatMul"}, {"inputs", {"s", "W1"}}, {"outputs", {"out"}},
                   {"virtualGraph", 1}, {"flops", 1e6}}}}};
  };
  const auto stash_of = [](const Json& m, const std::string& recomputation) {
    const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false},
                            {"costModel", "compute"}, {"recomputation", recomputation}};
    const Scenario sc = make_scenario(m, zero_overhead_config(2), execution);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    const Schedule s = make_schedule(Mode::Pipelined, sc, plan);
    const MemoryReport r = estimate_memory(sc, plan, s.stash_depth, s.recompute);
    REQUIRE(r.stashes.size() == 1);
    CHECK(r.stashes[0].stage == 0);
    CHECK(r.stashes[0].depth == 3);
    CHECK(category(r.ipus[0], "stash").bytes == 3 * r.stashes[0].slot_bytes);
    return std::pair{plan.stages[0].recompute_stash_tensors, r.stashes[0].slot_bytes};
  };
  SECTION("a Sigmoid sends s to IPU1: x and s are stashed") {
    const auto [tensors, slot] = stash_of(model("Sigmoid"), "pipeline");
    CHECK(tensors == std::vector<std::string>{"s", "x"});
    CHECK(slot == 2000);
    // Without recomputation every tensor the backward reads: x (MatMul), h (Relu), s (Sigmoid's output).
    CHECK(stash_of(model("Sigmoid"), "none").second == 3000);
  }
  SECTION("a Relu sends s to IPU1: its backward reads r, recomputed; only x is stashed") {
    const auto [tensors, slot] = stash_of(model("Relu"), "pipeline");
    CHECK(tensors == std::vector<std::string>{"x"});
    CHECK(slot == 1000);
    CHECK(stash_of(model("Relu"), "none").second == 3000);  // x, h, r
  }
  SECTION("a user checkpoint (checkpointOutput's Identity, RecomputeType 1) is stashed with the stage's input") {
    // mm0 -> relu -> Identity "checkpoint" -> last (Relu) -> IPU1: the checkpoint's output c is
    // read again on IPU0 (by last), so it joins x in the stash; without recomputation
    // the backward's reads are stashed as before (x, h, c).
    Json m = model("Relu");
    m["tensors"]["c"] = {{"shape", {250}}, {"kind", "activation"}};
    m["ops"].insert(m["ops"].begin() + 2, Json{{"name", "checkpoint"}, {"type", "Identity"}, {"inputs", {"r"}},
                                               {"outputs", {"c"}}, {"virtualGraph", 0},
                                               {"attributes", {{"__recompute_output_in_backward_pass", 1}}}});
    m["ops"][3]["inputs"] = {"c"};
    const auto [tensors, slot] = stash_of(m, "pipeline");
    CHECK(tensors == std::vector<std::string>{"c", "x"});
    CHECK(slot == 2000);
    CHECK(stash_of(m, "none").second == 3000);
    // An Identity marked Recompute (2) is recomputed like any other op.
    m["ops"][2]["attributes"]["__recompute_output_in_backward_pass"] = 2;
    CHECK(stash_of(m, "pipeline").first == std::vector<std::string>{"x"});
  }
}

TEST_CASE("GPipe's stash of G slots is G times one slot, on the IPU and on its fullest tile, at any G", "[memory]") {
  // GPipe stashes every micro-batch of the batch (stash depth G) before the first backward.
  // A slot is x for two samples, 2000 B, spread over 3 tiles (grain 1 float): 2000/3 B on the
  // fullest tile, a fraction, so the tile's share is the product G x 2000/3, not a sum of G terms.
  Json config = zero_overhead_config(2);
  config["ipu"]["tiles"] = 3;
  config["ipu"]["minElementsPerTile"] = 1;
  const std::int64_t G = 100'000'000;  // the most G may be; a sum slot by slot took seconds, the product does not
  const Json execution = {{"training", true}, {"gradientAccumulation", G}, {"microBatchSize", 2}, {"hostIo", false},
                          {"costModel", "compute"}, {"schedule", "gpipe"}};
  const MemoryReport r = memory_of(config, execution);
  const MemoryCategory& stash = category(r.ipus[0], "stash");
  CHECK(stash.bytes == static_cast<double>(G) * 2000);
  CHECK(stash.tile_bytes == static_cast<double>(G) * (2000.0 / 3));
  CHECK_FALSE(r.fits);
}
