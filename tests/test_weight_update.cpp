// The weight update after the flush: PopART's accumulate outer fragment schedules
// (Serial, OverlapCycleOptimized, OverlapMemoryOptimized with excluded virtual graphs),
// optimizer state streamed from a shared Streaming Memory, and replicated tensor
// sharding (reduce-scatter, 1/R of the update, all-gather). Hand-computed times.
#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double us = 1e-6;

// IPU0 holds W0 (1000 floats), IPU1 holds W1 (500 floats, or 1000 with `same_shapes`).
// Adam: 12 FLOPs per weight at 1 FLOP/ns, so updates of 12 us and 6 us; its two float
// state tensors are 8000 B and 4000 B.
Json model(bool same_shapes) {
  Json m = two_layer_model(1e3, 1e3);
  if (same_shapes) m["tensors"]["W1"]["shape"] = {1000};
  return m;
}

Json system(int ipus, int memory_shared_by) {
  Json config = zero_overhead_config(ipus);
  config["streamingMemory"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}, {"sharedBy", memory_shared_by}};
  return config;
}

Json adam(const std::string& location) {
  return {{"training", true}, {"gradientAccumulation", 2}, {"hostIo", false}, {"costModel", "compute"},
          {"mode", "sharded"}, {"optimizer", {{"type", "adam"}, {"stateLocation", location}}}};
}

double step(const Json& model, const Json& config, const Json& execution) {
  return simulate(make_scenario(model, config, execution), {Mode::Sharded}).runs.at(0).metrics.step_time_s;
}

Json with_schedule(Json execution, const std::string& schedule, const Json& excluded = Json::array()) {
  execution["accumulateOuterFragmentSettings"] = {{"schedule", schedule}, {"excludedVirtualGraphs", excluded}};
  return execution;
}

} // namespace

TEST_CASE("off-chip optimizer state is loaded before and stored after each IPU's update", "[weight-update]") {
  // Serial: IPU0 streams 8000 B in and out, IPU1 4000 B: 24 us at 1 GB/s, one IPU at a time.
  const double on_chip = step(model(false), system(2, 2), adam("on-chip"));
  const double off_chip = step(model(false), system(2, 2), adam("streaming-memory"));
  CHECK(off_chip - on_chip == Approx(24 * us).epsilon(1e-9));
}

TEST_CASE("OverlapCycleOptimized updates the IPUs together and a shared Streaming Memory splits its bandwidth",
          "[weight-update]") {
  // Serial: (8 + 12 + 8) + (4 + 6 + 4) = 42 us.
  const Json serial = adam("streaming-memory");
  const Json overlap = with_schedule(serial, "OverlapCycleOptimized");
  // Separate memories: max(28, 14) = 28 us.
  CHECK(step(model(false), system(2, 1), serial) - step(model(false), system(2, 1), overlap) ==
        Approx(14 * us).epsilon(1e-9));
  // One memory for both: the loads share 1 GB/s until IPU1's 4000 B are in (8 us, IPU0 has 4000 B),
  // IPU0's last 4000 B take 4 us more; IPU1 computes 8-14 us and stores 14-18 us alone; IPU0
  // computes 12-24 us and stores 24-32 us: 32 us, 10 us less than Serial.
  CHECK(step(model(false), system(2, 2), serial) - step(model(false), system(2, 2), overlap) ==
        Approx(10 * us).epsilon(1e-9));
}

TEST_CASE("excluded virtual graphs update on their own, before the others overlap", "[weight-update]") {
  // IPU0 excluded: it updates alone (28 us), then IPU1 (14 us): the Serial 42 us.
  const Json serial = adam("streaming-memory");
  const Json excluded = with_schedule(serial, "OverlapCycleOptimized", {0});
  CHECK(step(model(false), system(2, 1), excluded) == Approx(step(model(false), system(2, 1), serial)).epsilon(1e-12));
}

TEST_CASE("OverlapMemoryOptimized overlaps only updates of identically shaped weights", "[weight-update]") {
  const Json serial = adam("streaming-memory");
  const Json memory = with_schedule(serial, "OverlapMemoryOptimized");
  // W0 [1000] and W1 [500] differ: nothing overlaps, as Serial.
  CHECK(step(model(false), system(2, 1), memory) == Approx(step(model(false), system(2, 1), serial)).epsilon(1e-12));
  // Both [1000]: both updates (8 + 12 + 8 us) run at once: 28 us instead of 56 us.
  CHECK(step(model(true), system(2, 1), serial) - step(model(true), system(2, 1), memory) ==
        Approx(28 * us).epsilon(1e-9));
}

TEST_CASE("the weight update schedule names are PopART's, and excluded virtual graphs must exist", "[weight-update]") {
  CHECK(rule_of([&] { make_scenario(model(false), system(2, 1), with_schedule(adam("on-chip"), "Overlap")); }) ==
        "scenario.bad-weight-update-schedule");
  const Scenario sc = make_scenario(model(false), system(2, 1), with_schedule(adam("on-chip"), "Serial", {2}));
  CHECK(rule_of([&] { make_plan(sc, build_graph(sc.model)); }) == "scenario.bad-weight-update-schedule");
}

TEST_CASE("replicated tensor sharding: reduce-scatter, a 1/R update, all-gather, on a ring", "[weight-update][rts]") {
  // Four replicas of a one-IPU model on a ring of 4 IPUs (1 GB/s, 1 us per link); W is 1000
  // floats (4000 B); forward 1 us, backward 2 us per micro-batch, G = 2; SGD: 2 FLOPs per weight.
  const Json one_ipu = {{"name", "one layer"},
                        {"tensors",
                         {{"x", {{"shape", {10}}, {"kind", "input"}}},
                          {"W", {{"shape", {1000}}, {"kind", "weight"}}},
                          {"y", {{"shape", {10}}, {"kind", "activation"}}}}},
                        {"ops", {{{"name", "l"}, {"type", "MatMul"}, {"inputs", {"x", "W"}}, {"outputs", {"y"}},
                                  {"flops", 1e3}}}}};
  Json ring = zero_overhead_config(4);
  ring["links"] = Json::array();
  for (int i = 0; i < 4; ++i)
    ring["links"].push_back({{"ipus", {i, (i + 1) % 4}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1e-6}});
  Json execution = {{"training", true}, {"gradientAccumulation", 2}, {"hostIo", false}, {"costModel", "compute"},
                    {"replicas", 4}, {"mode", "sharded"}, {"optimizer", {{"type", "sgd"}}}};
  // All-reduce: 2(R-1) steps of B/R = 1000 B, half each way round:
  // 2 x 3 x (1 us + 0.5 us) = 9 us; update 2 us.
  const RunMetrics plain = simulate(make_scenario(one_ipu, ring, execution), {Mode::Sharded}).runs[0].metrics;
  CHECK(plain.allreduce_s == Approx(9 * us).epsilon(1e-9));
  CHECK(plain.step_time_s == Approx(2 * 3 * us + 9 * us + 2 * us).epsilon(1e-9));
  // Sharded state: reduce-scatter (R-1 steps, 4.5 us), update of 250 weights (0.5 us), all-gather (4.5 us).
  execution["optimizer"]["replicatedTensorSharding"] = true;
  const RunMetrics rts = simulate(make_scenario(one_ipu, ring, execution), {Mode::Sharded}).runs[0].metrics;
  CHECK(rts.allreduce_s == Approx(9 * us).epsilon(1e-9));
  CHECK(rts.step_time_s == Approx(2 * 3 * us + 4.5 * us + 0.5 * us + 4.5 * us).epsilon(1e-9));
}

TEST_CASE("replicated tensor sharding divides optimizer state memory and streaming by the replicas", "[weight-update][rts]") {
  // Two replicas of the two-IPU model on four IPUs; Adam state on chip: 8000 B on IPU0.
  Json execution = adam("on-chip");
  execution["replicas"] = 2;
  const Scenario plain = make_scenario(model(false), system(4, 1), execution);
  const Plan p = make_plan(plain, build_graph(plain.model));
  auto state = [](const MemoryReport& r) {
    for (const MemoryCategory& c : r.ipus[0].categories)
      if (c.name == "optimizer state") return c.bytes;
    return -1.0;
  };
  CHECK(state(estimate_memory(plain, p, {0}, false)) == 8000);
  execution["optimizer"]["replicatedTensorSharding"] = true;
  const Scenario sharded = make_scenario(model(false), system(4, 1), execution);
  const Plan ps = make_plan(sharded, build_graph(sharded.model));
  CHECK(state(estimate_memory(sharded, ps, {0}, false)) == 4000);
  CHECK(ps.ipus[0].update_seconds == Approx(6 * us).epsilon(1e-12));  // 500 of the 1000 weights
  execution["optimizer"]["stateLocation"] = "streaming-memory";
  const Scenario streamed = make_scenario(model(false), system(4, 1), execution);
  CHECK(make_plan(streamed, build_graph(streamed.model)).ipus[0].state_bytes == 4000);
}
