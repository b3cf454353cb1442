// The breadth-first looping schedule (sim/schedule/breadth_first.cpp): its order and timing
// worked by hand on a small case, the closed form of its step at equal chunk costs, and its
// lowering (interleaving's bubble, GPipe's stash).
#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

TEST_CASE("breadth-first at p = 2, v = 2, m = 4 and unit costs: the order and timeline worked by hand",
          "[orders][breadth-first]") {
  // Device d holds parts d (chunk 0) and 2+d (chunk 1). Each device runs F of micro-batches 0-3
  // through chunk 0, then through chunk 1, then BW (B and W as one) of 0-3 through chunk 1, then
  // through chunk 0.
  const OpTimes unit = OpTimes::uniform(2, 2, 1, 1, 1);  // F = B = W = 1 per chunk: BW = 2
  const ScheduleOrder o = make_order("breadth-first", 2, 2, 4, unit);
  const std::string order = "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 BW0.1 BW1.1 BW2.1 BW3.1 BW0.0 BW1.0 BW2.0 BW3.0";
  CHECK(order_lines(o) == std::vector<std::string>{order, order});
  // List scheduling, an op starting when its device is free and its dependency done:
  //   part 0 F i (device 0):  [i, i+1]                 ends 1 2 3 4
  //   part 1 F i (device 1):  after part 0 F i         [1,2] [2,3] [3,4] [4,5]
  //   part 2 F i (device 0):  free at 4, part 1 F i by 2..5 -> [4,5] [5,6] [6,7] [7,8]
  //   part 3 F i (device 1):  free at 5                [5,6] [6,7] [7,8] [8,9]
  //   part 3 BW i (device 1): free at 9, F done        [9,11] [11,13] [13,15] [15,17]
  //   part 2 BW i (device 0): after part 3's B i       [11,13] [13,15] [15,17] [17,19]  (idle 8..11)
  //   part 1 BW i (device 1): free at 17, part 2's B i by 13..19 -> [17,19] [19,21] [21,23] [23,25]
  //   part 0 BW i (device 0): after part 1's B i       [19,21] [21,23] [23,25] [25,27]
  // Makespan 27 = (vm + p - 1)(F + B + W) = (8 + 1) * 3; each device computes vm(F+B+W) = 24
  // and waits 3 = (p-1)(F+B+W) of a chunk.
  const OrderTiming t = evaluate(o, unit);
  CHECK(t.makespan == 27);
  CHECK(t.start[0] == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 11, 13, 15, 17, 19, 21, 23, 25});
  CHECK(t.start[1] == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(t.busy_span == std::vector<double>{27, 24});
  CHECK(t.busy_seconds == std::vector<double>{24, 24});
  // After its last forward a device holds all 4 micro-batches of both chunks, each chunk half a
  // stage: 4 stages' worth, GPipe's m, where 1F1B holds at most p = 2.
  CHECK(t.peak_fb == std::vector<double>{4, 4});
  CHECK(t.peak_fw == std::vector<double>{4, 4});
}

TEST_CASE("breadth-first's step at equal chunks is (vm + p - 1)(F + B + W) once m >= p", "[orders][breadth-first]") {
  // With m >= p no loop waits for the previous one: device 0 gets micro-batch 0 back from device
  // p-1 (p chunk-forwards after it left) before its own m forwards of the loop are done, and the
  // backward mirrors that. So every device computes vm(F+B+W) and waits p-1 chunk-ops of F and
  // p-1 of BW: interleaved 1F1B's bubble, 1/v of GPipe's.
  const double f = 1, b = 1.5, w = 0.5;  // exact in binary
  for (int p : {2, 3, 4, 8})
    for (int v : {2, 3, 4})
      for (std::int64_t m : {static_cast<std::int64_t>(p), p + 1L, 2L * p, 3L * p + 2}) {
        INFO("p=" << p << " v=" << v << " m=" << m);
        const OpTimes times = OpTimes::uniform(p, v, f, b, w);
        const OrderTiming t = evaluate(make_order("breadth-first", p, v, m, times), times);
        CHECK(t.makespan == static_cast<double>(v * m + p - 1) * (f + b + w));
        // Every device holds all m micro-batches of its v chunks, 1/v of a stage each (v = 3: to rounding).
        for (double peak : t.peak_fb) CHECK(peak == Approx(static_cast<double>(m)).epsilon(1e-12));
      }
  // The golden table's case (p = 4, v = 2, m = 8, a stage's F = B = W = 1, a chunk half that):
  // 19 * 1.5 = 28.5, interleaved 1F1B's makespan, with every stage holding all 8 micro-batches.
  const OpTimes half = OpTimes::uniform(4, 2, 0.5, 0.5, 0.5);
  const OrderTiming bf = evaluate(make_order("breadth-first", 4, 2, 8, half), half);
  CHECK(bf.makespan == 28.5);
  CHECK(bf.makespan == evaluate(make_order("interleaved-1f1b", 4, 2, 8, half), half).makespan);
  CHECK(bf.peak_fb == std::vector<double>(4, 8));
  // Fewer micro-batches than devices: the loops wait for each other, and the step is longer.
  const OpTimes unit = OpTimes::uniform(4, 2, 1, 1, 1);
  CHECK(evaluate(make_order("breadth-first", 4, 2, 2, unit), unit).makespan > (2 * 2 + 4 - 1) * 3.0);
  CHECK_THROWS_WITH(make_order("breadth-first", 4, 1, 8, OpTimes::uniform(4, 1, 1, 1, 1)),
                    Catch::Matchers::Contains("pipeline.virtual-stages"));
}

TEST_CASE("breadth-first lowered: interleaving's step, every stage stashing the whole batch", "[schedule][what-if][breadth-first]") {
  // 8 stages of 0.5 ms forward and 1 ms backward (relu: no weights, so W = 0), stage k on IPU
  // k mod 4, copies of 1e-12 s: p = 4, v = 2, m = 8. (vm + p - 1)(F + B) = 19 * 1.5 ms = 28.5 ms,
  // the makespan of interleaved 1F1B on the same chunks (docs/schedules.md).
  std::vector<ChainOp> ops;
  for (int k = 0; k < 8; ++k) ops.push_back({k % 4, 0.5e6, k});
  const Json eight = chain_model(ops, 250);
  const Json fast_links = zero_overhead_config(4, 1e15);
  const Scenario sc = make_scenario(eight, fast_links, pipelined_training("breadth-first", 8));
  const RunMetrics r = simulate(sc, {Mode::Pipelined}).runs.at(0).metrics;
  CHECK(r.step_time_s == Approx(28.5e-3).epsilon(1e-8));
  const Plan plan = make_plan(sc, build_graph(sc.model));
  CHECK(make_schedule(Mode::Pipelined, sc, plan).stash_depth == std::vector<int>(8, 8));
  CHECK(is_what_if_schedule("breadth-first"));
  // Four stages on four IPUs are no loop.
  const Json four = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}, {3, 1e6}}, 250);
  CHECK(rule_of([&] {
          const Scenario flat = make_scenario(four, fast_links, pipelined_training("breadth-first", 8));
          make_schedule(Mode::Pipelined, flat, make_plan(flat, build_graph(flat.model)));
        }) == "pipeline.virtual-stages");
}
