// The planner's evaluator against the discrete-event engine, and its search against brute force.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/plan/plan.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/planner.hpp"
#include "sim/search/split_costs.hpp"
#include "sim/simulate/simulation.hpp"
#include "cli_runner.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

// A random chain over `ipus` IPUs (each used, in order, with possibly several ops), random FLOPs
// and weights; a config with random link bandwidth, latencies, host link and sync cost.
struct RandomCase {
  Json model, config, execution;
};

RandomCase random_case(std::mt19937& rng, int trial) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int ipus = integer(2, 4);
  std::vector<ChainOp> ops;
  for (int ipu = 0; ipu < ipus; ++ipu)
    for (int k = integer(1, 3); k > 0; --k) ops.push_back({ipu, uniform(1e4, 1e6), -1, integer(0, 1) * integer(100, 5000)});
  const bool training = trial % 3 != 0;
  const int replicas = trial % 4 == 1 ? 2 : 1;
  Json config = zero_overhead_config(ipus * replicas, uniform(1e8, 1e10));
  for (auto& link : config["links"]) link["latencySeconds"] = uniform(0, 2e-6);
  config["hostLink"] = {{"bandwidthBytesPerSecond", uniform(1e8, 1e10)}, {"latencySeconds", uniform(0, 5e-6)}};
  config["syncLatencyPerHopSeconds"] = uniform(0, 1e-6);
  Json ex = {{"mode", "pipelined"}, {"training", training}, {"costModel", "compute"},
             {"microBatchSize", integer(1, 4)}, {"replicas", replicas}, {"hostIo", trial % 5 != 0}};
  const int S = training ? 2 * ipus - 1 : ipus;
  if (training) {
    ex["gradientAccumulation"] = S + integer(0, 6);
    ex["batchesPerStep"] = integer(1, 2);
    ex["recomputation"] = trial % 2 ? "pipeline" : "none";
  } else {
    ex["batchesPerStep"] = S + integer(0, 6);
  }
  return {chain_model(ops, integer(10, 2000)), config, ex};
}

} // namespace

TEST_CASE("Evaluator: PopART's step time equals the engine's on random plans without contention", "[planner]") {
  std::mt19937 rng(13);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const RandomCase c = random_case(rng, trial);
    const Scenario sc = make_scenario(c.model, c.config, c.execution);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    const StepEstimate e = estimate_popart_step(sc, plan);
    INFO("trial " << trial << ": " << c.execution.dump());
    REQUIRE(e.exact);  // full mesh, one host link per IPU: nothing is shared
    const Simulation sim = simulate(sc, {Mode::Pipelined});
    CHECK(e.step_seconds == Approx(sim.runs.at(0).metrics.step_time_s).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared == 40);
}

TEST_CASE("Evaluator: a hand-computed lockstep step", "[planner]") {
  // Two IPUs, inference, 1e6 FLOPs each (1 ms at 1 GFLOP/s), 250 floats copied over 1e9 B/s
  // (1 us), host streams of 1000 B at 1e9 B/s (1 us each way), no sync: D = 4, S = 2, 5 cycles.
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const Scenario sc = make_scenario(model, zero_overhead_config(2),
                                    {{"mode", "pipelined"}, {"costModel", "compute"}, {"batchesPerStep", 4}});
  const StepEstimate e = estimate_popart_step(sc, make_plan(sc, build_graph(sc.model)));
  // Every cycle: 1 ms compute + 1 us host stream on the busier IPU, then the 1 us copy phase.
  CHECK(e.step_seconds == Approx(5 * (1e-3 + 1e-6 + 1e-6)).epsilon(1e-12));
  CHECK(e.exact);
}

TEST_CASE("Planner: contiguous splits are the compositions of the layers", "[planner]") {
  CHECK(contiguous_splits(24, 4).size() == 1771);  // C(23, 3)
  CHECK(contiguous_splits(4, 2) == std::vector<std::vector<int>>{{1, 3}, {2, 2}, {3, 1}});
  CHECK(contiguous_splits(2, 3).empty());
}

namespace {

// stem -> layer0 ... layer(L-1) -> head: a chain renamed so the planner finds L layers, a stem and heads;
// layers of random cost, each with its own weight.
Json layered_model(std::mt19937& rng, int layers) {
  std::vector<ChainOp> ops{{0, 2e5, -1, 300}};
  for (int l = 0; l < layers; ++l)
    ops.push_back({0, std::uniform_real_distribution<double>(2e5, 2e6)(rng), -1,
                   std::uniform_int_distribution<int>(1000, 20000)(rng)});
  ops.push_back({0, 3e5, -1, 500});
  Json model = chain_model(ops, 500);
  for (std::size_t i = 0; i < model["ops"].size(); ++i)
    model["ops"][i]["name"] = i == 0 ? std::string("stem/op")
                              : i + 1 == model["ops"].size() ? std::string("head/op")
                                                             : "layer" + std::to_string(i - 1) + "/matmul";
  return model;
}

} // namespace

TEST_CASE("Planner: its best equals brute force with the engine over every split", "[planner]") {
  std::mt19937 rng(7);
  const int L = 6, N = 3;
  const Json model = layered_model(rng, L);
  Json config = zero_overhead_config(N, 2e9);
  config["links"][0]["latencySeconds"] = 1e-6;
  const Json ex = {{"mode", "pipelined"}, {"training", true}, {"costModel", "compute"}, {"gradientAccumulation", 8},
                   {"microBatchSize", 2}};
  const Scenario roomy = make_scenario(model, config, ex);
  PlanSearchOptions options;
  options.ipus = N;
  const PlanSearch unconstrained = search_plans(roomy, options);
  REQUIRE(!unconstrained.ranked.empty());
  // SRAM one byte short of what the unconstrained best needs: memory now decides between splits.
  const Candidate& first = unconstrained.ranked.front();
  config["ipu"]["sramBytesPerTile"] = static_cast<std::int64_t>(std::ceil((1 << 30) - first.headroom_bytes)) - 1;
  const Scenario sc = make_scenario(model, config, ex);
  const PlanSearch search = search_plans(sc, options);
  REQUIRE(!search.ranked.empty());
  CHECK(search.out_of_memory > 0);

  // Brute force: every composition of L layers over N IPUs (boundaries as bit masks), heads on
  // IPU 0 or the last IPU, recomputation off and on, each simulated by the engine.
  const LayerStructure layers = detect_layers(sc.model);
  REQUIRE(layers.names.size() == static_cast<std::size_t>(L));
  double best_throughput = 0;
  Candidate best;
  for (int mask = 0; mask < (1 << (L - 1)); ++mask) {
    if (__builtin_popcount(static_cast<unsigned>(mask)) != N - 1) continue;
    std::vector<int> split{1};
    for (int b = 0; b < L - 1; ++b) {
      if (mask & (1 << b)) split.push_back(1);
      else ++split.back();
    }
    for (bool heads_on_last : {false, true})
      for (bool recompute : {false, true}) {
        Candidate c;
        c.layers_per_ipu = split;
        c.heads_on_last = heads_on_last;
        c.recompute = recompute;
        c.gradient_accumulation = 8;
        const Simulation sim = simulate(candidate_scenario(sc, layers, c), {Mode::Pipelined});
        const RunMetrics& m = sim.runs.at(0).metrics;
        if (!m.memory.fits) continue;
        if (m.throughput_samples_per_s > best_throughput * (1 + 1e-12)) best_throughput = m.throughput_samples_per_s, best = c;
      }
  }
  const Candidate& planned = search.ranked.front();
  CHECK(planned.layers_per_ipu == best.layers_per_ipu);
  CHECK(planned.heads_on_last == best.heads_on_last);
  CHECK(planned.recompute == best.recompute);
  CHECK(planned.throughput == Approx(best_throughput).epsilon(1e-9));
}

TEST_CASE("ipusim plan: the real binary ranks, confirms, writes a runnable best and never overwrites", "[planner][cli]") {
  std::mt19937 rng(11);
  TempDir dir;
  const Json execution = {{"mode", "pipelined"}, {"training", true}, {"costModel", "compute"},
                          {"gradientAccumulation", 8}, {"microBatchSize", 2}};
  dir.write("model.json", layered_model(rng, 5));
  dir.write("config.json", zero_overhead_config(3, 2e9));
  const std::string scenario = dir.write(
      "scenario.json", Json{{"name", "planned"}, {"model", "model.json"}, {"config", "config.json"}, {"execution", execution}});
  const std::string prefix = dir / "best";
  const Result r = run_ipusim({"plan", scenario, "--ipus", "3", "--top", "2", "--write", prefix});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("#1 [") != std::string::npos);
  CHECK(r.out.find("#2 [") != std::string::npos);
  CHECK(r.out.find("loses to #1") != std::string::npos);
  CHECK(r.out.find("(exact: no contention)") != std::string::npos);

  // The written scenario runs, and the engine's throughput is the planner's best.
  std::mt19937 same_rng(11);  // the same model as written above
  const Scenario sc = make_scenario(layered_model(same_rng, 5),
                                    zero_overhead_config(3, 2e9), execution);
  PlanSearchOptions options;
  options.ipus = 3;
  const PlanSearch search = search_plans(sc, options);
  const Result run = run_ipusim({"run", prefix + ".scenario.json", "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const Json report = Json::parse(run.out);
  CHECK(report["runs"][0]["throughputSamplesPerSecond"].get<double>() ==
        Approx(search.ranked.front().throughput).epsilon(1e-9));

  // Existing files are kept without --force, and replaced with it.
  const Result again = run_ipusim({"plan", scenario, "--ipus", "3", "--write", prefix});
  CHECK(again.exit_code == 2);
  CHECK(run_ipusim({"plan", scenario, "--ipus", "3", "--write", prefix, "--force"}).exit_code == 0);
  const Result too_many = run_ipusim({"plan", scenario, "--ipus", "9"});  // 5 layers
  CHECK(too_many.exit_code == 2);
  CHECK(too_many.err.find("[plan.ipus]") != std::string::npos);
}

namespace {

// A split's plan and memory composed from the split tables against the ones `run` builds.
// Returns false when PopART refuses the split (and checks that the tables say so too).
bool composed_equals_built(const Scenario& sc, const LayerStructure& layers, const SplitCosts& table,
                           const std::vector<int>& split, bool heads_on_last) {
  Candidate c;
  c.layers_per_ipu = split;
  c.heads_on_last = heads_on_last;
  c.gradient_accumulation = sc.execution.gradient_accumulation;
  const Scenario placed = candidate_scenario(sc, layers, c);
  INFO(c.placement());
  Plan built;
  try {
    built = make_plan(placed, build_graph(placed.model));
    if (built.pipelining_refused) throw *built.pipelining_refused;
  } catch (const InputError&) {
    CHECK(table.refused(split, heads_on_last));
    return false;
  }
  REQUIRE_FALSE(table.refused(split, heads_on_last));
  const ComposedPlan composed = table.compose(split, heads_on_last);
  const Plan& p = composed.plan;
  const auto same = [](double a, double b) { return a == Approx(b).epsilon(1e-12).margin(0); };
  REQUIRE(p.stage_count() == built.stage_count());
  REQUIRE(p.loss_stage == built.loss_stage);
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const PlanStage &a = p.stages[s], &b = built.stages[s];
    INFO("stage " << s);
    CHECK(a.ipu == b.ipu);
    CHECK(a.backward == b.backward);
    CHECK(same(a.forward_seconds, b.forward_seconds));
    CHECK(same(a.backward_seconds, b.backward_seconds));
    CHECK(same(a.recompute_seconds, b.recompute_seconds));
    CHECK(a.host_input_bytes == b.host_input_bytes);
    CHECK(a.host_output_bytes == b.host_output_bytes);
    CHECK(a.weight_elements == b.weight_elements);
    CHECK(same(a.update_seconds, b.update_seconds));
    CHECK(a.state_bytes == b.state_bytes);
    if (!a.backward) CHECK(same(a.live_bytes, b.live_bytes));
  }
  REQUIRE(p.copies.size() == built.copies.size());
  for (std::size_t i = 0; i < p.copies.size(); ++i) {
    const PlanCopy &a = p.copies[i], &b = built.copies[i];
    CHECK(a.from_stage == b.from_stage);
    CHECK(a.src_ipu == b.src_ipu);
    CHECK(a.dst_ipu == b.dst_ipu);
    CHECK(a.gradient == b.gradient);
    CHECK(a.bytes == b.bytes);
  }
  REQUIRE(p.ipus.size() == built.ipus.size());
  for (std::size_t i = 0; i < p.ipus.size(); ++i) {
    const PlanIpu &a = p.ipus[i], &b = built.ipus[i];
    CHECK(a.stages == b.stages);
    CHECK(a.weight_elements == b.weight_elements);
    CHECK(a.weight_bytes == b.weight_bytes);
    CHECK(a.weight_tensors == b.weight_tensors);
    CHECK(same(a.update_seconds, b.update_seconds));
    CHECK(a.state_bytes == b.state_bytes);
    CHECK(same(a.shared_update_fraction, b.shared_update_fraction));
    CHECK(a.temp_bytes_per_tile == b.temp_bytes_per_tile);
  }
  for (bool recompute : {false, true}) {
    INFO("recomputation " << recompute);
    const MemoryReport want = estimate_memory(placed, built, popart_stash_depth(built), recompute);
    const MemoryReport got = table.memory(composed, recompute);
    REQUIRE(got.ipus.size() == want.ipus.size());
    for (std::size_t i = 0; i < got.ipus.size(); ++i) {
      CHECK(got.ipus[i].total_bytes == Approx(want.ipus[i].total_bytes).epsilon(1e-9));
      CHECK(got.ipus[i].fullest_tile_bytes == Approx(want.ipus[i].fullest_tile_bytes).epsilon(1e-9));
      CHECK(got.ipus[i].fits == want.ipus[i].fits);
    }
    Scenario timed = placed;
    timed.execution.recomputation = recompute ? Recomputation::Pipeline : Recomputation::None;
    CHECK(same(estimate_popart_step(timed, p).step_seconds, estimate_popart_step(timed, built).step_seconds));
  }
  return true;
}

} // namespace

TEST_CASE("Split tables: composed plans and memory equal the built ones (BERT-tiny, every split)", "[planner]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-tiny-training.json");
  const LayerStructure layers = detect_layers(sc.model);
  REQUIRE(layers.names.size() == 4);
  int compared = 0, refused = 0;
  for (int ipus = 2; ipus <= 4; ++ipus) {
    const SplitCosts table(sc, layers, ipus);
    REQUIRE(table.usable());
    for (const auto& split : contiguous_splits(4, ipus))
      for (bool heads_on_last : {false, true}) (composed_equals_built(sc, layers, table, split, heads_on_last) ? compared : refused)++;
  }
  CHECK(compared == 3 + 3 + 1);    // heads back on IPU 0; on the last IPU the tied embedding is refused
  CHECK(refused == 7);
}

TEST_CASE("Split tables: composed plans and memory equal the built ones (BERT-Large, POD16)", "[planner]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json");
  const LayerStructure layers = detect_layers(sc.model);
  const SplitCosts table(sc, layers, 4);
  REQUIRE(table.usable());
  for (const auto& split : std::vector<std::vector<int>>{{3, 7, 7, 7}, {6, 6, 6, 6}, {1, 1, 1, 21}, {21, 1, 1, 1}, {10, 5, 5, 4}})
    CHECK(composed_equals_built(sc, layers, table, split, false));
  CHECK_FALSE(composed_equals_built(sc, layers, table, {6, 6, 6, 6}, true));
}

TEST_CASE("Planner: the split tables rank as building every plan does", "[planner]") {
  Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-tiny-training.json");
  PlanSearchOptions options;
  options.ipus = 3;
  options.gradient_accumulation = {8, 32};
  options.recheck = 0;
  // SRAM a byte short of the most any candidate needs: memory now rules some out.
  double most = 0;
  for (const Candidate& c : search_plans(sc, options).ranked)
    most = std::max(most, static_cast<double>(sc.hardware.ipu.sram_bytes_per_tile) - c.headroom_bytes);
  sc.hardware.ipu.sram_bytes_per_tile = static_cast<std::int64_t>(std::floor(most)) - 1;
  const PlanSearch fast = search_plans(sc, options);
  options.full_plans_only = true;
  const PlanSearch full = search_plans(sc, options);
  CHECK(fast.evaluated == full.evaluated);
  CHECK(fast.out_of_memory == full.out_of_memory);
  CHECK(fast.refused == full.refused);
  CHECK(fast.first_refusal == full.first_refusal);
  CHECK(full.out_of_memory > 0);
  REQUIRE(fast.ranked.size() == full.ranked.size());
  REQUIRE(!full.ranked.empty());
  for (std::size_t i = 0; i < fast.ranked.size(); ++i) {
    CHECK(fast.ranked[i].placement() == full.ranked[i].placement());
    CHECK(fast.ranked[i].throughput == Approx(full.ranked[i].throughput).epsilon(1e-12));
    CHECK(fast.ranked[i].headroom_bytes == Approx(full.ranked[i].headroom_bytes).epsilon(1e-9));
  }
}
