// Distributed batch normalisation (execution.distributedBatchNormReplicaGroupSize, Graphcore's
// ResNet-50 BN_span): the bytes poplibs all-reduces per pass, their closed-form time added to
// the op's forward and backward, nothing at inference or for other ops, and the rule.
#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/plan/distributed_norm_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/tensor_parallel_cost.hpp"
#include "sim/schedule/schedule.hpp"
#include "cli_runner.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

// x [64, 8, 8] float16 -> BatchNormalization (gamma, beta [64]) -> y -> Relu -> z, on IPU 0.
Json batch_norm_model() {
  Json tensors = {{"x", {{"shape", {64, 8, 8}}, {"kind", "input"}, {"dtype", "float16"}}},
                  {"gamma", {{"shape", {64}}, {"kind", "weight"}, {"dtype", "float16"}}},
                  {"beta", {{"shape", {64}}, {"kind", "weight"}, {"dtype", "float16"}}},
                  {"y", {{"shape", {64, 8, 8}}, {"kind", "activation"}, {"dtype", "float16"}}},
                  {"z", {{"shape", {64, 8, 8}}, {"kind", "activation"}, {"dtype", "float16"}}}};
  return {{"name", "batch norm"},
          {"tensors", tensors},
          {"ops",
           {{{"name", "bn"}, {"type", "BatchNormalization"}, {"inputs", {"x", "gamma", "beta"}}, {"outputs", {"y"}},
             {"virtualGraph", 0}},
            {{"name", "relu"}, {"type", "Relu"}, {"inputs", {"y"}}, {"outputs", {"z"}}, {"virtualGraph", 0}}}}};
}

Json data_parallel(int replicas, int group, bool training = true) {
  return {{"mode", "sharded"}, {"training", training}, {"replicas", replicas}, {"hostIo", false},
          {"distributedBatchNormReplicaGroupSize", group}};
}

} // namespace

TEST_CASE("distributed batch norm all-reduces poplibs' statistics once per pass", "[cost][closed-form]") {
  Json config = zero_overhead_config(4);
  for (auto& link : config["links"]) link["latencySeconds"] = 1e-6;
  const Scenario alone = make_scenario(batch_norm_model(), config, data_parallel(4, 1));
  const Scenario paired = make_scenario(batch_norm_model(), config, data_parallel(4, 2));
  const Op& bn = paired.model.ops.at(0);
  // Forward: the mean in the activations' type (2 B) and the power in float (4 B), 64 channels;
  // backward: the variance and mean deltas, both float.
  CHECK(distributed_norm_bytes(paired.model, bn, paired.execution, false) == 64 * (2 + 4));
  CHECK(distributed_norm_bytes(paired.model, bn, paired.execution, true) == 64 * (4 + 4));
  CHECK(distributed_norm_bytes(alone.model, bn, alone.execution, false) == 0);
  CHECK(distributed_norm_bytes(paired.model, paired.model.ops.at(1), paired.execution, false) == 0);  // Relu

  // Two IPUs joined at 1e9 B/s, 1 us latency, no sync: the ring pair's 2 (2 - 1) = 2 steps. Each
  // step sends a chunk of bytes / 2 / 2 round each ring; with two members both rings' next IPU is
  // the other one, so one link direction carries both: 2 x (bytes / 2 / 1e9 + 1e-6).
  const HardwareConfig& hw = paired.hardware;
  CHECK(group_all_reduce_seconds(hw, 0, 2, 384) == Approx(2 * (192e-9 + 1e-6)).epsilon(1e-12));
  const double forward = 2 * (384.0 / 2 / 1e9 + 1e-6), backward = 2 * (512.0 / 2 / 1e9 + 1e-6);

  // The plan adds exactly those seconds (at the 1 GHz clock) to the op's passes and its stages.
  const Plan with = make_plan(paired, build_graph(paired.model));
  const Plan without = make_plan(alone, build_graph(alone.model));
  CHECK(with.op_timings[0].forward.exchange_cycles - without.op_timings[0].forward.exchange_cycles ==
        Approx(forward * 1e9).epsilon(1e-9));
  CHECK(with.op_timings[0].backward.exchange_cycles - without.op_timings[0].backward.exchange_cycles ==
        Approx(backward * 1e9).epsilon(1e-9));
  CHECK(with.stages[0].forward_seconds - without.stages[0].forward_seconds == Approx(forward).epsilon(1e-9));
  CHECK(with.op_timings[1].forward.cycles() == without.op_timings[1].forward.cycles());

  // Inference keeps the running statistics: nothing is all-reduced.
  Execution inference = paired.execution;
  inference.training = false;
  CHECK(distributed_norm_bytes(paired.model, bn, inference, false) == 0);
}

TEST_CASE("distributed batch norm's group must divide the replicas", "[rules]") {
  const Json config = zero_overhead_config(4);
  CHECK(rule_of([&] { make_scenario(batch_norm_model(), config, data_parallel(4, 3)); }) ==
        "scenario.bad-batch-norm-group");
  CHECK(rule_of([&] { make_scenario(batch_norm_model(), config, data_parallel(4, 0)); }) == "value.not-positive");
  CHECK(rule_of([&] { make_scenario(batch_norm_model(), config, data_parallel(4, 4)); }).empty());
  // At inference it would be ignored: refused instead.
  CHECK(rule_of([&] { make_scenario(batch_norm_model(), config, data_parallel(4, 2, false)); }) ==
        "scenario.bad-batch-norm-group");
  CHECK(rule_of([&] { make_scenario(batch_norm_model(), config, data_parallel(4, 1, false)); }).empty());
}

TEST_CASE("a batch-norm group wider than the system is refused before its ring is timed", "[rules][hardening]") {
  // 8 replicas sharing statistics in groups of 8 on 4 IPUs: the plan timed the group's ring on
  // IPUs 0..7 and crashed routing to IPU 4; the replicas' count is the input's fault.
  const Scenario sc = make_scenario(batch_norm_model(), zero_overhead_config(4), data_parallel(8, 8));
  const InputError e = error_of([&] { make_plan(sc, build_graph(sc.model)); });
  CHECK(e.rule() == "scenario.not-enough-ipus");
  CHECK(e.pointer() == "/execution/replicas");
  CHECK_THAT(e.message(), Catch::Matchers::Contains("8 replica(s) of a 1-IPU pipeline need 8 IPUs"));
}

TEST_CASE("plan searches only replica counts the batch-norm group divides, and says so", "[plan][cli]") {
  const std::string scenario = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/validation/resnet50-bow-pod16.json";
  // Its configuration shares batch-norm statistics over pairs of replicas (BN_span 2).
  const auto odd = run_ipusim({"plan", scenario, "--quiet", "--replicas", "1"});
  CHECK(odd.exit_code == 2);
  CHECK_THAT(odd.err, Catch::Matchers::Contains("distributedBatchNormReplicaGroupSize 2") &&
                          Catch::Matchers::Contains("[plan.replicas]"));
  // Searched: 16 IPUs as 2x8, 4x4 and 8x2; not 16x1, whose one replica holds no pair.
  const auto even = run_ipusim({"plan", scenario, "--quiet", "--micro-batch", "20", "--schedule", "tf-sequential"});
  CHECK(even.exit_code == 0);
  CHECK_THAT(even.out, Catch::Matchers::Contains("IPUs x replicas 2x8,4x4,8x2 (replicas a multiple of the batch-norm group, 2)"));
}
