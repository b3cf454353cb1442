// IPU systems: link sharing, multi-hop routes, replicas and their gradient all-reduce,
// placement and host links shared behind a gateway; hand-computed times.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double us = 1e-6;

Json line_config(double bw01, double lat01, double bw12, double lat12) {
  Json config = zero_overhead_config(3);
  config["links"] = {{{"ipus", {0, 1}}, {"bandwidthBytesPerSecond", bw01}, {"latencySeconds", lat01}},
                     {{"ipus", {1, 2}}, {"bandwidthBytesPerSecond", bw12}, {"latencySeconds", lat12}}};
  return config;
}

// One exchange step on IPU `src` sending every transfer, and the matching receives.
double exchange_time(const Json& config, const std::vector<Transfer>& transfers) {
  const HardwareConfig hw = hardware_from_json(config, "c.json");
  Schedule s;
  s.name = "exchange";
  std::map<int, Step> steps;
  for (const Transfer& t : transfers)
    for (int ipu : {t.src_ipu, t.dst_ipu}) {
      steps[ipu].kind = StepKind::Exchange;
      steps[ipu].transfers.push_back(t);
    }
  for (auto& [ipu, step] : steps) s.programs.push_back(Program{ipu, {step}});
  return run_engine(s, hw).end_time;
}

} // namespace

TEST_CASE("two copies sharing one link take twice as long as one", "[systems]") {
  const Json config = zero_overhead_config(2);  // 1 GB/s, no latency
  const double one = exchange_time(config, {{0, 0, 1, 1e6}});
  const double two = exchange_time(config, {{0, 0, 1, 1e6}, {1, 0, 1, 1e6}});
  CHECK(one == Approx(1e-3).epsilon(1e-9));
  CHECK(two == Approx(2e-3).epsilon(1e-9));
  // Opposite directions of a full-duplex link do not share it.
  CHECK(exchange_time(config, {{0, 0, 1, 1e6}, {1, 1, 0, 1e6}}) == Approx(1e-3).epsilon(1e-9));
}

TEST_CASE("a two-hop route pays both latencies and the slower bandwidth", "[systems]") {
  // IPU0 -(2 GB/s, 1 us)- IPU1 -(1 GB/s, 3 us)- IPU2: 1 MB from 0 to 2.
  const Json config = line_config(2e9, 1 * us, 1e9, 3 * us);
  CHECK(exchange_time(config, {{0, 0, 2, 1e6}}) == Approx(1 * us + 3 * us + 1e6 / 1e9).epsilon(1e-9));
}

TEST_CASE("ring all-reduce across replicas: 2(R-1)/R x bytes / (2 x bandwidth) plus 2(R-1) latencies", "[systems]") {
  // R = 4 replicas of a one-IPU model on a ring of 4 IPUs (1 GB/s, 1 us per link). The
  // weight has 1000 float32 = 4000 B of gradients: 6 steps of 1000 B, each sent as 500 B
  // each way round (GCL's pair of rings), 1 us + 0.5 us.
  Json config = zero_overhead_config(4);
  config["links"] = {{{"ipus", {0, 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {1, 2}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {2, 3}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {3, 0}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}}};
  const Json model = {{"name", "one layer"},
                      {"tensors",
                       {{"x", {{"shape", {10}}, {"kind", "input"}}},
                        {"W", {{"shape", {1000}}, {"kind", "weight"}}},
                        {"y", {{"shape", {10}}, {"kind", "activation"}}}}},
                      {"ops", {{{"name", "l"}, {"type", "MatMul"}, {"inputs", {"x", "W"}}, {"outputs", {"y"}}, {"flops", 1e3}}}}};
  const Json execution = {{"training", true}, {"gradientAccumulation", 2}, {"hostIo", false}, {"costModel", "compute"},
                          {"replicas", 4}, {"mode", "sharded"}};
  const Simulation sim = simulate(make_scenario(model, config, execution), {Mode::Sharded});
  const RunMetrics& r = sim.runs.at(0).metrics;
  const double allreduce = 2.0 * 3 / 4 * 4000 / (2 * 1e9) + 2 * 3 * 1 * us;
  CHECK(r.allreduce_s == Approx(allreduce).epsilon(1e-9));
  // The step: 2 micro-batches of forward (1 us) and backward (2 us), the all-reduce, the update (2 us).
  CHECK(r.step_time_s == Approx(2 * 3 * us + allreduce + 2 * us).epsilon(1e-9));
  // Throughput counts every replica: 4 replicas x 2 micro-batches.
  CHECK(r.samples == 8);
  CHECK(r.ipus.size() == 4);
}

TEST_CASE("placement puts replicas on the IPUs the user names, and is checked", "[systems]") {
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  Json config = line_config(1e9, 0, 1e9, 0);
  // The pipeline on IPUs 0 and 2 instead of 0 and 1: its copy now crosses two links.
  Json execution = {{"batchesPerStep", 4}, {"hostIo", false}, {"costModel", "compute"}, {"placement", {0, 2}},
                    {"mode", "pipelined"}};
  const Simulation sim = simulate(make_scenario(model, config, execution), {Mode::Pipelined});
  const RunMetrics& r = sim.runs.at(0).metrics;
  CHECK(r.links.size() == 2);  // ipu0->ipu1 and ipu1->ipu2
  CHECK(r.ipus.at(1).id == 2);
  execution["placement"] = {0, 0};
  CHECK(rule_of([&] { simulate(make_scenario(model, config, execution), {Mode::Pipelined}); }) ==
        "scenario.bad-placement");
  execution["placement"] = {0, 7};
  CHECK(rule_of([&] { simulate(make_scenario(model, config, execution), {Mode::Pipelined}); }) ==
        "scenario.bad-placement");
  execution.erase("placement");
  execution["replicas"] = 2;  // 2 x 2 IPUs on a 3-IPU system
  CHECK(rule_of([&] { simulate(make_scenario(model, config, execution), {Mode::Pipelined}); }) ==
        "scenario.not-enough-ipus");
}

TEST_CASE("host streams of IPUs behind one gateway share its link", "[systems]") {
  // Two replicas of a one-IPU model, each streaming 1 MB in per micro-batch at 1 GB/s.
  const Json model = {{"name", "stream"},
                      {"tensors", {{"x", {{"shape", {250000}}, {"kind", "input"}}}, {"y", {{"shape", {1}}, {"kind", "activation"}}}}},
                      {"ops", {{{"name", "l"}, {"type", "ReduceSum"}, {"inputs", {"x"}}, {"outputs", {"y"}}, {"flops", 0}}}},
                      {"anchors", Json::array()}};
  Json config = zero_overhead_config(2);
  const Json execution = {{"batchesPerStep", 1}, {"costModel", "compute"}, {"replicas", 2}, {"mode", "sharded"}};
  const double separate = simulate(make_scenario(model, config, execution), {Mode::Sharded}).runs[0].metrics.step_time_s;
  config["hostLink"]["sharedBy"] = 2;
  const double shared = simulate(make_scenario(model, config, execution), {Mode::Sharded}).runs[0].metrics.step_time_s;
  // Each IPU then streams y (4 B) out; behind one gateway the two outputs share it too.
  CHECK(separate == Approx(1e-3 + 4e-9).epsilon(1e-9));
  CHECK(shared == Approx(2e-3 + 8e-9).epsilon(1e-9));
}

TEST_CASE("sync cost grows with the IPUs taking part, or is fixed by the config", "[systems]") {
  HardwareConfig hw;
  hw.sync_latency_per_hop_s = 15e-9;
  // Graphcore's IPU model: hops = 1 + IPUs/4, round trip: 2 IPUs 60 ns... at 1.6 GHz 48 cycles.
  CHECK(hw.sync_seconds(2) == Approx(30e-9));
  CHECK(hw.sync_seconds(2) * 1.6e9 == Approx(48));
  CHECK(hw.sync_seconds(16) * 1.6e9 == Approx(240));
  hw.fixed_sync_s = 1e-6;
  CHECK(hw.sync_seconds(64) == 1e-6);
}

TEST_CASE("the shipped M2000 link probe measures the configured per-direction bandwidth", "[systems]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/link-probe-m2000.json");
  const RunMetrics r = simulate(sc, {Mode::Sharded}).runs.at(0).metrics;
  REQUIRE(r.links.size() == 1);
  CHECK(r.links[0].name == "ipu0->ipu1");
  CHECK(r.links[0].bytes == 256.0 * 1024 * 1024);
  // Step = sync, copy (latency + bytes / bandwidth), sync, the host's turn. Config: 32 GB/s, 1 us.
  const double bandwidth = r.links[0].bytes / (r.step_time_s - 2 * r.sync_seconds - sc.hardware.links[0].latency_s -
                                               sc.hardware.host_link.run_overhead_s);
  CHECK(bandwidth == Approx(sc.hardware.links[0].bandwidth_bytes_per_s).epsilon(1e-9));
  CHECK(bandwidth == Approx(32e9).epsilon(1e-9));
}

TEST_CASE("BERT-Large on an IPU-POD16: 4 replicas of a 4-IPU pipeline, all-reduce over the rack's rails", "[systems]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json",
                                    {parse_override("execution.gradientAccumulation=16")});
  const Simulation sim = simulate(sc, {Mode::Pipelined});
  const RunMetrics& r = sim.runs.at(0).metrics;
  CHECK(r.replicas == 4);
  CHECK(r.ipus.size() == 16);
  CHECK(r.samples == 8 * 16 * 4);
  // Replica r is M2000 r; the rings of pipeline IPU k run IPU k -> 4+k -> 8+k -> 12+k -> k and
  // back, one rail link (16 GB/s each way, 1 us) per hop, rings on disjoint rails, half the
  // data each way: 2(R-1) x (1 us + W_k / R / 2 / 16 GB/s); then each of PopART's further
  // per-tensor collectives pays the 2(R-1) steps' latency again, 1 us and a sync each.
  double expected = 0;
  for (const PlanIpu& ipu : sim.plan.ipus) {
    const double pairs = collective_pairs(sc.execution, ipu, true);
    expected = std::max(expected, 2.0 * 3 * (1e-6 + ipu.weight_bytes / 4 / 2 / 16e9) +
                                      (pairs - 1) * 2.0 * 3 * (1e-6 + sc.hardware.sync_seconds(16)));
  }
  CHECK(r.allreduce_s == Approx(expected).epsilon(1e-9));
  CHECK(r.throughput_samples_per_s == Approx(8.0 * 16 * 4 / r.step_time_s).epsilon(1e-12));
}

TEST_CASE("Bow over Mk2 for one workload: compute scales with the clock, links, host and syncs do not",
          "[systems][clock]") {
  // Graphcore's MLPerf ResNet-50 configuration, one IPU per replica (no pipeline idle), on a
  // Bow Pod16 (1.85 GHz) and on an IPU-POD16 of GC200s (1.325 GHz), wired alike.
  const std::string source = IPUSIM_SOURCE_DIR;
  Scenario bow = load_scenario(source + "/scenarios/validation/resnet50-bow-pod16.json", {});
  // Its batch norms' statistics all-reduces (BN_span) are link seconds inside the ops' time:
  // left out, so that the busy time is compute sets alone.
  bow.execution.distributed_batch_norm_replicas = 1;
  Scenario mk2 = bow;
  mk2.hardware = load_hardware(source + "/configs/ipu-pod16.json");
  REQUIRE(bow.hardware.ipu.clock_hz == 1.85e9);
  REQUIRE(mk2.hardware.ipu.clock_hz == 1.325e9);
  const RunMetrics b = simulate(bow, {Mode::Pipelined}).runs.at(0).metrics;
  const RunMetrics m = simulate(mk2, {Mode::Pipelined}).runs.at(0).metrics;
  const double clock_ratio = 1.85e9 / 1.325e9;
  for (std::size_t i = 0; i < b.ipus.size(); ++i) {
    INFO("IPU " << b.ipus[i].id);
    // Every compute set is cycles: the busy time falls by exactly the clock ratio.
    CHECK(m.ipus[i].busy_s / b.ipus[i].busy_s == Approx(clock_ratio).epsilon(1e-9));
    // Streams through the gateway, the host's turn, the all-reduce over the IPU-Links and the
    // inter-IPU syncs are seconds on both.
    CHECK(m.ipus[i].host_io_s == Approx(b.ipus[i].host_io_s).epsilon(1e-9));
    CHECK(m.ipus[i].exchange_s == Approx(b.ipus[i].exchange_s).epsilon(1e-9));
    CHECK(m.ipus[i].sync_s == Approx(b.ipus[i].sync_s).epsilon(1e-9));
  }
  // So the step ratio is the clock ratio diluted by what does not scale (docs/validation.md).
  const IpuMetrics& first = m.ipus.front();
  const double fixed = first.host_io_s + first.exchange_s + first.sync_s + first.streaming_memory_s + first.idle_s;
  CHECK(m.step_time_s / b.step_time_s == Approx(m.step_time_s / (first.busy_s / clock_ratio + fixed)).epsilon(1e-6));
  CHECK(m.step_time_s / b.step_time_s < clock_ratio);
}

TEST_CASE("PopART's collectives per weight tensor: each beyond the first pays its ring steps' latency",
          "[systems][collectives]") {
  // R = 4 replicas of a one-IPU model on a ring of 4 IPUs (1 GB/s, 1 us per link, no sync
  // cost): 2 x 3 ring steps of 1 us per reduce-scatter/all-gather pair. Weights W0, W1 of
  // 10000 floats (sharded under RTS: at least 8192 elements) and W2 of 100 (all-reduced).
  Json config = zero_overhead_config(4);
  config["links"] = {{{"ipus", {0, 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {1, 2}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {2, 3}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}},
                     {{"ipus", {3, 0}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1 * us}}};
  const Json act = {{"shape", {10}}, {"kind", "activation"}};
  const Json model = {
      {"name", "three weights"},
      {"tensors",
       {{"x", {{"shape", {10}}, {"kind", "input"}}}, {"W0", {{"shape", {10000}}, {"kind", "weight"}}},
        {"W1", {{"shape", {10000}}, {"kind", "weight"}}}, {"W2", {{"shape", {100}}, {"kind", "weight"}}},
        {"a", act}, {"b", act}, {"c", act}}},
      {"ops",
       {{{"name", "l0"}, {"type", "MatMul"}, {"inputs", {"x", "W0"}}, {"outputs", {"a"}}, {"flops", 1e3}},
        {{"name", "l1"}, {"type", "MatMul"}, {"inputs", {"a", "W1"}}, {"outputs", {"b"}}, {"flops", 1e3}},
        {{"name", "l2"}, {"type", "MatMul"}, {"inputs", {"b", "W2"}}, {"outputs", {"c"}}, {"flops", 1e3}}}}};
  auto allreduce = [&](const Json& optimizer, bool merged) {
    const Json execution = {{"training", true}, {"gradientAccumulation", 2}, {"hostIo", false},
                            {"costModel", "compute"}, {"replicas", 4}, {"mode", "sharded"},
                            {"optimizer", optimizer}, {"mergeAllReduceCollectives", merged}};
    return simulate(make_scenario(model, config, execution), {Mode::Sharded}).runs.at(0).metrics.allreduce_s;
  };
  const double pair = 2 * 3 * 1 * us;
  const double bytes = (10000 + 10000 + 100) * 4.0;
  // One all-reduce of every gradient (merged): the ring alone, half the bytes each way.
  CHECK(allreduce({{"type", "sgd"}}, true) == Approx(2 * 3 * (1 * us + bytes / 4 / 2 / 1e9)).epsilon(1e-9));
  // Unmerged: three all-reduces, two more pairs of ring steps.
  CHECK(allreduce({{"type", "sgd"}}, false) - allreduce({{"type", "sgd"}}, true) == Approx(2 * pair).epsilon(1e-6));
  // RTS with LAMB: W0 and W1 reduce-scattered and all-gathered on their own, W2 all-reduced, and
  // two norms per sharded tensor all-reduced: 2 + 1 + 4 = 7 pairs (2 + 1 + 2 merged).
  const Json lamb = {{"type", "lamb"}, {"replicatedTensorSharding", true}};
  const Json merged_sgd = {{"type", "sgd"}};
  CHECK(allreduce(lamb, false) - allreduce(merged_sgd, true) == Approx(6 * pair).epsilon(1e-6));
  CHECK(allreduce(lamb, true) - allreduce(merged_sgd, true) == Approx(4 * pair).epsilon(1e-6));
}
