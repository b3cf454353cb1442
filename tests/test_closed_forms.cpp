// Simulated step times against the closed forms of docs/reference/closed-forms.md, with every
// overhead zeroed (or set to a known value), computed by hand in the comments.
#include <catch2/catch.hpp>

#include "sim/simulate/simulation.hpp"
#include "run_metrics.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

Simulation simulate_both(const Json& model, const Json& config, const Json& execution) {
  return simulate(make_scenario(model, config, execution), {Mode::Sharded, Mode::Pipelined});
}

const Json inference4 = {{"training", false}, {"batchesPerStep", 4}, {"hostIo", false}, {"costModel", "compute"}};

} // namespace

TEST_CASE("unbalanced two-IPU inference matches the sharded and lockstep closed forms", "[closed-form]") {
  // t0 = 1e6 FLOP / 1 GFLOP/s = 1 ms, t1 = 3 ms; copy = 250 x 4 B / 1 GB/s = 1 us.
  const Json model = chain_model({{0, 1e6}, {1, 3e6}}, 250);
  const Simulation sim = simulate_both(model, zero_overhead_config(2), inference4);
  // Sharded: G * (t0 + c + t1) = 4 * 4.001 ms.
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (1 * ms + 1 * us + 3 * ms)).epsilon(1e-9));
  // Lockstep, G+S-1 = 5 cycles of (slowest active IPU + copy phase):
  // fill 1 ms, three main cycles of 3 ms, flush 3 ms; the copy phase runs in all 5.
  CHECK(run_of(sim, Mode::Pipelined).step_time_s == Approx(1 * ms + 3 * 3 * ms + 3 * ms + 5 * us).epsilon(1e-9));
  CHECK(run_of(sim, Mode::Pipelined).cycles == 5);
}

TEST_CASE("equal stages give (m+p-1)(t+c+sync) and p*m/(m+p-1) speed-up", "[closed-form]") {
  // p = 4 stages of t = 1 ms, copies of 1 us, m = 8; sync = 2 * (1 + 4/4) * 0.5 us = 2 us.
  Json config = zero_overhead_config(4);
  config["syncLatencyPerHopSeconds"] = 0.5 * us;
  const Json model = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}, {3, 1e6}}, 250);
  Json execution = inference4;
  execution["batchesPerStep"] = 8;
  const Simulation sim = simulate_both(model, config, execution);
  const double sync = 2 * us;
  CHECK(run_of(sim, Mode::Pipelined).step_time_s == Approx((8 + 4 - 1) * (1 * ms + sync + 1 * us)).epsilon(1e-9));
  // Sharded: each of the 4 hand-overs per micro-batch is a sync; 3 of them carry a copy.
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(8 * (4 * ms + 4 * sync + 3 * us)).epsilon(1e-9));
  // Throughput: micro-batch size x micro-batches / step time.
  CHECK(run_of(sim, Mode::Pipelined).throughput_samples_per_s ==
        Approx(8 / ((8 + 4 - 1) * (1 * ms + sync + 1 * us))).epsilon(1e-9));
}

TEST_CASE("stages sharing an IPU serialise inside a cycle (BERT-style wrap to IPU0)", "[closed-form]") {
  // Stage 0 on IPU0 (1 ms), stage 1 on IPU1 (2 ms), stage 2 back on IPU0 (1.5 ms).
  const Json model = chain_model({{0, 1e6, 0}, {1, 2e6, 1}, {0, 1.5e6, 2}}, 250);
  const Simulation sim = simulate_both(model, zero_overhead_config(2), inference4);
  // Cycles (IPU0 | IPU1): c0 1 | -; c1 1 | 2; c2 1+1.5 | 2; c3 1+1.5 | 2; c4 1.5 | 2; c5 1.5 | -.
  // Both copies (IPU0->IPU1 and IPU1->IPU0) move at once on the full-duplex link: 1 us a cycle.
  CHECK(run_of(sim, Mode::Pipelined).step_time_s ==
        Approx((1 + 2 + 2.5 + 2.5 + 2 + 1.5) * ms + 6 * 1 * us).epsilon(1e-9));
  CHECK(run_of(sim, Mode::Pipelined).cycles == 6);
  // Sharded: 4 * (1 + 2 + 1.5 ms + two copies).
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (4.5 * ms + 2 * us)).epsilon(1e-9));
}

TEST_CASE("training: backward stages at 2L-s, loss stage fwd+bwd, Serial weight update", "[closed-form]") {
  // IPU0: Gemm-like op with 1000 weights, 1 ms forward, 2 ms backward (2x default).
  // IPU1: op with 500 weights, 3 ms forward, 6 ms backward; it holds the loss stage.
  // Weight update (SGD) = 2 FLOPs per weight: 2 us on IPU0, 1 us on IPU1.
  const Json model = two_layer_model(1e6, 3e6);
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}};
  const Simulation sim = simulate_both(model, zero_overhead_config(2), execution);
  REQUIRE(sim.plan.stage_count() == 3);
  CHECK(sim.plan.stages[2].ipu == 0);
  CHECK(sim.plan.stages[2].backward);
  // Lockstep, 6 cycles (IPU0 | IPU1): c0 1 | -; c1 1 | 3+6; c2 1+2 | 9; c3 1+2 | 9; c4 2 | 9; c5 2 | -.
  // Forward copy IPU0->IPU1 and gradient copy IPU1->IPU0 share a cycle's copy phase: 1 us.
  CHECK(run_of(sim, Mode::Pipelined).step_time_s ==
        Approx((1 + 9 + 9 + 9 + 9 + 2) * ms + 6 * us + 3 * us).epsilon(1e-9));
  // Sharded: G * (1 + c + 9 + c + 2 ms) + updates.
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (12 * ms + 2 * us) + 3 * us).epsilon(1e-9));
}

TEST_CASE("bubble and latency of a balanced lockstep pipeline", "[closed-form]") {
  // p = 2, t = 1 ms, c = 1 us, m = 4: T = 5 (t + c). Each IPU computes 4 t, copies in
  // all 5 cycles, idles one t: bubble = t / T.
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const Simulation sim = simulate_both(model, zero_overhead_config(2), inference4);
  const RunMetrics& p = run_of(sim, Mode::Pipelined);
  const double T = 5 * (1 * ms + 1 * us);
  REQUIRE(p.step_time_s == Approx(T).epsilon(1e-9));
  CHECK(p.bubble_fraction == Approx(1 * ms / T).epsilon(1e-9));
  CHECK(p.ipus[0].utilization == Approx(4 * ms / T).epsilon(1e-9));
  // A micro-batch enters at cycle m and leaves after stage 1 in cycle m+1: t + c + t.
  CHECK(p.latency_s.mean == Approx(2 * ms + 1 * us).epsilon(1e-9));
  CHECK(p.latency_s.max == Approx(2 * ms + 1 * us).epsilon(1e-9));
  // Sharded: 4 micro-batches one after the other, each IPU busy half the compute time.
  const RunMetrics& s = run_of(sim, Mode::Sharded);
  CHECK(s.step_time_s == Approx(4 * (2 * ms + 1 * us)).epsilon(1e-9));
  CHECK(s.latency_s.mean == Approx(2 * ms + 1 * us).epsilon(1e-9));
  // Link traffic: 1000 B per micro-batch sharded; pipelined, the copy phase runs all 5 cycles.
  REQUIRE(p.links.size() == 1);
  CHECK(p.links[0].name == "ipu0->ipu1");
  CHECK(p.links[0].bytes == 5 * 1000.0);
  CHECK(s.links[0].bytes == 4 * 1000.0);
}

TEST_CASE("host streams cost latency + bytes / bandwidth per micro-batch", "[closed-form]") {
  // Host link 1 GB/s, latency 2 us; input x = 250 floats = 1000 B -> 3 us before stage 0;
  // output a2 (graph output) = 1000 B -> 3 us after stage 1.
  Json config = zero_overhead_config(2);
  config["hostLink"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 2 * us}};
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  Json execution = inference4;
  execution["hostIo"] = true;
  const Simulation sim = simulate_both(model, config, execution);
  // Sharded: 4 * (3 us + 1 ms + 1 us + 1 ms + 3 us).
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (2 * ms + 7 * us)).epsilon(1e-9));
  // Lockstep: c0: IPU0 3 us + 1 ms; c1-c3: both IPUs 1 ms + 3 us; c4: IPU1 1 ms + 3 us; plus 5 copies.
  CHECK(run_of(sim, Mode::Pipelined).step_time_s == Approx(5 * (1 * ms + 3 * us) + 5 * us).epsilon(1e-9));
}

TEST_CASE("training without gradient accumulation pipelines batchesPerStep micro-batches, updating every backward stage",
          "[closed-form]") {
  // PopART with accumulation off: depth = batchesPerStep B, one fill and flush per step (B+S-1
  // cycles), and each VarUpdate runs in the backward stage completing its gradient, every
  // micro-batch. IPU0: 1 ms forward, 2 ms backward, W0 = 1000 weights, SGD update u0 = 2 us;
  // IPU1 (the loss stage): 3 + 6 ms, W1 = 500 weights, u1 = 1 us. Copy phase: 1 us a cycle.
  const Json model = two_layer_model(1e6, 3e6);
  for (const int B : {3, 4, 8}) {
    INFO("batchesPerStep " << B);
    const Json execution = {{"training", true}, {"batchesPerStep", B}, {"hostIo", false}, {"costModel", "compute"}};
    const Simulation sim = simulate_both(model, zero_overhead_config(2), execution);
    const RunMetrics& p = run_of(sim, Mode::Pipelined);
    CHECK(p.cycles == B + 2);
    CHECK(p.micro_batches == B);
    // Cycles (IPU0 | IPU1): c0 1 | -; c1..cB: 1 (+2+u0 from c2) | 9 ms + u1; c(B+1): 2 ms + u0 | -.
    CHECK(p.step_time_s == Approx(1 * ms + B * (9 * ms + 1 * us) + 2 * ms + 2 * us + (B + 2) * 1 * us).epsilon(1e-9));
    // Every micro-batch pays its stages' updates: B x (forward + backward + u).
    CHECK(p.ipus[0].busy_s == Approx(B * (3 * ms + 2 * us)).epsilon(1e-9));
    CHECK(p.ipus[1].busy_s == Approx(B * (9 * ms + 1 * us)).epsilon(1e-9));
    // Sharded: each micro-batch, then the Serial update of both IPUs: B x (12 ms + 2 copies + u0 + u1).
    CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(B * (12 * ms + 2 * us + 3 * us)).epsilon(1e-9));
    // No gradient accumulators without accumulation.
    CHECK(p.memory.ipus[0].categories[1].name == "gradient accumulators");
    CHECK(p.memory.ipus[0].categories[1].bytes == 0);
  }
}

TEST_CASE("without gradient accumulation each backward stage updates only the weights whose gradient it completes",
          "[closed-form]") {
  // IPU0: stage 0 (1 ms, W0 = 1000 weights) and the loss stage 2 (1 ms + 2 ms backward, W2 =
  // 250); IPU1: stage 1 (0.5 ms, W1 = 500). Training stages 3 (backward of 1, IPU1: 1 ms) and
  // 4 (backward of 0, IPU0: 2 ms). Updates u = 2 ns per weight, in their own stage: stage 2
  // 0.5 us, stage 3 1 us, stage 4 2 us (not IPU0's 2.5 us at once).
  const Json model = chain_model({{0, 1e6, 0, 1000}, {1, 0.5e6, 1, 500}, {0, 1e6, 2, 250}}, 250);
  const Json execution = {{"training", true}, {"batchesPerStep", 5}, {"hostIo", false}, {"costModel", "compute"}};
  const Simulation sim = simulate_both(model, zero_overhead_config(2), execution);
  REQUIRE(sim.plan.stage_count() == 5);
  CHECK(sim.plan.stages[2].weights == std::vector<std::string>{"W2"});
  CHECK(sim.plan.stages[3].weights == std::vector<std::string>{"W1"});
  CHECK(sim.plan.stages[4].weights == std::vector<std::string>{"W0"});
  CHECK(sim.plan.stages[4].update_seconds == Approx(2 * us).epsilon(1e-12));
  // Stage s is active in cycles [s, s+5). Slowest IPU per cycle (IPU0 throughout):
  // c0 1, c1 1, c2 1+3+0.5us, c3 the same, c4 1+3.0005+2.002, c5 and c6 3.0005+2.002, c7 and c8 2.002 ms.
  // Each cycle's copy phase moves two 1000 B copies each way on the 1 GB/s link: 2 us.
  const RunMetrics& p = run_of(sim, Mode::Pipelined);
  CHECK(p.cycles == 9);
  CHECK(p.step_time_s == Approx(30 * ms + 12.5 * us + 9 * 2 * us).epsilon(1e-9));
  // Sharded: 5 x (7.5 ms of stages + 4 copies of 1 us + the Serial per-IPU updates 2.5 us and 1 us).
  CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(5 * (7.5 * ms + 4 * us + 3.5 * us)).epsilon(1e-9));
}

TEST_CASE("without gradient accumulation, replicas all-reduce each stage's gradients before its update, every micro-batch",
          "[closed-form]") {
  // The two-layer model twice (IPUs 0,1 and 2,3 of a full mesh). Ring all-reduce over R = 2:
  // 2 steps of half the gradients each way: W1 (2000 B) 2 x 1 us on IPU1, W0 (4000 B) 2 x 2 us on IPU0.
  const Json model = two_layer_model(1e6, 3e6);
  const Json execution = {{"training", true}, {"batchesPerStep", 3}, {"replicas", 2}, {"hostIo", false},
                          {"costModel", "compute"}};
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(4), execution), {Mode::Pipelined});
  const RunMetrics& p = run_of(sim, Mode::Pipelined);
  // c0 1 ms; c1..c3 IPU1 9 ms + 2 us + u1; c4 IPU0 2 ms + 4 us + u0; a 1 us copy phase in each of the 5 cycles.
  CHECK(p.step_time_s == Approx(1 * ms + 3 * (9 * ms + 3 * us) + 2 * ms + 6 * us + 5 * us).epsilon(1e-9));
  CHECK(p.allreduce_s == Approx(3 * 4 * us).epsilon(1e-9));
  CHECK(p.samples == 2 * 3);
}

TEST_CASE("sharded runs take models that only pipelining refuses: back to an earlier IPU, one input on two IPUs",
          "[closed-form]") {
  SECTION("virtualGraph 0 -> 1 -> 0: three stages, copies inline") {
    const Json model = chain_model({{0, 1e6}, {1, 2e6}, {0, 1.5e6}}, 250);
    const Scenario sc = make_scenario(model, zero_overhead_config(2), inference4);
    const Simulation sim = simulate(sc, {Mode::Sharded});
    REQUIRE(sim.plan.stage_count() == 3);
    CHECK(sim.plan.stages[2].ipu == 0);
    CHECK(sim.plan.stages[2].annotated_stages == std::vector<int>{0});  // virtualGraph 0, run after IPU1
    REQUIRE(sim.plan.copies.size() == 2);
    CHECK(sim.plan.copies[1].src_ipu == 1);
    CHECK(sim.plan.copies[1].dst_ipu == 0);
    // G x (t0 + c + t1 + c + t2) = 4 x (4.5 ms + 2 us).
    CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (4.5 * ms + 2 * us)).epsilon(1e-9));
    // Training (no weights, G = 2): forward, the loss stage's forward and backward, backwards, a copy at each hand-over.
    const Json training = {{"training", true}, {"gradientAccumulation", 2}, {"hostIo", false}, {"costModel", "compute"}};
    const Simulation trained = simulate(make_scenario(model, zero_overhead_config(2), training), {Mode::Sharded});
    CHECK(trained.plan.stage_count() == 5);
    CHECK(run_of(trained, Mode::Sharded).step_time_s ==
          Approx(2 * ((1 + 2 + 1.5 + 3 + 4 + 2) * ms + 4 * us)).epsilon(1e-9));
  }
  SECTION("host input x read on IPU0 and IPU1: streamed to IPU0, copied to IPU1 with a1") {
    Json model = chain_model({{0, 1e6}, {1, 3e6}}, 250);
    model["ops"][1]["inputs"] = {"a1", "x"};
    Json execution = inference4;
    execution["hostIo"] = true;
    const Simulation sim = simulate(make_scenario(model, zero_overhead_config(2), execution), {Mode::Sharded});
    REQUIRE(sim.plan.copies.size() == 1);
    CHECK(sim.plan.copies[0].tensors == std::vector<std::string>{"a1", "x"});
    CHECK(sim.plan.stages[0].host_inputs == std::vector<std::string>{"x"});
    CHECK(sim.plan.stages[1].host_inputs.empty());
    // Per micro-batch: x in (1 us at 1 GB/s), 1 ms, both tensors over the link (2 us), 3 ms, a2 out (1 us).
    CHECK(run_of(sim, Mode::Sharded).step_time_s == Approx(4 * (4 * ms + 4 * us)).epsilon(1e-9));
  }
}
