// The what-if schedules (zero bubble, interleaved) lowered to IPU programs and simulated,
// against the order evaluator's closed timings (sim/schedule/order.hpp) and 1F1B's closed form.
#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3;

Json training(const std::string& schedule, int G) { return pipelined_training(schedule, G); }

Schedule schedule_of(const Json& model, const Json& config, const Json& execution) {
  const Scenario sc = make_scenario(model, config, execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  return make_schedule(Mode::Pipelined, sc, plan);
}

RunMetrics run(const Json& model, const Json& config, const Json& execution) {
  return simulate(make_scenario(model, config, execution), {Mode::Pipelined}).runs.at(0).metrics;
}

// As test_schedules.cpp: t_f = 1 ms, t_b = 2 ms a stage, copies of 1e-12 s.
const Json four_equal = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}, {3, 1e6}}, 250);
const Json fast_links = zero_overhead_config(4, 1e15);

} // namespace

TEST_CASE("ZB-H1 and ZB-H2 with no weight gradient to move run as 1F1B: (m+p-1)(t_f+t_b)", "[schedule][what-if]") {
  // Relu stages have no weights, so W = 0: the bubble (p-1)(F+B-2W) is 1F1B's (p-1)(F+B).
  for (const char* name : {"zb-h1", "zb-h2"}) {
    INFO(name);
    const RunMetrics r = run(four_equal, fast_links, training(name, 8));
    CHECK(r.step_time_s == Approx((8 + 4 - 1) * 3 * ms).epsilon(1e-8));
  }
  // Stashes follow the order: ZB-H1 holds 1F1B's p-s. With W holding nothing (no weights),
  // ZB-H2's limit of 2p binds F..B only, and stage 0 runs all m = 2p forwards before its first B.
  CHECK(schedule_of(four_equal, fast_links, training("zb-h1", 8)).stash_depth == std::vector<int>{4, 3, 2, 1});
  const std::vector<int> h2 = schedule_of(four_equal, fast_links, training("zb-h2", 8)).stash_depth;
  CHECK(h2.at(0) == 8);
  for (int depth : h2) CHECK(depth <= 8);
}

TEST_CASE("interleaved 1F1B: the simulated step is the order's list-scheduled makespan", "[schedule][what-if]") {
  // 8 stages of 0.5 ms forward, 1 ms backward; stage k on IPU k mod 4 (chunk c of IPU d is part 4c+d).
  std::vector<ChainOp> ops;
  for (int k = 0; k < 8; ++k) ops.push_back({k % 4, 0.5e6, k});
  const Json eight = chain_model(ops, 250);
  const RunMetrics r = run(eight, fast_links, training("interleaved-1f1b", 8));
  const OrderTiming t = evaluate(order_interleaved(4, 2, 8), OpTimes::uniform(4, 2, 0.5 * ms, 1 * ms, 0));
  // Golden table: 28.5 units of F+B+W = 3 per stage -> 28.5 ms at 1.5 ms a chunk's F+B.
  CHECK(t.makespan == Approx(28.5 * ms).epsilon(1e-12));
  CHECK(r.step_time_s == Approx(t.makespan).epsilon(1e-8));
}

TEST_CASE("what-if schedules refuse what they cannot run, with rule ids", "[schedule][what-if]") {
  std::vector<ChainOp> ops;
  for (int k = 0; k < 8; ++k) ops.push_back({k % 4, 0.5e6, k});
  const Json eight = chain_model(ops, 250);
  CHECK(rule_of([&] { schedule_of(eight, fast_links, training("interleaved-1f1b", 6)); }) == "pipeline.depth-multiple");
  CHECK(rule_of([&] { schedule_of(four_equal, fast_links, training("interleaved-1f1b", 8)); }) ==
        "pipeline.virtual-stages");
  // A periodic order is extended past 4096 micro-batches, with no limit (ZB-H1; DualPipe, its
  // two pipelines numbered depth-free). Built in full it would be refused past 2^18
  // (pipeline.what-if-depth, tests/test_what_if_lowering.cpp).
  CHECK_NOTHROW(schedule_of(four_equal, fast_links, training("zb-h1", (1 << 18) + 1)));
  CHECK_NOTHROW(schedule_of(four_equal, fast_links, training("dualpipe", (1 << 18) + 2)));
  CHECK_NOTHROW(schedule_of(four_equal, fast_links, training("dualpipe", 65538)));
  CHECK(rule_of([&] { schedule_of(four_equal, fast_links, training("zb-v", 8)); }) == "pipeline.v-placement");
  // DualPipe: one forward stage per IPU (BERT's heads back on IPU 0 are not), p even, m even >= 2p.
  const Json heads_back = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {2, 1e6, 2}, {3, 1e6, 3}, {0, 1e6, 4}}, 250);
  CHECK(rule_of([&] { schedule_of(heads_back, fast_links, training("dualpipe", 8)); }) ==
        "pipeline.dualpipe-placement");
  const Json three = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}}, 250);
  CHECK(rule_of([&] { schedule_of(three, fast_links, training("dualpipe", 8)); }) == "pipeline.dualpipe-even");
  CHECK(rule_of([&] { schedule_of(four_equal, fast_links, training("dualpipe", 6)); }) == "pipeline.dualpipe-depth");
  CHECK(rule_of([&] { schedule_of(four_equal, fast_links, training("dualpipe", 9)); }) == "pipeline.dualpipe-depth");
  const Json inference = {{"training", false}, {"batchesPerStep", 8}, {"hostIo", false}, {"costModel", "compute"},
                          {"schedule", "zb-h1"}, {"mode", "pipelined"}};
  CHECK(rule_of([&] { schedule_of(four_equal, fast_links, inference); }) == "pipeline.training-only");
}
