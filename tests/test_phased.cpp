// The phased mode (docs/phased.md) against closed forms computed by hand in the comments, with
// every overhead zeroed: links, the host link and Streaming Memory at 1 GB/s (1 us per 1000 B),
// no latencies, 1 GFLOP/s per IPU. Its memory per phase against a hand count, and its rules.
#include <catch2/catch.hpp>

#include "sim/base/units.hpp"
#include "sim/memory/memory.hpp"
#include "sim/simulate/simulation.hpp"
#include "cli_runner.hpp"
#include "run_metrics.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

Json phased_config(int ipus, int tiles = 1) {
  Json config = zero_overhead_config(ipus);
  config["ipu"]["tiles"] = tiles;
  config["streamingMemory"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}, {"sharedBy", 1}};
  return config;
}

// Four ops in phases 0..3 on the given virtual graphs; each a MatMul of 1 ms reading its own
// weight of 1000 floats (4000 B: 4 us from Streaming Memory) and passing 250 floats on (1 us).
Json four_phases(const std::vector<int>& ipus) {
  std::vector<ChainOp> ops;
  for (int ipu : ipus) ops.push_back({ipu, 1e6, -1, 1000});
  Json model = chain_model(ops, 250);
  for (std::size_t i = 0; i < model["ops"].size(); ++i) model["ops"][i]["executionPhase"] = i;
  return model;
}

Json inference(std::int64_t batches, int stages) {
  return {{"training", false}, {"batchesPerStep", batches}, {"hostIo", false}, {"costModel", "compute"},
          {"executionPhaseSettings", {{"stages", stages}}}};
}

// two_layer_model in two phases on IPU0 and IPU1: l0 1 ms forward and 2 ms backward reading W0
// (4000 B), l1 the loss stage, 3 + 6 ms, reading W1 (2000 B); x and a1 are 1000 B per sample.
Json two_phases() {
  Json model = two_layer_model(1e6, 3e6);
  model["ops"][0]["executionPhase"] = 0;
  model["ops"][1]["executionPhase"] = 1;
  return model;
}

Simulation run_phased(const Json& model, const Json& config, const Json& execution) {
  return simulate(make_scenario(model, config, execution), {Mode::Phased});
}

double category(const MemoryReport& memory, int ipu, const std::string& name) {
  for (const IpuMemory& m : memory.ipus)
    if (m.id == ipu)
      for (const MemoryCategory& c : m.categories)
        if (c.name == name) return c.bytes;
  FAIL("no such IPU or category");
  return 0;
}

} // namespace

TEST_CASE("ping-pong phases preload the next phase's weights on the other IPU", "[phased][closed-form]") {
  const Simulation sim = run_phased(four_phases({0, 1, 0, 1}), phased_config(2), inference(4, 2));
  REQUIRE(sim.plan.phased);
  REQUIRE(sim.plan.stage_count() == 4);
  // Per micro-batch: phase 0's weights on demand (4 us), then four phases of 1 ms, each next
  // phase's 4 us load hidden on the other IPU, and three copies of 1 us.
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * (4 * us + 4 * ms + 3 * us)).epsilon(1e-9));
}

TEST_CASE("OnDemand weights load after the phase boundary, not beside the phase before", "[phased][closed-form]") {
  Json execution = inference(4, 2);
  execution["executionPhaseSettings"]["weightIOSchedule"] = "OnDemand";
  const Simulation sim = run_phased(four_phases({0, 1, 0, 1}), phased_config(2), execution);
  // Each of the four phases waits for its own 4 us load.
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * (4 * 4 * us + 4 * ms + 3 * us)).epsilon(1e-9));
}

TEST_CASE("single-stage phases on one IPU load in series without I/O tiles", "[phased][closed-form]") {
  const Simulation sim = run_phased(four_phases({0, 0, 0, 0}), phased_config(1), inference(4, 1));
  REQUIRE(sim.plan.stage_count() == 4);
  CHECK(sim.plan.copies.empty());
  // 4 us first, then each phase's 1 ms followed by the next phase's 4 us load.
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * (4 * us + 4 * ms + 3 * 4 * us)).epsilon(1e-9));
}

TEST_CASE("I/O tiles hide the next phase's load behind this phase's compute", "[phased][closed-form]") {
  Json execution = inference(4, 1);
  execution["numIOTiles"] = 1;
  const Simulation sim = run_phased(four_phases({0, 0, 0, 0}), phased_config(1, 2), execution);
  const double t = sim.plan.stages[0].forward_seconds;  // on the tiles the I/O tiles leave
  REQUIRE(t > 4 * us);
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * (4 * us + 4 * t)).epsilon(1e-9));
}

TEST_CASE("training phases: activations and accumulators through Streaming Memory, updates per phase",
          "[phased][closed-form]") {
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}};
  const Simulation sim = run_phased(two_phases(), phased_config(2), execution);
  REQUIRE(sim.plan.stage_count() == 3);  // forward 0 (IPU0), loss 1 (IPU1), backward 2 (IPU0)
  // Per micro-batch, IPU0: W0 on demand 4 us, forward 1 ms, x stored for the backward 1 us; copy 1 us.
  // IPU1 meanwhile preloads W1 and its accumulator (4 us). Phase 1: 3 + 6 ms, accumulator stored
  // 2 us, while IPU0 preloads W0, its accumulator and x (9 us); gradient copy 1 us. Phase 2:
  // backward 2 ms, accumulator stored 4 us.
  const double micro_batch = 4 * us + 1 * ms + 1 * us + 1 * us + 9 * ms + 2 * us + 1 * us + 2 * ms + 4 * us;
  // Updates, the IPUs in parallel: IPU0 loads W0 and its accumulator (8 us), updates (2 FLOPs per
  // weight: 2 us), stores W0 (4 us); IPU1 takes 4 + 1 + 2 us.
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * micro_batch + 14 * us).epsilon(1e-9));
}

TEST_CASE("serialised micro-batches: a phase runs all of them, its weights loaded once a step", "[phased][closed-form]") {
  Json execution = inference(4, 2);
  execution["executionPhaseSettings"]["serialiseMicroBatches"] = true;
  const Simulation sim = run_phased(four_phases({0, 1, 0, 1}), phased_config(2), execution);
  // W0 first (4 us); each next phase's weights load beside on the other IPU. Per micro-batch a
  // phase loads its input (1000 B, 1 us; not phase 0), computes 1 ms and stores its output
  // (1 us; not phase 3): 4 x (1.001 + 1.002 + 1.002 + 1.001 ms).
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * us + 4 * (4 * ms + 6 * us)).epsilon(1e-9));
}

TEST_CASE("serialised training: per micro-batch activations through Streaming Memory, each update after its loop",
          "[phased][closed-form]") {
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"},
                          {"executionPhaseSettings", {{"serialiseMicroBatches", true}}}};
  const Simulation sim = run_phased(two_phases(), phased_config(2), execution);
  // W0 first (4 us; W1's 2 us load runs beside on IPU1). Phase 0, 4 x: 1 ms, then a1 and x
  // stored (2 us). Phase 1 (W0 reloaded beside on IPU0), 4 x: a1 loaded (1 us), 3 + 6 ms, its
  // gradient stored (1 us); then W1's update: 1 us, W1 stored 2 us (SGD keeps no state). Phase 2,
  // 4 x: the gradient and x loaded (2 us), 2 ms; then W0's update: 2 us, W0 stored 4 us.
  const double loops = 4 * (1.002 * ms) + 4 * (9.002 * ms) + 4 * (2.002 * ms);
  CHECK(run_of(sim, Mode::Phased).step_time_s == Approx(4 * us + loops + 3 * us + 6 * us).epsilon(1e-9));
}

TEST_CASE("phased memory holds one phase's tensors, and the next phase's when preloaded on the same IPU",
          "[phased][memory]") {
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}};
  const Simulation sim = run_phased(two_phases(), phased_config(2), execution);
  const MemoryReport& memory = run_of(sim, Mode::Phased).memory;
  CHECK(category(memory, 0, "weights") == 4000);                // W0
  CHECK(category(memory, 0, "gradient accumulators") == 4000);  // W0's, in its backward phase
  CHECK(category(memory, 0, "stash") == 1000);                  // x, loaded for the backward
  CHECK(category(memory, 1, "weights") == 2000);
  CHECK(category(memory, 1, "gradient accumulators") == 2000);
  CHECK(category(memory, 1, "stash") == 0);

  // One IPU, Preload: a phase's weights and the next's (8000 B); OnDemand: one phase's.
  const Simulation preload = run_phased(four_phases({0, 0, 0, 0}), phased_config(1), inference(1, 1));
  CHECK(category(run_of(preload, Mode::Phased).memory, 0, "weights") == 8000);
  Json on_demand = inference(1, 1);
  on_demand["executionPhaseSettings"]["weightIOSchedule"] = "OnDemand";
  const Simulation loaded = run_phased(four_phases({0, 0, 0, 0}), phased_config(1), on_demand);
  CHECK(category(run_of(loaded, Mode::Phased).memory, 0, "weights") == 4000);
}

TEST_CASE("batch serialisation keeps one slice's activations", "[phased][memory]") {
  Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"},
                    {"microBatchSize", 2}};
  const Simulation whole = run_phased(two_phases(), phased_config(2), execution);
  execution["batchSerializationSettings"] = {{"factor", 2}};
  const Simulation sliced = run_phased(two_phases(), phased_config(2), execution);
  CHECK(category(run_of(whole, Mode::Phased).memory, 0, "stash") == 2000);  // x for 2 samples
  CHECK(category(run_of(sliced, Mode::Phased).memory, 0, "stash") == 1000);
  CHECK(category(run_of(sliced, Mode::Phased).memory, 0, "activations") ==
        Approx(category(run_of(whole, Mode::Phased).memory, 0, "activations") / 2));
  // The slices compute what the whole micro-batch does, and move the same bytes.
  CHECK(run_of(sliced, Mode::Phased).step_time_s == Approx(run_of(whole, Mode::Phased).step_time_s).epsilon(1e-12));
}

TEST_CASE("phased runs refuse what PopART refuses, located", "[phased][rules]") {
  // Stages 2: phase 1 must run on an odd virtual graph.
  InputError placed = error_of([] { run_phased(four_phases({0, 0, 0, 0}), phased_config(2), inference(4, 2)); });
  CHECK(placed.rule() == "annotation.phase-placement");
  CHECK(placed.pointer() == "/ops/1/executionPhase");
  // No phases at all.
  CHECK(rule_of([] { run_phased(chain_model({{0, 1e6}, {0, 1e6}}, 250), phased_config(1), inference(4, 1)); }) ==
        "phased.needs-phases");
  // Phased with another mode in one run.
  CHECK(rule_of([] {
          simulate(make_scenario(four_phases({0, 1, 0, 1}), phased_config(2), inference(4, 2)),
                   {Mode::Sharded, Mode::Phased});
        }) == "scenario.phased-alone");
  // Batch serialisation outside the phased mode, and one that does not divide the micro-batch.
  Json sliced = inference(4, 2);
  sliced["batchSerializationSettings"] = {{"factor", 2}};
  CHECK(rule_of([&] { make_scenario(four_phases({0, 1, 0, 1}), phased_config(2), sliced); }) ==
        "scenario.bad-batch-serialization");
  sliced["microBatchSize"] = 2;
  CHECK(rule_of([&] {
          simulate(make_scenario(four_phases({0, 1, 0, 1}), phased_config(2), sliced), {Mode::Sharded});
        }) == "scenario.bad-batch-serialization");
  Json stages = inference(4, 3);
  CHECK(rule_of([&] { make_scenario(four_phases({0, 1, 0, 1}), phased_config(2), stages); }) ==
        "scenario.bad-phase-settings");
}

TEST_CASE("sharded and pipelined runs of a phased model keep virtualGraph and say so", "[phased]") {
  const Scenario sc = make_scenario(four_phases({0, 1, 0, 1}), phased_config(2), inference(4, 2));
  const Simulation sim = simulate(sc, {Mode::Sharded});
  CHECK_FALSE(sim.plan.phased);
  const auto warning = unused_phases_warning(sc.model, build_graph(sc.model));
  REQUIRE(warning);
  CHECK(warning->find("4 phases") != std::string::npos);
  CHECK(warning->find("--mode phased") != std::string::npos);
  // Settings the run's mode does not read are named, not ignored.
  const auto settings = unused_settings_warning(sc, false);
  REQUIRE(settings);
  CHECK(settings->find("execution.executionPhaseSettings belongs to the phased mode") != std::string::npos);
  CHECK_FALSE(unused_settings_warning(sc, true));
}

TEST_CASE("plan of a phased scenario: every phased setting the system allows, ranked by the engine's figures",
          "[phased][cli]") {
  const test::TempDir dir;
  const Json execution = {{"mode", "phased"}, {"training", true}, {"gradientAccumulation", 4}, {"replicas", 1},
                          {"hostIo", false}, {"costModel", "compute"}, {"executionPhaseSettings", {{"stages", 2}}}};
  const std::string scenario = dir.write("phased.json", Json{{"name", "two phases"}, {"model", two_phases()},
                                                             {"config", phased_config(2)}, {"execution", execution}});
  const test::Result plan = test::run_ipusim({"plan", scenario, "--top", "8"});
  REQUIRE(plan.exit_code == 0);
  // Stages 1 (2 replicas, G 2, with and without replicated tensor sharding, or tensor parallel 2
  // and 1 replica, G 4) and 2 (1 replica, G 4); no I/O tiles on a 1-tile IPU; two orders;
  // recomputation off and on: 16 candidates, all fit.
  CHECK_THAT(plan.out, Contains("16 simulated, 16 fit (global batch 4, micro-batch 1)"));
  // The best is stages 1 on both IPUs (no idle ping-pong partner); its throughput is the run's.
  const std::string best = plan.out.substr(plan.out.find("best: ") + 6);
  CHECK_THAT(best, Contains("stages=1") && Contains("replicas=2") && Contains("gradientAccumulation=2"));
  const Json one_ipu = [&] {
    Json e = execution;
    e["executionPhaseSettings"]["stages"] = 1;
    e["replicas"] = 2;
    e["gradientAccumulation"] = 2;
    e["executionPhaseSettings"]["serialiseMicroBatches"] = best.find("serialiseMicroBatches=true") != std::string::npos;
    e["recomputation"] = best.find("recomputation=pipeline") != std::string::npos ? "pipeline" : "none";
    e["optimizer"] = {{"replicatedTensorSharding", best.find("replicatedTensorSharding=true") != std::string::npos}};
    return e;
  }();
  Json model = two_phases();
  for (auto& op : model["ops"]) op["virtualGraph"] = 0;
  const Simulation sim = run_phased(model, phased_config(2), one_ipu);
  const std::string rank1 = plan.out.substr(plan.out.find("  1  "));
  CHECK_THAT(rank1.substr(0, rank1.find('\n')), Contains(format_rate(run_of(sim, Mode::Phased).throughput_samples_per_s, "samples/s")));
  // The pipelined search's dimensions are refused, not ignored.
  const test::Result ipus = test::run_ipusim({"plan", scenario, "--ipus", "2"});
  CHECK(ipus.exit_code == 2);
  CHECK_THAT(ipus.err, Contains("[cli.bad-value]") && Contains("--ipus belongs to the pipelined plan"));
}

TEST_CASE("replicated tensor sharding of phased weights: a shard loaded, the phase's weights gathered, gradients "
          "reduce-scattered", "[phased][closed-form]") {
  // Two replicas of one IPU, both phases on it (stages 1), PopXL's order, G 4, Adam with its state
  // in Streaming Memory. Per step and replica, over the IPU-Link to the other replica: without
  // sharding, each update's all-reduce sends half its weights twice (reduce-scatter, all-gather):
  // W1 (2000 B) after the loss phase and W0 (4000 B) after the last, 2 x (1000 + 2000) = 6000 B.
  // With it, each phase first gathers its weights (half sent: W0, W1, W0 = 2000 + 1000 + 2000) and
  // the updates only reduce-scatter (1000 + 2000): 8000 B.
  Json model = two_phases();
  for (auto& op : model["ops"]) op["virtualGraph"] = 0;
  Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"},
                    {"replicas", 2},
                    {"optimizer", {{"type", "adam"}, {"stateLocation", "streaming-memory"}}},
                    {"executionPhaseSettings", {{"stages", 1}, {"serialiseMicroBatches", true}}}};
  auto link_bytes = [](const RunMetrics& run, const std::string& name) {
    for (const auto& l : run.links)
      if (l.name == name) return l.bytes;
    return 0.0;
  };
  const RunMetrics whole = run_of(run_phased(model, phased_config(2), execution), Mode::Phased);
  execution["optimizer"]["replicatedTensorSharding"] = true;
  const RunMetrics sharded = run_of(run_phased(model, phased_config(2), execution), Mode::Phased);
  CHECK(link_bytes(whole, "ipu0->ipu1") == Approx(6000).epsilon(1e-12));
  CHECK(link_bytes(sharded, "ipu0->ipu1") == Approx(8000).epsilon(1e-12));
  // Streaming Memory: each weight load (W0 twice, W1 once a step) and store (W0, W1) halves, and so
  // does the Adam state (8 B a weight float: 2 x 4 B), in and out: (4000 + 2000 + 4000) / 2 +
  // (4000 + 2000) / 2 weights, 2 x (1000 + 500) x 8 / 2 state: 8000 + 12000 B less.
  CHECK(link_bytes(whole, "streaming-memory(ipu0)") - link_bytes(sharded, "streaming-memory(ipu0)") ==
        Approx(8000 + 12000).epsilon(1e-12));
}
