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
