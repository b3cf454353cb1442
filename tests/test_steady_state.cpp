// Compact programs (repeats) and the engine's steady state: skipping the periods of a
// loop whose state repeats gives the full simulation's figures and log, on every shipped
// scenario and schedule and on random plans; loops that never settle are simulated in
// full and say so. The full simulation (exact_full) also simulates every transfer of the
// gradient collectives, which the fast one replays apart (collective_dataflow.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>

#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/output/table.hpp"
#include "sim/output/trace.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program_cursor.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "same_metrics.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

Step labelled(std::int64_t micro_batch) {
  Step s;
  s.micro_batch = micro_batch;
  return s;
}

std::vector<std::int64_t> walk(const Program& p) {
  std::vector<std::int64_t> labels;
  for (ProgramCursor c(p); !c.done(); c.advance()) labels.push_back(c.micro_batch());
  return labels;
}

// Times within 1e-9 of the step time: durations of nanoseconds summed over a clock of
// seconds carry rounding of that order in the full simulation itself.
void check_same(const RunMetrics& fast, const RunMetrics& full) {
  const double step = full.step_time_s;
  const auto same_time = [&](double a, double b) { return std::fabs(a - b) <= 1e-9 * step; };
  const auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); };
  CHECK(same(fast.step_time_s, full.step_time_s));
  CHECK(same(fast.throughput_samples_per_s, full.throughput_samples_per_s));
  CHECK(same_time(fast.latency_s.mean, full.latency_s.mean));
  CHECK(same_time(fast.latency_s.min, full.latency_s.min));
  CHECK(same_time(fast.latency_s.max, full.latency_s.max));
  CHECK(std::fabs(fast.bubble_fraction - full.bubble_fraction) <= 1e-9);
  CHECK(same_time(fast.allreduce_s, full.allreduce_s));
  CHECK(fast.activities == full.activities);
  CHECK(fast.simulation.steps_total == full.simulation.steps_total);
  CHECK(full.simulation.steps_simulated == full.simulation.steps_total);
  check_same_ipus_and_links(fast, full);
}

// The trace's material: the same events and transfers, in the same order per IPU.
void check_same_log(const RunLog& fast, const RunLog& full) {
  const double step = full.end_time;
  const auto same_time = [&](double a, double b) { return std::fabs(a - b) <= 1e-9 * step; };
  REQUIRE(fast.events.size() == full.events.size());
  REQUIRE(fast.transfers.size() == full.transfers.size());
  std::map<int, std::vector<const Event*>> a, b;
  for (const Event& e : fast.events) a[e.ipu].push_back(&e);
  for (const Event& e : full.events) b[e.ipu].push_back(&e);
  REQUIRE(a.size() == b.size());
  std::size_t mismatches = 0;
  std::string first;  // the first mismatch, to tell what differs
  const auto mismatch = [&](const std::string& what, double x0, double x1, double y0, double y1) {
    if (mismatches++ == 0)
      first = what + ": " + std::to_string(x0) + ".." + std::to_string(x1) + " against " + std::to_string(y0) + ".." +
              std::to_string(y1);
  };
  for (const auto& [ipu, events] : b) {
    const auto& mine = a[ipu];
    REQUIRE(mine.size() == events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event &x = *mine[i], &y = *events[i];
      if (x.kind != y.kind || x.stage != y.stage || x.micro_batch != y.micro_batch || x.pass != y.pass ||
          x.bytes != y.bytes || !same_time(x.start, y.start) || !same_time(x.end, y.end))
        mismatch("IPU " + std::to_string(ipu) + " event " + std::to_string(i) + " (" + event_kind_name(x.kind) +
                     " mb " + std::to_string(x.micro_batch) + " / " + event_kind_name(y.kind) + " mb " +
                     std::to_string(y.micro_batch) + ")",
                 x.start, x.end, y.start, y.end);
    }
  }
  for (std::size_t i = 0; i < full.transfers.size(); ++i) {
    const TransferRecord &x = fast.transfers[i], &y = full.transfers[i];
    if (x.src != y.src || x.dst != y.dst || x.copy != y.copy || x.bytes != y.bytes || x.links != y.links ||
        !same_time(x.start, y.start) || !same_time(x.end, y.end))
      mismatch("transfer " + std::to_string(i) + " " + std::to_string(x.src) + "->" + std::to_string(x.dst) + " / " +
                   std::to_string(y.src) + "->" + std::to_string(y.dst),
               x.start, x.end, y.start, y.end);
  }
  INFO(first);
  CHECK(mismatches == 0);
}

// Runs whose steady state skipped periods (so that comparing them tests something).
int runs_skipping = 0;

// Both ways; returns false when the scenario refuses the modes (a schedule that does not apply).
bool compare(const Scenario& sc, const std::vector<Mode>& modes, bool with_log) {
  SimulateOptions fast_options, full_options;
  fast_options.keep_log = full_options.keep_log = with_log;
  full_options.exact_full = true;
  Simulation fast, full;
  try {
    fast = simulate(sc, modes, fast_options);
  } catch (const InputError&) {
    return false;
  }
  full = simulate(sc, modes, full_options);
  REQUIRE(fast.runs.size() == full.runs.size());
  for (std::size_t r = 0; r < full.runs.size(); ++r) {
    INFO(sc.name << " " << mode_name(full.runs[r].metrics.mode) << " " << full.runs[r].schedule.name);
    check_same(fast.runs[r].metrics, full.runs[r].metrics);
    const SimulationStats& stats = fast.runs[r].metrics.simulation;
    if (stats.steps_simulated < stats.steps_total) ++runs_skipping;
    if (with_log) check_same_log(fast.runs[r].log, full.runs[r].log);
  }
  return true;
}

std::string scenario_file(const std::string& name) {
  return std::string(IPUSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

// Every shipped scenario under every schedule that accepts it, at a depth every schedule's
// rule accepts (120 = a multiple of 2N for N up to 6 and of 10).
void compare_shipped(const std::vector<std::string>& names) {
  for (const std::string& name : names)
    for (const char* schedule : {"popart", "gpipe", "1f1b", "tf-grouped", "tf-interleaved", "tf-sequential"}) {
      const Scenario probe = load_scenario(scenario_file(name));
      std::vector<Override> sets = {parse_override(std::string("execution.schedule=") + schedule)};
      sets.push_back(parse_override(probe.execution.training ? "execution.gradientAccumulation=120"
                                                             : "execution.batchesPerStep=120"));
      Scenario sc;
      try {
        sc = load_scenario(scenario_file(name), sets);
      } catch (const InputError&) {
        continue;
      }
      const bool sharded = std::string(schedule) == "popart";  // sharded runs once per scenario
      compare(sc, sharded ? std::vector<Mode>{Mode::Sharded, Mode::Pipelined} : std::vector<Mode>{Mode::Pipelined},
              name.rfind("mlp", 0) == 0 || name.rfind("bert-tiny", 0) == 0);
    }
}

} // namespace

TEST_CASE("a program cursor walks nested repeats with their micro-batches", "[steady-state]") {
  // Steps: a(0) [b(0) [c(1) d(-)] x3 ] x2 e(9). The outer loop moves micro-batches by 10,
  // the inner one by 1.
  Program p(0, {labelled(0), labelled(0), labelled(1), labelled(-1), labelled(9)});
  p.repeats = {{1, 3, 2, 10, 0}, {2, 2, 3, 1, 1}};
  const std::vector<std::int64_t> expected = {0,  0,  1,  -1, 2,  -1, 3,  -1,  // first outer iteration
                                              10, 11, -1, 12, -1, 13, -1, 9};
  CHECK(walk(p) == expected);
  CHECK(executed_steps(p) == 16);
  // After 13 the program runs 9: four below the largest so far.
  CHECK(label_lag(p) == 4);

  // 1F1B's stage 0 of 4 with m = 8: warm-up F0 F1 F2, then (F3 B0) ... (F7 B4), then B5 B6 B7.
  Program one_f_one_b(0, {labelled(0), labelled(3), labelled(0), labelled(5)});
  one_f_one_b.repeats = {{0, 1, 3, 1, 0}, {1, 2, 5, 1, 1}, {3, 1, 3, 1, 2}};
  CHECK(walk(one_f_one_b) == std::vector<std::int64_t>{0, 1, 2, 3, 0, 4, 1, 5, 2, 6, 3, 7, 4, 5, 6, 7});
  CHECK(label_lag(one_f_one_b) == 3);

  Program overlapping(0, {labelled(0), labelled(1), labelled(2)});
  overlapping.repeats = {{0, 2, 2, 1, 0}, {1, 2, 2, 1, 1}};
  CHECK_THROWS_AS(ProgramCursor(overlapping), std::logic_error);
}

TEST_CASE("programs do not grow with the number of micro-batches", "[steady-state]") {
  const Json model = chain_model({{0, 1e6}, {1, 2e6}, {2, 1e6}}, 250);
  for (const char* schedule : {"popart", "gpipe", "1f1b", "tf-grouped", "tf-interleaved", "tf-sequential", "sharded"}) {
    INFO(schedule);
    auto programs = [&](std::int64_t G) {
      Json execution = {{"training", true}, {"gradientAccumulation", G}, {"hostIo", false}, {"costModel", "compute"}};
      if (std::string(schedule) != "sharded") execution["schedule"] = schedule;
      const Scenario sc = make_scenario(model, zero_overhead_config(3), execution);
      const Plan plan = make_plan(sc, build_graph(sc.model));
      return make_schedule(std::string(schedule) == "sharded" ? Mode::Sharded : Mode::Pipelined, sc, plan).programs;
    };
    const auto small = programs(60), large = programs(60000);
    REQUIRE(small.size() == large.size());
    std::int64_t steps_small = 0, steps_large = 0, steps_mid = 0;
    const auto mid = programs(30030);
    for (std::size_t i = 0; i < small.size(); ++i) {
      CHECK(small[i].steps.size() == large[i].steps.size());
      steps_small += executed_steps(small[i]);
      steps_mid += executed_steps(mid[i]);
      steps_large += executed_steps(large[i]);
    }
    // The steps run are affine in G: the same number per micro-batch at any depth.
    CHECK(steps_large - steps_mid == steps_mid - steps_small);
  }
}

TEST_CASE("a deep pipeline simulates a few cycles and matches the closed form exactly", "[steady-state]") {
  // As in test_closed_forms: t0 = 1 ms, t1 = 3 ms, copies of 1 us; G = 200,000 micro-batches
  // take G+1 lockstep cycles: the 1 ms fill, G-1 cycles of 3 ms, the 3 ms flush, a copy phase each.
  const Json model = chain_model({{0, 1e6}, {1, 3e6}}, 250);
  const Json execution = {{"batchesPerStep", 200000}, {"hostIo", false}, {"costModel", "compute"}, {"mode", "pipelined"}};
  SimulateOptions lean;
  lean.keep_log = false;
  const RunMetrics r = simulate(make_scenario(model, zero_overhead_config(2), execution), {Mode::Pipelined}, lean)
                           .runs.at(0)
                           .metrics;
  const double G = 200000;
  CHECK(r.step_time_s == Approx(1 * ms + (G - 1) * 3 * ms + 3 * ms + (G + 1) * us).epsilon(1e-9));
  // Micro-batch m enters in cycle m and leaves in cycle m+1: latency 3 ms + 1 us + 3 ms... for
  // all but the first, whose stage 0 runs in the 1 ms fill cycle.
  CHECK(r.latency_s.max == Approx(3 * ms + 1 * us + 3 * ms).epsilon(1e-9));
  CHECK(r.latency_s.min == Approx(1 * ms + 1 * us + 3 * ms).epsilon(1e-9));
  CHECK(r.simulation.steps_total > 1000000);
  CHECK(r.simulation.steps_simulated < 100);
  CHECK(r.simulation.not_periodic.empty());
}

TEST_CASE("skipped periods are added up, not replayed: 10^8 micro-batches", "[steady-state][costly]") {
  // The deep pipeline above at G = 10^8, and training steps of up to 5 x 10^7 micro-batches
  // (the largest a scenario may ask, scenario.too-large):
  // replaying every skipped period's events would take minutes; adding a period's
  // contribution times the periods takes as long as at any G (timed by bench/, not here).
  const Json model = chain_model({{0, 1e6}, {1, 3e6}}, 250);
  SimulateOptions lean;
  lean.keep_log = false;
  const double G = 1e8;
  const Json inference = {{"batchesPerStep", 100000000}, {"hostIo", false}, {"costModel", "compute"}, {"mode", "pipelined"}};
  const RunMetrics r =
      simulate(make_scenario(model, zero_overhead_config(2), inference), {Mode::Pipelined}, lean).runs.at(0).metrics;
  CHECK(r.step_time_s == Approx(1 * ms + (G - 1) * 3 * ms + 3 * ms + (G + 1) * us).epsilon(1e-9));
  CHECK(r.latency_s.max == Approx(3 * ms + 1 * us + 3 * ms).epsilon(1e-9));
  CHECK(r.latency_s.min == Approx(1 * ms + 1 * us + 3 * ms).epsilon(1e-9));
  CHECK(r.latency_s.mean == Approx(((G - 1) * (6 * ms + 1 * us) + 4 * ms + 1 * us) / G).epsilon(1e-12));
  // IPU 1 computes 3 ms per micro-batch; IPU 0 1 ms and waits the other 2 ms of each cycle.
  CHECK(r.ipus.at(1).busy_s == Approx(G * 3 * ms).epsilon(1e-9));
  CHECK(r.ipus.at(0).busy_s == Approx(G * 1 * ms).epsilon(1e-9));
  CHECK(r.simulation.steps_simulated < 100);

  // Training, 5 batches of G = 10^7: each batch adds the same time as the second.
  auto training = [&](int batches) {
    const Json execution = {{"training", true}, {"gradientAccumulation", 10000000}, {"batchesPerStep", batches},
                            {"hostIo", false}, {"costModel", "compute"}, {"mode", "pipelined"}};
    return simulate(make_scenario(model, zero_overhead_config(2), execution), {Mode::Pipelined}, lean).runs.at(0).metrics;
  };
  const RunMetrics one = training(1), two = training(2), five = training(5);
  CHECK(five.simulation.steps_total > 200000000LL);
  CHECK(five.step_time_s - one.step_time_s == Approx(4 * (two.step_time_s - one.step_time_s)).epsilon(1e-9));
  CHECK(five.ipus.at(1).busy_s == Approx(5 * one.ipus.at(1).busy_s).epsilon(1e-9));
  // A latency is the difference of two times of the order of the step: the clock's rounding.
  CHECK(five.latency_s.max == Approx(one.latency_s.max).margin(1e-13 * five.step_time_s));
}

TEST_CASE("steady state gives the full simulation's figures: MLP and BERT-Tiny scenarios", "[steady-state]") {
  compare_shipped({"mlp-inference", "mlp-training", "bert-tiny-inference", "bert-tiny-training", "link-probe-m2000"});
}

TEST_CASE("steady state gives the full simulation's figures: BERT-Base and BERT-Large scenarios", "[steady-state]") {
  compare_shipped({"bert-base-training", "bert-large-training", "bert-large-no-recomputation"});
}

TEST_CASE("steady state gives the full simulation's figures: BERT-Large on an IPU-POD16", "[steady-state]") {
  compare_shipped({"bert-large-pod16", "bert-large-pod16-across-m2000s"});
}

// MLPerf ResNet-50 rings share links (on a Bow Pod16, 3 -> 0 carries replica 3's route to 4 and
// 15's to 0, half each): the replay must give SimGrid's times.
TEST_CASE("gradient collectives replayed apart give the simulated transfers on Bow Pod16 and Pod64 rings",
          "[steady-state][collectives]") {
  for (const char* name : {"mlperf-v2.0-resnet50-pod16", "mlperf-v2.0-resnet50-pod64"}) {
    INFO(name);
    const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/validation/" + name + ".json",
                                      {parse_override("execution.batchesPerStep=3")});
    SimulateOptions lean;
    lean.keep_log = false;
    const SimulationStats fast = simulate(sc, {Mode::Pipelined}, lean).runs.at(0).metrics.simulation;
    CHECK(fast.collective_groups == 1);  // one ring column, every replica a member
    CHECK(fast.collectives_simulated_because.empty());
    CHECK(compare(sc, {Mode::Pipelined}, true));
  }
}

// BERT-Large on 4 IPUs x 4 replicas of an IPU-POD16 without replicated tensor sharding: each IPU
// column's ring crosses the rails between M2000s, the pipeline's copies the links inside one, so
// the four rings are four groups replayed side by side while the pipelines' copies are simulated.
TEST_CASE("four IPU columns' rings replayed beside the simulated pipeline copies give the simulated transfers",
          "[steady-state][collectives]") {
  const Scenario sc = load_scenario(scenario_file("bert-large-pod16"),
                                    {parse_override("execution.optimizer.replicatedTensorSharding=false"),
                                     parse_override("execution.gradientAccumulation=16")});
  SimulateOptions lean;
  lean.keep_log = false;
  const SimulationStats fast = simulate(sc, {Mode::Pipelined}, lean).runs.at(0).metrics.simulation;
  INFO(fast.collectives_simulated_because);
  CHECK(fast.collective_groups == 4);
  CHECK(compare(sc, {Mode::Pipelined}, true));
}

TEST_CASE("steady state gives the full simulation's figures on random plans", "[steady-state]") {
  std::mt19937 rng(20261130);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* schedules[] = {"popart", "gpipe", "1f1b", "tf-grouped", "tf-interleaved", "tf-sequential"};
  int compared = 0;
  runs_skipping = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int ipus = pick(2, 4);
    std::vector<ChainOp> ops;
    for (int i = 0; i < ipus; ++i) {
      // Equal stages or not, and sometimes a weight to update.
      const double flops = pick(0, 2) == 0 ? 1e6 : 1e5 * pick(5, 40);
      ops.push_back({i, flops, -1, pick(0, 1) * 1000});
    }
    const int replicas = pick(1, 2);
    Json config = zero_overhead_config(ipus * replicas, 1e8 * pick(1, 20));
    if (pick(0, 1)) config["syncLatencyPerHopSeconds"] = 1e-7 * pick(1, 9);
    for (Json& link : config["links"]) link["latencySeconds"] = 1e-7 * pick(0, 5);
    config["hostLink"]["bandwidthBytesPerSecond"] = 1e8 * pick(1, 20);
    if (pick(0, 1)) config["hostLink"]["sharedBy"] = 2;
    const bool training = pick(0, 2) > 0;
    const int depth = pick(2, 6) * 12;
    Json execution = {{"training", training}, {"hostIo", pick(0, 2) > 0}, {"costModel", "compute"},
                      {"schedule", schedules[pick(0, 5)]}, {"replicas", replicas}};
    execution[training ? "gradientAccumulation" : "batchesPerStep"] = depth;
    if (pick(0, 2) == 0) execution["numIOTiles"] = 32;
    if (training && pick(0, 2) == 0) execution["batchesPerStep"] = 2;
    Scenario sc;
    try {
      sc = make_scenario(chain_model(ops, 250 * pick(1, 40)), config, execution);
    } catch (const InputError&) {
      continue;
    }
    INFO("trial " << trial << ": " << execution.dump());
    if (compare(sc, {Mode::Sharded, Mode::Pipelined}, true)) ++compared;
  }
  CHECK(compared >= 30);
  CHECK(runs_skipping >= 40);
}

namespace {

// GPipe training on two IPUs, G = 64: stage 0 of 1e6 FLOPs, stage 1 of `stage1_flops`.
Scenario gpipe_two_stages(double stage1_flops) {
  const Json model = chain_model({{0, 1e6}, {1, stage1_flops}}, 250);
  const Json execution = {{"training", true}, {"gradientAccumulation", 64}, {"hostIo", false},
                          {"costModel", "compute"}, {"schedule", "gpipe"}, {"mode", "pipelined"}};
  return make_scenario(model, zero_overhead_config(2), execution);
}

Simulation simulate_lean(const Scenario& sc) {
  SimulateOptions lean;
  lean.keep_log = false;
  return simulate(sc, {Mode::Pipelined}, lean);
}

} // namespace

TEST_CASE("a loop whose state never repeats is simulated in full, and the run says so", "[steady-state]") {
  // GPipe with stage 1 1 % slower than stage 0: while both run their forwards,
  // stage 1's queue of copies grows, so no two states are alike; stage 0 finishes its 64
  // forwards when stage 1 is at its 64th, with no period left to skip alone.
  const Scenario sc = gpipe_two_stages(1.01e6);
  const Simulation sim = simulate_lean(sc);
  const RunMetrics& r = sim.runs.at(0).metrics;
  CHECK(r.simulation.not_periodic == std::vector<std::string>{"forwards"});
  CHECK(render_table(sc, sim).find("\"forwards\" never repeated") != std::string::npos);
  // Its backwards, paced by stage 1 alone, settle and are skipped; the figures are the full simulation's.
  CHECK(r.simulation.steps_simulated < r.simulation.steps_total);
  CHECK(compare(sc, {Mode::Pipelined}, true));
}

TEST_CASE("a loop whose state repeats only near its end is named as simulated in full", "[steady-state]") {
  // Stage 1 20 % slower: stage 0 is done with its 64 forwards when stage 1 is at about its
  // 53rd; 9 of the 64 forwards of stage 1 alone are skipped, the rest was simulated.
  const Scenario sc = gpipe_two_stages(1.2e6);
  const RunMetrics r = simulate_lean(sc).runs.at(0).metrics;
  CHECK(r.simulation.not_periodic == std::vector<std::string>{"forwards"});
  CHECK(r.simulation.steps_simulated < r.simulation.steps_total);
  CHECK(compare(sc, {Mode::Pipelined}, true));
}

TEST_CASE("IPUs waiting outside a loop let the others' periods be skipped", "[steady-state]") {
  // GPipe with stage 1 three times slower: stage 0 runs its 64 forwards at its own pace
  // (state never repeats meanwhile) and then waits for its first gradient while stage 1,
  // about 21 forwards in, works through its queue alone: those periods are skipped, stage
  // 1 taking the queued copies, stage 0's wait dated from before the skip.
  const Scenario sc = gpipe_two_stages(3e6);
  const Simulation sim = simulate_lean(sc);
  const RunMetrics& r = sim.runs.at(0).metrics;
  CHECK(r.simulation.not_periodic.empty());
  INFO("simulated " << r.simulation.steps_simulated << " of " << r.simulation.steps_total);
  CHECK(r.simulation.steps_simulated < r.simulation.steps_total / 2);
  CHECK(compare(sc, {Mode::Pipelined}, true));
}

TEST_CASE("the trace streams to the same text as the document", "[steady-state][trace]") {
  const Scenario sc = make_scenario(chain_model({{0, 1e6}, {1, 3e6}}, 250), zero_overhead_config(2),
                                    {{"training", true}, {"gradientAccumulation", 16}, {"costModel", "compute"}});
  const Simulation sim = simulate(sc, {Mode::Sharded, Mode::Pipelined});
  std::ostringstream streamed;
  write_trace(streamed, sc, sim);
  CHECK(streamed.str() == render_trace(chrome_trace(sc, sim)));
}
