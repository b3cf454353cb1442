// The host between and around program runs: each run of the device program (a step) ends
// with the host's turn (hostLink.runOverheadSeconds), and streams prefetched into the
// IPU-Gateway's buffer cost the IPU only the gateway's leg while the host's own leg bounds
// the run (hand-computed step times).
#include <catch2/catch.hpp>

#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3;

// Two 1 ms stages on two IPUs (1e6 FLOPs at 1 FLOP/cycle, 1 GHz), 1000-byte samples in and out.
const Json two_stages = chain_model({{0, 1e6}, {1, 1e6}}, 250);

double step_of(const Json& config, const Json& execution) {
  const Simulation sim = simulate(make_scenario(two_stages, config, execution), {Mode::Pipelined});
  return sim.runs.at(0).metrics.step_time_s;
}

Json inference(int batches) {
  return {{"batchesPerStep", batches}, {"costModel", "compute"}, {"mode", "pipelined"}};
}

} // namespace

TEST_CASE("each program run ends with the host's turn, once per step", "[host]") {
  Json config = zero_overhead_config(2, 1e15);
  const double plain = step_of(config, inference(8));
  config["hostLink"]["runOverheadSeconds"] = 50 * ms;
  CHECK(step_of(config, inference(8)) == Approx(plain + 50 * ms).epsilon(1e-12));
  // Training: the step's session.run.
  Json training = {{"training", true}, {"gradientAccumulation", 8}, {"costModel", "compute"}, {"mode", "pipelined"}};
  config["hostLink"]["runOverheadSeconds"] = 0;
  const double trained = step_of(config, training);
  config["hostLink"]["runOverheadSeconds"] = 50 * ms;
  CHECK(step_of(config, training) == Approx(trained + 50 * ms).epsilon(1e-12));
  // batchesPerStep batches in one run pay it once.
  training["batchesPerStep"] = 4;
  config["hostLink"]["runOverheadSeconds"] = 0;
  const double four = step_of(config, training);
  config["hostLink"]["runOverheadSeconds"] = 50 * ms;
  CHECK(step_of(config, training) == Approx(four + 50 * ms).epsilon(1e-12));
}

TEST_CASE("prefetched streams: the IPU waits for the gateway's leg, the host's leg bounds the run", "[host]") {
  // Host links of 5e5 B/s, one per IPU: 8 micro-batches of 1000 B in (IPU 0) and out (IPU 1)
  // take the host 16 ms a link, longer than the device's 9 cycles of about 1 ms.
  Json config = zero_overhead_config(2, 1e15);
  config["hostLink"]["bandwidthBytesPerSecond"] = 5e5;
  config["hostLink"]["gatewayBandwidthBytesPerSecond"] = 1e12;
  CHECK(step_of(config, inference(8)) == Approx(16 * ms).epsilon(1e-9));
  config["hostLink"]["runOverheadSeconds"] = 3 * ms;
  CHECK(step_of(config, inference(8)) == Approx(19 * ms).epsilon(1e-9));
  // The device's own time rules once the host keeps up: 9 cycles of 1 ms, each stream now 1 ns.
  config["hostLink"]["bandwidthBytesPerSecond"] = 1e9;
  config["hostLink"]["runOverheadSeconds"] = 0;
  CHECK(step_of(config, inference(8)) == Approx(9 * ms + 9 * 1e-9).epsilon(1e-9));
  // Without prefetching (or a gateway) every stream crosses the host link while the IPU waits:
  // 1 us each at 1e9 B/s, one in and one out per cycle on the cycle's two IPUs.
  Json direct = inference(8);
  direct["prefetchDataStreams"] = false;
  CHECK(step_of(config, direct) == Approx(9 * (ms + 1e-6)).epsilon(1e-9));
}
