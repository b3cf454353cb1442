// Where the step time goes: each IPU's idle time split into fill/flush, imbalance,
// waiting on copies, on other IPUs' weight updates and for its turn, against times
// worked out by hand with every overhead zeroed (support.hpp: 1 FLOP/ns, 1 GB/s links).
#include <catch2/catch.hpp>

#include <optional>

#include "cli_runner.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/metrics/attribution_state.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "run_metrics.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

const IpuMetrics& ipu(const RunMetrics& r, int id) {
  for (const IpuMetrics& m : r.ipus)
    if (m.id == id) return m;
  FAIL("no IPU " << id);
  throw;
}

double sum(const IdleBreakdown& b) {
  return b.fill_flush_s + b.imbalance_s + b.copy_wait_s + b.update_wait_s + b.turn_wait_s;
}

void check_sums(const RunMetrics& r) {
  for (const IpuMetrics& m : r.ipus) {
    INFO("IPU " << m.id);
    CHECK(sum(m.idle) == Approx(m.idle_s).epsilon(1e-9).margin(1e-15));
  }
}

Json inference(int batches) {
  return {{"training", false}, {"batchesPerStep", batches}, {"hostIo", false}, {"costModel", "compute"}};
}

} // namespace

TEST_CASE("equal stages: all idle time of a lockstep pipeline is fill and flush", "[attribution]") {
  // Two stages of 1 ms, copies of 1 us in each of the 4+1 cycles. IPU1 waits for the
  // first cycle's 1 ms, IPU0 for the last one's.
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(2), inference(4)), {Mode::Pipelined});
  const RunMetrics& r = run_of(sim, Mode::Pipelined);
  check_sums(r);
  for (int i : {0, 1}) {
    CHECK(ipu(r, i).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
    CHECK(ipu(r, i).idle.imbalance_s == Approx(0).margin(1e-12));
    CHECK(ipu(r, i).idle.copy_wait_s == Approx(0).margin(1e-12));
  }
  CHECK(r.bottleneck_ipu == 0);  // equal work: the first
}

TEST_CASE("unequal stages: waiting for the slowest IPU of a cycle is imbalance", "[attribution]") {
  // t0 = 1 ms, t1 = 2 ms, 4 micro-batches, 5 cycles: 1 | 2 | 2 | 2 | 2 ms (+1 us copies).
  // IPU0 waits 1 ms in each of cycles 1-3 (imbalance) and 2 ms in cycle 4, where its own
  // stage is done: 1 ms of that is the stage it would run in a full pipeline (flush), 1 ms
  // imbalance. IPU1 waits 1 ms in cycle 0 (fill, less than its 2 ms stage).
  const Json model = chain_model({{0, 1e6}, {1, 2e6}}, 250);
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(2), inference(4)), {Mode::Pipelined});
  const RunMetrics& r = run_of(sim, Mode::Pipelined);
  check_sums(r);
  CHECK(ipu(r, 0).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
  CHECK(ipu(r, 0).idle.imbalance_s == Approx(4 * ms).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.imbalance_s == Approx(0).margin(1e-12));
  CHECK(r.bottleneck_ipu == 1);
  CHECK(r.bottleneck_stage == 1);
}

TEST_CASE("sharded: waiting while another IPU runs its stage, and for copies between others", "[attribution]") {
  // Three stages of 1, 2 and 3 ms; copies 0->1 and 1->2 of 1 us, 2 micro-batches. Per
  // micro-batch IPU0 waits 2 + 3 ms for its turn, IPU1 1 + 3 ms, IPU2 1 + 2 ms; each IPU
  // waits 1 us for the copy it takes no part in (IPU2 for 0->1, IPU0 for 1->2).
  const Json model = chain_model({{0, 1e6}, {1, 2e6}, {2, 3e6}}, 250);
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(3), inference(2)), {Mode::Sharded});
  const RunMetrics& r = run_of(sim, Mode::Sharded);
  check_sums(r);
  CHECK(ipu(r, 0).idle.turn_wait_s == Approx(2 * 5 * ms).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.turn_wait_s == Approx(2 * 4 * ms).epsilon(1e-9));
  CHECK(ipu(r, 2).idle.turn_wait_s == Approx(2 * 3 * ms).epsilon(1e-9));
  CHECK(ipu(r, 0).idle.copy_wait_s == Approx(2 * 1 * us).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.copy_wait_s == Approx(0).margin(1e-15));
  CHECK(ipu(r, 2).idle.copy_wait_s == Approx(2 * 1 * us).epsilon(1e-9));
  CHECK(ipu(r, 2).idle.fill_flush_s + ipu(r, 2).idle.imbalance_s == Approx(0).margin(1e-12));
  CHECK(r.bottleneck_ipu == 2);
}

TEST_CASE("Serial weight updates: each IPU waits while the other updates", "[attribution]") {
  // SGD: 2 FLOPs per weight: IPU0 (1000 weights) updates for 2 us, IPU1 (500) for 1 us,
  // one after the other: IPU1 waits 2 us, IPU0 1 us.
  const Json model = two_layer_model(1e6, 3e6);
  const Json execution = {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}};
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(2), execution), {Mode::Pipelined});
  const RunMetrics& r = run_of(sim, Mode::Pipelined);
  check_sums(r);
  CHECK(ipu(r, 0).idle.update_wait_s == Approx(1 * us).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.update_wait_s == Approx(2 * us).epsilon(1e-9));
  CHECK(ipu(r, 0).update_s == Approx(2 * us).epsilon(1e-9));
  CHECK(ipu(r, 1).update_s == Approx(1 * us).epsilon(1e-9));
  // IPU1 (3 ms forward, 6 ms backward) paces the pipeline.
  CHECK(r.bottleneck_ipu == 1);
}

TEST_CASE("GPipe: the first micro-batch's wait is fill, the copy's flight is waiting on copies", "[attribution]") {
  // Two stages of 1 ms, copies of 1 us, 3 micro-batches. IPU1 waits 1 ms for IPU0's first
  // forward (fill), then 1 us for the copy; afterwards each copy lands as IPU1 finishes.
  // At the closing sync IPU0 waits for IPU1's last 1 us + 1 ms (the drain).
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  Json execution = inference(3);
  execution["schedule"] = "gpipe";
  const Simulation sim = simulate(make_scenario(model, zero_overhead_config(2), execution), {Mode::Pipelined});
  const RunMetrics& r = run_of(sim, Mode::Pipelined);
  check_sums(r);
  CHECK(ipu(r, 1).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
  CHECK(ipu(r, 1).idle.copy_wait_s == Approx(1 * us).epsilon(1e-9));
  CHECK(ipu(r, 0).idle.fill_flush_s == Approx(1 * ms + 1 * us).epsilon(1e-9));
  CHECK(ipu(r, 0).idle.imbalance_s + ipu(r, 1).idle.imbalance_s == Approx(0).margin(1e-12));
}

TEST_CASE("cli: the attribution in the JSON, the table and the Why paragraph", "[attribution][cli]") {
  // The unequal-stages pipeline above (IPU0 1 ms, IPU1 2 ms, 4 micro-batches, 1 us copies in
  // each of the 5 cycles): step 9.005 ms, IPU-time 18.01 ms of which compute 12 ms, copies
  // 10 us, fill and flush 2 ms, imbalance 4 ms. Sharded: 4 x (1 ms + 1 us + 2 ms) = 12.004 ms,
  // IPU0 waits 4 x 2 ms for its turn, IPU1 4 x 1 ms.
  const TempDir dir;
  const Json scenario = {{"name", "attribution"},
                         {"model", chain_model({{0, 1e6}, {1, 2e6}}, 250)},
                         {"config", zero_overhead_config(2)},
                         {"execution", inference(4)}};
  const std::string file = dir.write("scenario.json", scenario);
  const Result r = run_ipusim({"run", file, "--json"});
  REQUIRE(r.exit_code == 0);
  const Json doc = Json::parse(r.out);
  const Json* pipelined = nullptr;
  const Json* sharded = nullptr;
  for (const Json& run : doc.at("runs")) (run.at("mode") == "pipelined" ? pipelined : sharded) = &run;
  REQUIRE(pipelined);
  REQUIRE(sharded);
  const Json& p = *pipelined;
  CHECK(p.at("stepTimeSeconds").get<double>() == Approx(9.005 * ms).epsilon(1e-9));
  CHECK(p.at("ipus")[0].at("idle").at("fillFlushSeconds").get<double>() == Approx(1 * ms).epsilon(1e-9));
  CHECK(p.at("ipus")[0].at("idle").at("imbalanceSeconds").get<double>() == Approx(4 * ms).epsilon(1e-9));
  CHECK(p.at("ipus")[1].at("idle").at("fillFlushSeconds").get<double>() == Approx(1 * ms).epsilon(1e-9));
  const Json& shares = p.at("timeShares");
  CHECK(shares.at("compute").get<double>() == Approx(12 / 18.01).epsilon(1e-9));
  CHECK(shares.at("exchange").get<double>() == Approx(0.01 / 18.01).epsilon(1e-6));
  CHECK(shares.at("idleFillFlush").get<double>() == Approx(2 / 18.01).epsilon(1e-9));
  CHECK(shares.at("idleImbalance").get<double>() == Approx(4 / 18.01).epsilon(1e-9));
  CHECK(shares.at("hostIo").get<double>() == 0);
  CHECK(p.at("bottleneck") == Json({{"ipu", 1}, {"replica", 0}, {"virtualIpu", 1}, {"stage", 1}}));
  const Json& s = *sharded;
  CHECK(s.at("stepTimeSeconds").get<double>() == Approx(12.004 * ms).epsilon(1e-9));
  CHECK(s.at("ipus")[0].at("idle").at("turnWaitSeconds").get<double>() == Approx(8 * ms).epsilon(1e-9));
  CHECK(s.at("ipus")[1].at("idle").at("turnWaitSeconds").get<double>() == Approx(4 * ms).epsilon(1e-9));
  CHECK(s.at("timeShares").at("idleTurnWait").get<double>() == Approx(12 / 24.008).epsilon(1e-9));

  const Result table = run_ipusim({"run", file});
  REQUIRE(table.exit_code == 0);
  // 2 / 18.01 = 11.1 %, 4 / 18.01 = 22.2 %; sharded 12 / 24.008 = 50.0 %.
  CHECK_THAT(table.out, Contains("  fill and flush          0.0 %                   11.1 %"));
  CHECK_THAT(table.out, Contains("  imbalance               0.0 %                   22.2 %"));
  CHECK_THAT(table.out, Contains("  waiting for its turn    50.0 %                  0.0 %"));
  CHECK_THAT(table.out, Contains("bottleneck                IPU 1, stage 1          IPU 1, stage 1"));
  CHECK_THAT(table.out, Contains("22.2 % imbalance (waiting for the slowest IPU), 11.1 % fill and flush."));
  CHECK_THAT(table.out, Contains("The bottleneck is IPU 1, stage 1: its stages compute and stream 8.000 ms per step "
                                 "against 4.000 ms on the lightest, IPU 0."));
  CHECK_THAT(table.out, Contains("What would help: moving ops from stage 1 (IPU 1) towards the lightest IPU (IPU 0) "
                                 "evens the cycles (imbalance 22.2 %); a larger batchesPerStep (now 4) spreads fill "
                                 "and flush (11.1 %) over more micro-batches."));
}

TEST_CASE("a deep pipeline: the same attribution from the steady state and in full, as the closed form",
          "[attribution][steady-state]") {
  // The unequal stages above at B = 1000 micro-batches: IPU0 waits 1 ms of imbalance in each
  // of cycles 1..B-1 and 2 ms in the last (1 ms flush, 1 ms imbalance); IPU1 1 ms of fill.
  // The steady state simulates a few cycles and replays the rest; the attribution, fed the
  // replayed events, must match the full simulation's.
  constexpr int B = 1000;
  const Json model = chain_model({{0, 1e6}, {1, 2e6}}, 250);
  const Scenario sc = make_scenario(model, zero_overhead_config(2), inference(B));
  SimulateOptions fast_options, full_options;
  fast_options.keep_log = full_options.keep_log = false;
  full_options.exact_full = true;
  const Simulation fast = simulate(sc, {Mode::Pipelined}, fast_options);
  const Simulation full = simulate(sc, {Mode::Pipelined}, full_options);
  const RunMetrics& f = run_of(fast, Mode::Pipelined);
  const RunMetrics& e = run_of(full, Mode::Pipelined);
  REQUIRE(f.simulation.steps_simulated < f.simulation.steps_total / 10);
  for (const RunMetrics* r : {&f, &e}) {
    check_sums(*r);
    CHECK(ipu(*r, 0).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
    CHECK(ipu(*r, 0).idle.imbalance_s == Approx(B * ms).epsilon(1e-9));
    CHECK(ipu(*r, 1).idle.fill_flush_s == Approx(1 * ms).epsilon(1e-9));
    CHECK(ipu(*r, 1).idle.imbalance_s == Approx(0).margin(1e-9));
    CHECK(r->bottleneck_ipu == 1);
  }
}

namespace {

// The segments between barriers by walking every executed step of every program, as
// SegmentStream did before it skipped loops without barriers.
std::vector<attribution_detail::Segment> segments_step_by_step(const Schedule& schedule) {
  std::vector<attribution_detail::Segment> out;
  std::vector<ProgramCursor> cursors;
  for (const Program& p : schedule.programs) cursors.emplace_back(p);
  for (bool another = true; another;) {
    attribution_detail::Segment s;
    another = false;
    for (ProgramCursor& c : cursors)
      for (; !c.done(); c.advance()) {
        if (c.step().kind == StepKind::Sync || c.step().kind == StepKind::HostRoundTrip) {
          c.advance();
          another = true;
          break;
        }
        attribution_detail::mark(s, c.step());
      }
    out.push_back(s);
  }
  return out;
}

bool same(const attribution_detail::Segment& a, const attribution_detail::Segment& b) {
  return a.work == b.work && a.copies == b.copies && a.all_reduce == b.all_reduce && a.update == b.update &&
         a.asynchronous == b.asynchronous;
}

} // namespace

TEST_CASE("segments between barriers: loops without a barrier are skipped, the segments unchanged",
          "[attribution]") {
  // Asynchronous schedules hold no sync inside their loop over G micro-batches (one segment
  // spans it), lockstep ones one or more per cycle, sharded runs several per micro-batch;
  // batches of 2 put an update phase between them, 2 replicas their all-reduce.
  const Json model = chain_model({{0, 1e6}, {1, 2e6}, {2, 1e6}}, 250);
  int built = 0;
  for (const ScheduleInfo& info : schedules()) {
    const Json execution = {{"training", true},  {"gradientAccumulation", 24}, {"batchesPerStep", 2},
                            {"hostIo", true},     {"costModel", "compute"},     {"schedule", info.name},
                            {"replicas", 2},      {"mode", "pipelined"}};
    const Scenario sc = make_scenario(model, zero_overhead_config(6), execution);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    for (const Mode mode : {Mode::Pipelined, Mode::Sharded}) {
      if (mode == Mode::Sharded && info.name != "popart") continue;
      std::optional<Schedule> s;
      try {
        s = make_schedule(mode, sc, plan);
      } catch (const InputError&) {
        continue;  // a schedule whose rules this model breaks (a V, an even depth...)
      }
      ++built;
      INFO(info.name << (mode == Mode::Sharded ? " (sharded)" : ""));
      const auto expected = segments_step_by_step(*s);
      attribution_detail::SegmentStream stream(*s, s->programs.size());
      for (std::size_t k = 0; k < expected.size(); ++k) {
        INFO("segment " << k);
        CHECK(same(stream.at(static_cast<std::int64_t>(k)), expected[k]));
      }
      CHECK_FALSE(stream.produce());  // and no segment past the last
      for (const ProgramCursor& c : stream.cursors_) CHECK(c.done());
    }
  }
  CHECK(built >= 8);
  // A loop with a barrier inside its body, not at its end (no shipped schedule lays one out):
  // each of its iterations makes segments of its own, none may be skipped.
  Step forward, sync, update;
  forward.pass = Pass::Forward;
  sync.kind = StepKind::Sync;
  update.pass = Pass::Update;
  Schedule hand;
  hand.programs.emplace_back(0, std::vector<Step>{forward, sync, update}, std::vector<Repeat>{{0, 3, 4, 1, 0}});
  const auto expected = segments_step_by_step(hand);
  REQUIRE(expected.size() == 5);  // forward | update, forward (x3) | update
  attribution_detail::SegmentStream stream(hand, hand.programs.size());
  for (std::size_t k = 0; k < expected.size(); ++k) CHECK(same(stream.at(static_cast<std::int64_t>(k)), expected[k]));
  CHECK_FALSE(stream.produce());
}
