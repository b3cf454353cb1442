// Pipeline schedules other than PopART's, recomputation and stash depths, against
// closed forms (docs/reference/closed-forms.md) and hand-computed step tables.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "sim/graph/model_graph.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program_cursor.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/planner.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;

namespace {

constexpr double ms = 1e-3, us = 1e-6;

Json training(const std::string& schedule, int G) {
  return {{"training", true}, {"gradientAccumulation", G}, {"hostIo", false}, {"costModel", "compute"},
          {"schedule", schedule}, {"mode", "pipelined"}};
}

RunMetrics run_pipelined(const Json& model, const Json& config, const Json& execution) {
  const Simulation sim = simulate(make_scenario(model, config, execution), {Mode::Pipelined});
  return sim.runs.at(0).metrics;
}

Schedule schedule_of(const Json& model, const Json& config, const Json& execution) {
  const Scenario sc = make_scenario(model, config, execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  return make_schedule(Mode::Pipelined, sc, plan);
}

// p = 4 equal stages: t_f = 1 ms, t_b = 2 ms; copies of 1000 B over 1e15 B/s (the fastest link
// a config may give) take 1e-12 s.
const Json four_equal = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}, {3, 1e6}}, 250);
const Json fast_links = zero_overhead_config(4, 1e15);

} // namespace

// The one schedule name outside the registry's units is execution.schedule's declared default
// (sim/io, a floor below the registry): it must be a registered pipeline schedule that an IPU
// framework runs, PopART's, and the planner's default is the scenario's.
TEST_CASE("the default schedule is PopART's registered pipeline schedule, the planner's too", "[schedule]") {
  const ipusim::ScheduleInfo* d = ipusim::find_schedule(ipusim::Execution{}.schedule);
  REQUIRE(d != nullptr);
  CHECK(d->pipeline);
  CHECK_FALSE(d->what_if());
  CHECK(d->run_by.rfind("PopART", 0) == 0);
  CHECK(d->annotated_stages == ipusim::AnnotatedStages::MergedOnIpu);
  CHECK(ipusim::PlanSettings{}.schedule == ipusim::Execution{}.schedule);
  // The frameworks' schedules, as the what-if notes list them: every non-what-if pipeline entry once.
  const std::string listed = ipusim::framework_schedules();
  int entries = 0;
  for (const auto& s : ipusim::schedules())
    if (s.pipeline && !s.what_if()) {
      ++entries;
      CHECK(listed.find(s.name) != std::string::npos);
      CHECK((s.annotated_stages == ipusim::AnnotatedStages::Kept) == (s.run_by.rfind("TensorFlow", 0) == 0));
    }
  CHECK(entries == 4);  // popart and TensorFlow's three
  CHECK(listed == "PopART and PopTorch: popart; TensorFlow for IPU: tf-grouped, tf-interleaved, tf-sequential");
}

TEST_CASE("GPipe: (m+p-1)(t_f+t_b) and bubble (p-1)/(m+p-1)", "[schedule]") {
  const RunMetrics r = run_pipelined(four_equal, fast_links, training("gpipe", 8));
  CHECK(r.step_time_s == Approx((8 + 4 - 1) * 3 * ms).epsilon(1e-9));
  CHECK(r.bubble_fraction == Approx(3.0 / 11.0).epsilon(1e-9));
}

TEST_CASE("1F1B: bubble over ideal time is (p-1)/m, at most p micro-batches in flight", "[schedule]") {
  const RunMetrics r = run_pipelined(four_equal, fast_links, training("1f1b", 8));
  CHECK(r.step_time_s == Approx((8 + 4 - 1) * 3 * ms).epsilon(1e-9));
  // The copies (1e-12 s each) shift the ratio by about 2e-9.
  for (const IpuMetrics& ipu : r.ipus) CHECK(ipu.idle_s / ipu.busy_s == Approx(3.0 / 8.0).epsilon(1e-8));
  // Stage s holds min(p - s, m) micro-batches; GPipe holds all m.
  CHECK(schedule_of(four_equal, fast_links, training("1f1b", 8)).stash_depth == std::vector<int>{4, 3, 2, 1});
  CHECK(schedule_of(four_equal, fast_links, training("gpipe", 8)).stash_depth == std::vector<int>{8, 8, 8, 8});
}

TEST_CASE("GPU-style schedules need one forward stage per IPU, but training 1F1B runs from its order", "[schedule]") {
  const Json wrap = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 250);
  CHECK(rule_of([&] { schedule_of(wrap, zero_overhead_config(2), training("gpipe", 8)); }) ==
        "pipeline.one-stage-per-ipu");
  // 1F1B over the 3 parts, two on IPU 0: stage k holds 3-k micro-batches.
  CHECK(schedule_of(wrap, zero_overhead_config(2), training("1f1b", 8)).stash_depth == std::vector<int>{3, 2, 1});
}

TEST_CASE("TF Grouped: ramp-up of N forward steps, then backward and forward steps alternate", "[schedule]") {
  // N = 2, m = 4, t_f = 1 ms, t_b = 2 ms, copies 1 us (1000 B at 1 GB/s).
  // Steps (IPU0 | IPU1), and whether the step moves a copy:
  //  F: F0 | -        1 ms + copy     F: F1 | F0       1 ms + copy     B: - | B0      2 ms + copy
  //  F: F2 | F1       1 ms + copy     B: B0 | B1       2 ms + copy     F: F3 | F2     1 ms + copy
  //  B: B1 | B2       2 ms + copy     F: - | F3        1 ms            B: B2 | B3     2 ms + copy
  //  B: B3 | -        2 ms
  const Json two = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const RunMetrics r = run_pipelined(two, zero_overhead_config(2), training("tf-grouped", 4));
  CHECK(r.step_time_s == Approx(15 * ms + 8 * us).epsilon(1e-9));
  CHECK(r.cycles == 10);
  CHECK(schedule_of(two, zero_overhead_config(2), training("tf-grouped", 4)).stash_depth == std::vector<int>{2, 0});
}

TEST_CASE("TF Sequential on a V: consecutive stages on one IPU hand over in place, no copy", "[schedule]") {
  // Stages 1 and 2 both on IPU 1 (TensorFlow keeps them apart). Per micro-batch: 4 forward
  // steps of 1 ms and 4 backward of 2 ms; only the boundaries between IPUs copy (1 us each,
  // 1000 B at 1 GB/s): F0->F1, F2->F3, B3->B2, B1->B0. This run was a crash (the engine has
  // no route from an IPU to itself) before the plan dropped same-IPU copies.
  const Json v = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {1, 1e6, 2}, {0, 1e6, 3}}, 250);
  const Scenario sc = make_scenario(v, zero_overhead_config(2), training("tf-sequential", 4));
  const Plan plan = make_plan(sc, build_graph(sc.model));
  CHECK(plan.copies.size() == 4);
  for (const PlanCopy& c : plan.copies) CHECK(c.src_ipu != c.dst_ipu);
  const RunMetrics r = run_pipelined(v, zero_overhead_config(2), training("tf-sequential", 4));
  CHECK(r.step_time_s == Approx(4 * (12 * ms + 4 * us)).epsilon(1e-9));
}

TEST_CASE("TF Interleaved: forward and backward alternate on each IPU", "[schedule]") {
  // Same model; stage s runs forward on steps t with t-s even:
  //  F0 | -  1 ms + copy;  - | F0  1 ms;  F1 | B0  2 ms + 2 copies at once (1 us);  B0 | F1  2 ms;
  //  F2 | B1  2 ms + 1 us;  B1 | F2  2 ms;  F3 | B2  2 ms + 1 us;  B2 | F3  2 ms;  - | B3  2 ms + 1 us;  B3 | -  2 ms.
  const Json two = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const RunMetrics r = run_pipelined(two, zero_overhead_config(2), training("tf-interleaved", 4));
  CHECK(r.step_time_s == Approx(18 * ms + 5 * us).epsilon(1e-9));
  CHECK(schedule_of(two, zero_overhead_config(2), training("tf-interleaved", 4)).stash_depth ==
        std::vector<int>{1, 0});
}

namespace {

// TensorFlow's lockstep rule stepped through one step at a time, with no folding: in step t
// stage s runs forward (Grouped: the first N steps, then every other one; Interleaved: t - s
// even) the next micro-batch its input is ready for, or backward likewise.
std::vector<std::vector<LockstepTask>> lockstep_steps_one_by_one(bool grouped, int N, std::int64_t m, bool training) {
  std::vector<std::int64_t> next_f(static_cast<std::size_t>(N), 0), next_b(static_cast<std::size_t>(N), 0);
  std::vector<std::vector<LockstepTask>> steps;
  for (std::int64_t t = 0; (training && next_b[0] < m) || next_f[static_cast<std::size_t>(N - 1)] < m; ++t) {
    std::vector<LockstepTask> step;
    for (int s = 0; s < N; ++s) {
      const auto i = static_cast<std::size_t>(s);
      const bool forward = !training || (grouped ? t < N || (t - N) % 2 == 1 : (t - s) % 2 == 0);
      if (forward && next_f[i] < m && (s == 0 || next_f[i - 1] > next_f[i])) step.push_back({s, next_f[i], false});
      const std::int64_t ready = s == N - 1 ? next_f[i] : (s + 1 < N ? next_b[i + 1] : 0);
      if (!forward && next_b[i] < m && ready > next_b[i]) step.push_back({s, next_b[i], true});
    }
    for (const LockstepTask& task : step) ++(task.backward ? next_b : next_f)[static_cast<std::size_t>(task.stage)];
    if (!step.empty()) steps.push_back(step);
  }
  return steps;
}

} // namespace

TEST_CASE("TF lockstep runs: the folded steady state, skipped ahead, expands to the rule stepped one by one",
          "[schedule]") {
  // The folder takes the periods of the steady state as matched at once (O(N) steps, not O(G));
  // expanded, its runs must be the rule's steps exactly, ramps and the end included.
  int compared = 0;
  for (const bool grouped : {true, false})
    for (const bool training : {true, false})
      for (int N = 1; N <= 5; ++N)
        for (std::int64_t m = 1; m <= 64; ++m) {
          const std::int64_t unit = grouped ? (training ? 2 * N : N) : N;
          if (m < unit || m % unit != 0) continue;
          INFO((grouped ? "grouped" : "interleaved") << " N " << N << " m " << m << (training ? " training" : ""));
          std::vector<std::vector<LockstepTask>> expanded;
          std::size_t runs_longer_than_two = 0;
          for (const LockstepRun& run : tf_lockstep_runs(grouped ? "tf-grouped" : "tf-interleaved", N, m, training)) {
            runs_longer_than_two += run.times > 2 ? 1 : 0;
            for (std::int64_t k = 0; k < run.times; ++k)
              for (auto step : run.body) {
                for (LockstepTask& task : step) task.micro_batch += k;
                expanded.push_back(step);
              }
          }
          const auto want = lockstep_steps_one_by_one(grouped, N, m, training);
          REQUIRE(expanded.size() == want.size());
          for (std::size_t i = 0; i < want.size(); ++i) {
            REQUIRE(expanded[i].size() == want[i].size());
            for (std::size_t j = 0; j < want[i].size(); ++j) {
              CHECK(expanded[i][j].stage == want[i][j].stage);
              CHECK(expanded[i][j].micro_batch == want[i][j].micro_batch);
              CHECK(expanded[i][j].backward == want[i][j].backward);
            }
          }
          if (m >= 8 * unit) CHECK(runs_longer_than_two == 1);  // a long steady state is one run
          ++compared;
        }
  // Depths up to 64 the rules allow: Grouped training 32+16+10+8+6 (multiples of 2N), Grouped
  // inference and Interleaved either way 64+32+21+16+12 each (multiples of N): 72 + 3 x 145.
  CHECK(compared == 507);
  // G = 4 x 10^6, Grouped over 4 stages: a handful of runs, the steady one 4 x 10^6 - 5 periods long.
  const auto runs = tf_lockstep_runs("tf-grouped", 4, 4000000, true);
  CHECK(runs.size() < 20);
}

TEST_CASE("TF depth rules accept and reject the right depths", "[schedule]") {
  const Json two = chain_model({{0, 1e6}, {1, 1e6}}, 250);  // N = 2
  const Json config = zero_overhead_config(2);
  auto rule = [&](const std::string& schedule, int G) {
    return rule_of([&] { schedule_of(two, config, training(schedule, G)); });
  };
  // Grouped, training: a multiple of 2N = 4, and at least 4.
  CHECK(rule("tf-grouped", 2) == "pipeline.depth");
  CHECK(rule("tf-grouped", 6) == "pipeline.depth");
  CHECK(rule("tf-grouped", 4).empty());
  CHECK(rule("tf-grouped", 8).empty());
  // Interleaved: a multiple of N = 2.
  CHECK(rule("tf-interleaved", 3) == "pipeline.depth");
  CHECK(rule("tf-interleaved", 2).empty());
  // Sequential: any depth.
  CHECK(rule("tf-sequential", 3).empty());
  // Grouped, inference: a multiple of N and at least N.
  const Json inference = {{"batchesPerStep", 3}, {"hostIo", false}, {"schedule", "tf-grouped"}};
  CHECK(rule_of([&] { schedule_of(two, config, inference); }) == "pipeline.depth");
  // Interleaved cannot put two forward stages on one IPU when training.
  const Json wrap = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 250);
  CHECK(rule_of([&] { schedule_of(wrap, config, training("tf-interleaved", 3)); }) ==
        "pipeline.interleaved-shared-ipu");
}

TEST_CASE("PopART stash depth is 2(P-1-k)+1, counted in merged stages when stages wrap", "[schedule][memory]") {
  CHECK(schedule_of(four_equal, fast_links, training("popart", 8)).stash_depth == std::vector<int>{7, 5, 3, 0});
  // BERT-style wrap: stages 0 (IPU0), 1 (IPU1), 2 (back on IPU0); L = 2.
  const Json wrap = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 250);
  CHECK(schedule_of(wrap, zero_overhead_config(2), training("popart", 8)).stash_depth == std::vector<int>{5, 3, 0});
  // Consecutive stages on one IPU merge first: stages 0,1 on IPU0, 2 on IPU1 -> P = 2.
  const Json merged = chain_model({{0, 1e6, 0}, {0, 1e6, 1}, {1, 1e6, 2}}, 250);
  CHECK(schedule_of(merged, zero_overhead_config(2), training("popart", 8)).stash_depth == std::vector<int>{3, 0});
}

TEST_CASE("pipeline recomputation adds one forward per backward stage and stashes only what crosses in",
          "[schedule][memory]") {
  // IPU0: two ops of 1 ms (x -> a1 -> a2); IPU1: one op of 3 ms. G = 4, copies 1 us.
  const Json model = chain_model({{0, 1e6}, {0, 1e6}, {1, 3e6}}, 250);
  Json execution = training("popart", 4);
  const RunMetrics plain = run_pipelined(model, zero_overhead_config(2), execution);
  execution["recomputation"] = "pipeline";
  const RunMetrics recomputed = run_pipelined(model, zero_overhead_config(2), execution);
  // Cycles (IPU0 | IPU1): c0 2 | -; c1 2 | 3+6; c2 2+4(+2) | 9; c3 2+4(+2) | 9; c4 4(+2) | 9; c5 4(+2) | -.
  CHECK(plain.step_time_s == Approx((2 + 9 + 9 + 9 + 9 + 4) * ms + 6 * us).epsilon(1e-9));
  CHECK(recomputed.step_time_s == Approx((2 + 9 + 9 + 9 + 9 + 6) * ms + 6 * us).epsilon(1e-9));
  // Stage 0 reads x and a1 (2 x 1000 B) without recomputation; with it only x enters from outside.
  REQUIRE(plain.memory.stashes.size() == 1);
  CHECK(plain.memory.stashes[0].slot_bytes == 2000);
  CHECK(plain.memory.stashes[0].depth == 3);
  CHECK(recomputed.memory.stashes[0].slot_bytes == 1000);
}

TEST_CASE("scenario.too-large: an impossible depth is refused before simulating", "[schedule]") {
  const Json two = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  // 10^8 micro-batches through 3 training stages: 3 x 10^8 steps at least, beyond 2 x 10^8.
  const Scenario sc = make_scenario(two, zero_overhead_config(2), training("popart", 100000000));
  const Plan plan = make_plan(sc, build_graph(sc.model));
  try {
    estimate_run(sc, plan, {Mode::Pipelined}, false);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.rule() == "scenario.too-large");
    CHECK(e.pointer() == "/execution/gradientAccumulation");
    CHECK_THAT(e.message(), Contains("100000000 micro-batches") && Contains("3 stages"));
  }
  CHECK(rule_of([&] { simulate(sc, {Mode::Pipelined}); }) == "scenario.too-large");
}

TEST_CASE("the run estimate counts exactly the steps and transfers the schedules build", "[schedule]") {
  const Json three = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}}, 250);
  for (const std::string name : {"popart", "tf-grouped", "gpipe", "1f1b"}) {
    Json execution = training(name, 12);
    execution["replicas"] = 1;
    const Scenario sc = make_scenario(three, zero_overhead_config(3), execution);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    // Programs are compact: the steps they run are counted by walking them, repeats expanded.
    const Schedule built = make_schedule(Mode::Pipelined, sc, plan);
    std::uint64_t steps = 0, transfers = 0;
    for (const Program& p : built.programs)
      for (ProgramCursor c(p); !c.done(); c.advance()) ++steps, transfers += c.step().transfers.size();
    INFO(name);
    const RunEstimate estimate = estimate_run(sc, plan, {Mode::Pipelined}, false);
    CHECK(estimate.steps == steps);
    CHECK(estimate.transfers == transfers);
    CHECK(steps > 12 * 3);  // every micro-batch passes every IPU, forward and backward
  }
}

TEST_CASE("registry: each schedule's planner rule is the rule its builder enforces", "[schedule][registry]") {
  // Three forward stages on three IPUs, and three on two (the last back on IPU 0, as BERT's
  // heads): every registered pipeline schedule the planner searches, training and inference,
  // depths 1-12. The planner's rule (ScheduleInfo::accepts) must accept exactly the depths and
  // placements its builder builds; the one documented exception is training 1F1B with stages
  // sharing an IPU, which builds from its order but has no exact evaluator, so is not searched.
  const Json config = zero_overhead_config(3);
  const std::vector<std::pair<Json, bool>> models{{chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {2, 1e6, 2}}, 250), false},
                                                   {chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 250), true}};
  int searched = 0;
  for (const ScheduleInfo& info : schedules()) {
    if (!info.pipeline || info.step_model == StepModel::None) continue;
    ++searched;
    REQUIRE(info.accepts != nullptr);
    REQUIRE(info.stash_depth != nullptr);
    for (const auto& [model, shares_ipu] : models)
      for (bool training : {true, false})
        for (int depth = 1; depth <= 12; ++depth) {
          // PopART without accumulation pipelines batchesPerStep micro-batches: the planner passes that depth.
          Json ex = {{"training", training}, {"hostIo", false}, {"costModel", "compute"}, {"schedule", info.name},
                     {"mode", "pipelined"}, {"gradientAccumulation", training ? depth : 1},
                     {"batchesPerStep", training && !(info.lockstep_cycles && depth == 1) ? 1 : depth}};
          INFO(info.name << (shares_ipu ? ", stages sharing IPU 0" : "") << (training ? ", training" : ", inference")
                         << ", depth " << depth);
          bool built = true;
          try {
            schedule_of(model, config, ex);
          } catch (const InputError& e) {
            built = false;
            CHECK_THAT(e.rule(), Contains("pipeline."));
          }
          const bool accepted = info.accepts(3, shares_ipu, depth, training);
          if (info.name == "1f1b" && training && shares_ipu) CHECK((built && !accepted));
          else CHECK(built == accepted);
        }
  }
  CHECK(searched == 6);  // popart, tf-grouped, tf-interleaved, tf-sequential, gpipe, 1f1b
}

TEST_CASE("registry: names, modes and what-if schedules come from the entries", "[schedule][registry]") {
  REQUIRE(find_schedule("popart") != nullptr);
  CHECK(find_schedule("nope") == nullptr);
  CHECK_THROWS_AS(schedule_info("nope"), std::invalid_argument);
  CHECK_FALSE(schedule_info("sharded").pipeline);
  CHECK_FALSE(schedule_info("phased").pipeline);
  // What-if: no IPU framework runs it; GPU-style updates all at once; only GPipe's forwards (and
  // 1F1B's in inference) run ahead of the stages after them.
  for (const ScheduleInfo& s : schedules())
    CHECK(is_what_if_schedule(s.name) == (s.name != "sharded" && s.name != "phased" && s.name != "popart" &&
                                          s.name.rfind("tf-", 0) != 0));
  CHECK_FALSE(schedule_info("gpipe").follows_weight_update_setting);
  CHECK(schedule_info("tf-grouped").follows_weight_update_setting);
  CHECK(schedule_info("gpipe").forwards_run_ahead(true));
  CHECK_FALSE(schedule_info("1f1b").forwards_run_ahead(true));
  CHECK(schedule_info("1f1b").forwards_run_ahead(false));
  CHECK_FALSE(schedule_info("popart").forwards_run_ahead(false));
  // Stash depths by entry, p = 4 forward stages, depth 8: popart 2(3-s)+1 (none for the loss
  // stage), tf-grouped 2(3-s), tf-interleaved 3-s, tf-sequential 1 (none for the last), gpipe 8,
  // 1f1b min(4-s, 8); none in inference, none for an order schedule (read from its order).
  CHECK(stash_depths("popart", 4, 8, true) == std::vector<int>{7, 5, 3, 0});
  CHECK(stash_depths("tf-grouped", 4, 8, true) == std::vector<int>{6, 4, 2, 0});
  CHECK(stash_depths("tf-interleaved", 4, 8, true) == std::vector<int>{3, 2, 1, 0});
  CHECK(stash_depths("tf-sequential", 4, 8, true) == std::vector<int>{1, 1, 1, 0});
  CHECK(stash_depths("gpipe", 4, 8, true) == std::vector<int>{8, 8, 8, 8});
  CHECK(stash_depths("1f1b", 4, 8, true) == std::vector<int>{4, 3, 2, 1});
  CHECK(stash_depths("popart", 4, 8, false) == std::vector<int>{0, 0, 0, 0});
  CHECK(stash_depths("zb-h1", 4, 8, true) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("a copy's transfers cross their route one after another, in the order they were posted",
          "[schedule][engine][estimate]") {
  // Two stages of 1 ms on two IPUs (1 MFLOP at the config's rate); each micro-batch's copy of
  // 1,000 bytes takes 1 s on a 1 kB/s link. GPipe in inference posts micro-batch k's copy at
  // (k + 1) ms; one after another, copy k starts when copy k - 1 arrives and arrives at
  // (k + 1) s + 1 ms, and the second stage runs micro-batch k until (k + 1) s + 2 ms. So the step
  // is G s + 2 ms and micro-batch k's latency (k + 1) s + (2 - k) ms: 1.002 s the least, G s +
  // (3 - G) ms the most, (G + 1) / 2 s + (2 - (G - 1) / 2) ms on average. Shared among all of them
  // at once, every copy would arrive near the end (the mean latency near G s).
  constexpr int G = 5;
  const Json two = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  Json execution = training("gpipe", G);
  execution["training"] = false;
  execution.erase("gradientAccumulation");
  execution["batchesPerStep"] = G;
  execution["replicas"] = 1;
  const RunMetrics m = run_pipelined(two, zero_overhead_config(2, 1e3), execution);
  CHECK(m.step_time_s == Approx(G + 2 * ms).epsilon(1e-9));
  CHECK(m.latency_s.min == Approx(1 + 2 * ms).epsilon(1e-9));
  CHECK(m.latency_s.max == Approx(G + (3 - G) * ms).epsilon(1e-9));
  CHECK(m.latency_s.mean == Approx((G + 1) / 2.0 + (2 - (G - 1) / 2.0) * ms).epsilon(1e-9));
  // The estimate counts the copies that queue: all but the first, as G x (1 - 1 ms / 1 s).
  const Scenario sc = make_scenario(two, zero_overhead_config(2, 1e3), execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  CHECK(run_ahead(sc, plan, Mode::Pipelined, make_schedule(Mode::Pipelined, sc, plan)).backed_up_copies ==
        Approx(G * (1 - 1e-3)));
}

TEST_CASE("a schedule whose faster stages run ahead of its slower ones is known to cost the engine O(G)",
          "[schedule][estimate]") {
  // Two stages on two IPUs at the config's rate (1 MFLOP: 1 ms). GPipe's forwards, and 1F1B's in
  // inference, are posted without waiting for the next stage: where the second stage (or the
  // copy) is slower than the first, the first runs ahead at its own rate and no period common to
  // both repeats until it is done, so the steps the engine simulates grow with the micro-batches;
  // where the first is the slower or they are equal, the second waits for each copy, both run at
  // one rate, and the engine skips the periods whatever their number.
  auto check = [&](const std::string& schedule, bool train, double first_flops, double second_flops,
                   double link_bandwidth) {
    const Json two = chain_model({{0, first_flops}, {1, second_flops}}, 250);
    auto execution = [&](int micro_batches) {
      Json e = training(schedule, micro_batches);
      e["replicas"] = 1;
      if (!train) {
        e["training"] = false;
        e.erase("gradientAccumulation");
        e["batchesPerStep"] = micro_batches;
      }
      return e;
    };
    const Json config = zero_overhead_config(2, link_bandwidth);
    const Scenario sc = make_scenario(two, config, execution(512));
    const Plan plan = make_plan(sc, build_graph(sc.model));
    const bool grows =
        run_ahead(sc, plan, Mode::Pipelined, make_schedule(Mode::Pipelined, sc, plan)).grows_with_micro_batches;
    const std::int64_t at_512 = run_pipelined(two, config, execution(512)).simulation.steps_simulated;
    const std::int64_t at_1024 = run_pipelined(two, config, execution(1024)).simulation.steps_simulated;
    INFO(schedule << (train ? " training " : " inference ") << first_flops << " / " << second_flops << " flops: "
                  << at_512 << " steps simulated at 512 micro-batches, " << at_1024 << " at 1024");
    CHECK((at_1024 > at_512 * 5 / 4) == grows);
    return grows;
  };
  CHECK(check("gpipe", false, 1e6, 2e6, 1e13));
  CHECK_FALSE(check("gpipe", false, 1e6, 1e6, 1e13));
  CHECK_FALSE(check("gpipe", false, 2e6, 1e6, 1e13));
  CHECK(check("gpipe", false, 1e6, 1e6, 1e5));  // the copy (10 ms on a 100 kB/s link) is slower than the stages
  CHECK(check("1f1b", false, 1e6, 2e6, 1e13));
  CHECK_FALSE(check("popart", false, 1e6, 2e6, 1e13));  // lockstep
  // In training GPipe's backwards run ahead too: IPU 1's (2 ms) outpace IPU 0's (4 ms and the
  // 2 ms forward it recomputes), though the forwards keep in step.
  CHECK(check("gpipe", true, 2e6, 1e6, 1e13));
  CHECK_FALSE(check("1f1b", true, 1e6, 2e6, 1e13));  // each forward waits for a backward
}
