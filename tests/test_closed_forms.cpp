// Simulated step times against the closed forms of pipeline-formulas.md, with every
// overhead zeroed (or set to a known value), computed by hand in the comments.
#include <catch2/catch.hpp>

#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

const RunMetrics& run_of(const Simulation& sim, Mode mode) {
  for (const auto& r : sim.runs)
    if (r.metrics.mode == mode) return r.metrics;
  FAIL("no run for the mode");
  throw;
}

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
