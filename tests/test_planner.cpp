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

// `group`: tensor-parallel groups of that many IPUs (the system `group` times larger).
RandomCase random_case(std::mt19937& rng, int trial, int group = 1) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int ipus = integer(2, 4);
  std::vector<ChainOp> ops;
  for (int ipu = 0; ipu < ipus; ++ipu)
    for (int k = integer(1, 3); k > 0; --k) ops.push_back({ipu, uniform(1e4, 1e6), -1, integer(0, 1) * integer(100, 5000)});
  const bool training = trial % 3 != 0;
  const int replicas = trial % 4 == 1 ? 2 : 1;
  Json config = zero_overhead_config(ipus * replicas * group, uniform(1e8, 1e10));
  for (auto& link : config["links"]) link["latencySeconds"] = uniform(0, 2e-6);
  config["hostLink"] = {{"bandwidthBytesPerSecond", uniform(1e8, 1e10)}, {"latencySeconds", uniform(0, 5e-6)}};
  config["syncLatencyPerHopSeconds"] = uniform(0, 1e-6);
  // Some behind an IPU-Gateway, streams prefetched, and the host's turn after each run.
  if (trial % 3 == 2) {
    config["hostLink"]["gatewayBandwidthBytesPerSecond"] = uniform(1e8, 1e10);
    config["hostLink"]["runOverheadSeconds"] = uniform(0, 1e-3);
  }
  Json ex = {{"mode", "pipelined"}, {"training", training}, {"costModel", "compute"},
             {"microBatchSize", integer(1, 4)}, {"replicas", replicas}, {"hostIo", trial % 5 != 0},
             {"tensorParallel", group}};
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

namespace {

// Every schedule's evaluator against the engine on random chains: exact wherever no two
// transfers share a link (it says when they would, and those trials are not compared).
// "sharded" compares the sharded mode's evaluator (estimate_sharded_step) instead.
void compare_with_engine(const std::string& schedule, int trials, int least_compared, int group = 1) {
  const bool sharded = schedule == "sharded";
  std::mt19937 rng(13);
  int compared = 0;
  for (int trial = 0; trial < trials; ++trial) {
    RandomCase c = random_case(rng, trial, group);
    Json& ex = c.execution;
    ex["schedule"] = sharded ? "popart" : schedule;
    const bool training = ex["training"].get<bool>();
    const int N = static_cast<int>(c.config["ipuCount"].get<int>() / ex["replicas"].get<int>() / group);
    const char* depth = training ? "gradientAccumulation" : "batchesPerStep";
    const int d = ex[depth].get<int>();
    if (schedule == "tf-grouped") ex[depth] = (training ? 2 * N : N) * (1 + d % 3);
    if (schedule == "tf-interleaved") ex[depth] = N * (1 + d % 3);
    const Scenario sc = make_scenario(c.model, c.config, ex);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    RouteTable routes(sc.hardware);
    const StepEstimate e = sharded ? estimate_sharded_step(sc.execution, plan, routes) : estimate_step(sc, plan);
    INFO(schedule << " trial " << trial << ": " << ex.dump());
    if (!e.exact()) continue;
    const Simulation sim = simulate(sc, {sharded ? Mode::Sharded : Mode::Pipelined}, SimulateOptions{false});
    CHECK(e.step_seconds == Approx(sim.runs.at(0).metrics.step_time_s).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared >= least_compared);
}

} // namespace

TEST_CASE("Evaluator: PopART's step time equals the engine's on random plans without contention", "[planner]") {
  compare_with_engine("popart", 40, 40);  // full mesh, one host link per IPU: nothing is shared
}

TEST_CASE("Evaluator: with tensor-parallel groups of 2, copies run between the groups' first IPUs as in the engine",
          "[planner][tensor-parallel]") {
  // Every link its own random latency: a copy timed between the wrong IPUs shows.
  compare_with_engine("popart", 30, 30, 2);
}

TEST_CASE("Evaluator: TensorFlow's lockstep schedules equal the engine's step on random plans", "[planner]") {
  for (const char* schedule : {"tf-grouped", "tf-interleaved", "tf-sequential"}) compare_with_engine(schedule, 30, 30);
}

TEST_CASE("Evaluator: GPipe and 1F1B equal the engine's step where no copies overlap on a link", "[planner]") {
  // A copy still in flight when the next micro-batch's is sent shares its link: those trials are flagged.
  for (const char* schedule : {"gpipe", "1f1b"}) compare_with_engine(schedule, 30, 10);
}

TEST_CASE("Evaluator: the sharded mode's step equals the engine's on random plans", "[planner][fast]") {
  compare_with_engine("sharded", 40, 40);  // one stage at a time: nothing is shared
}

TEST_CASE("Evaluator: a hand-computed lockstep step", "[planner]") {
  // Two IPUs, inference, 1e6 FLOPs each (1 ms at 1 GFLOP/s), 250 floats copied over 1e9 B/s
  // (1 us), host streams of 1000 B at 1e9 B/s (1 us each way), no sync: D = 4, S = 2, 5 cycles.
  const Json model = chain_model({{0, 1e6}, {1, 1e6}}, 250);
  const Scenario sc = make_scenario(model, zero_overhead_config(2),
                                    {{"mode", "pipelined"}, {"costModel", "compute"}, {"batchesPerStep", 4}});
  const StepEstimate e = estimate_step(sc, make_plan(sc, build_graph(sc.model)));
  // Every cycle: 1 ms compute + 1 us host stream on the busier IPU, then the 1 us copy phase.
  CHECK(e.step_seconds == Approx(5 * (1e-3 + 1e-6 + 1e-6)).epsilon(1e-12));
  CHECK(e.exact());
  // The main cycles are one costed D-S+1 times: with D = 1000 the step is 1001 such cycles.
  const Scenario deep = make_scenario(model, zero_overhead_config(2),
                                      {{"mode", "pipelined"}, {"costModel", "compute"}, {"batchesPerStep", 1000}});
  CHECK(estimate_step(deep, make_plan(deep, build_graph(deep.model))).step_seconds ==
        Approx(1001 * (1e-3 + 1e-6 + 1e-6)).epsilon(1e-12));
}

TEST_CASE("Evaluator: GPipe in closed form, a slower second stage at 10^8 micro-batches", "[planner]") {
  // Two IPUs, inference: IPU 0 streams a micro-batch in (1 us) and computes 1e6 FLOPs (1 ms),
  // IPU 1 computes 2e6 (2 ms) and streams out (1 us), the copy between them takes 1 us. IPU 1
  // never waits after the first: the batch ends after (1 ms + 1 us) + 1 us + D (2 ms + 1 us).
  const Json model = chain_model({{0, 1e6}, {1, 2e6}}, 250);
  const double D = 1e8;  // the most batchesPerStep may be; played task by task, seconds of CPU
  const Scenario sc = make_scenario(model, zero_overhead_config(2),
                                    {{"mode", "pipelined"}, {"costModel", "compute"}, {"schedule", "gpipe"},
                                     {"batchesPerStep", static_cast<std::int64_t>(D)}});
  const StepEstimate e = estimate_step(sc, make_plan(sc, build_graph(sc.model)));
  CHECK(e.step_seconds == Approx((1e-3 + 1e-6) + 1e-6 + D * (2e-3 + 1e-6)).epsilon(1e-12));
  CHECK(e.exact());
}

TEST_CASE("Planner: contiguous splits are the compositions of the layers", "[planner]") {
  CHECK(contiguous_splits(24, 4).size() == 1771);  // C(23, 3)
  CHECK(contiguous_splits(4, 2) == std::vector<std::vector<int>>{{1, 3}, {2, 2}, {3, 1}});
  CHECK(contiguous_splits(2, 3).empty());
  // IPU 0 may hold only the stem: 24 layers over 8 IPUs, the first taking 0 or more, C(24, 7).
  CHECK(contiguous_splits(24, 8, true).size() == 346104);
  CHECK(contiguous_splits(2, 3, true, true) == std::vector<std::vector<int>>{{0, 1, 1}, {0, 2, 0}, {1, 1, 0}});
}

namespace {

// A split's plan and memory composed from the split tables against the ones `run` builds.
// Returns false when PopART refuses the split (and checks that the tables say so too).
bool composed_equals_built(const Scenario& sc, const LayerStructure& layers, const SplitCosts& table,
                           const std::vector<int>& split, bool heads_on_last, const std::string& schedule = "popart") {
  Candidate c;
  c.split.layers_per_ipu = split;
  c.split.heads_on_last = heads_on_last;
  c.settings.ipus = static_cast<int>(split.size());
  c.settings.replicas = static_cast<int>(sc.execution.replicas);
  c.settings.micro_batch = sc.execution.micro_batch_size;
  c.settings.depth = sc.execution.gradient_accumulation;
  c.settings.schedule = schedule;
  c.settings.recompute = sc.execution.recomputation == Recomputation::Pipeline;
  c.settings.state_off_chip = sc.execution.optimizer_state_off_chip;
  c.settings.rts = sc.execution.replicated_tensor_sharding;
  c.settings.weight_update = sc.execution.weight_update_schedule;
  c.settings.heads_on_last = heads_on_last;
  // availableMemoryProportion per IPU: the scenario's list where it has one per IPU, else its first value.
  const auto& amps = table.amps();
  for (std::size_t i = 0; i < split.size(); ++i) {
    const double a = sc.execution.available_memory_proportion.size() == split.size()
                         ? sc.execution.available_memory_proportion[i]
                         : sc.execution.available_memory_proportion.front();
    c.amp.push_back(a);
    c.split.amp.push_back(static_cast<int>(std::find(amps.begin(), amps.end(), a) - amps.begin()));
  }
  const Scenario placed = candidate_scenario(sc, layers, c);
  INFO(c.placement());
  Plan built;
  try {
    built = make_plan(placed, build_graph(placed.model));
    if (built.pipelining_refused) throw *built.pipelining_refused;
  } catch (const InputError&) {
    CHECK(table.refused(table.ipu_of_unit(c.split)));
    return false;
  }
  REQUIRE_FALSE(table.refused(table.ipu_of_unit(c.split)));
  const ComposedPlan composed = table.compose(c.split, placed.execution);
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
  // The search bounds PopART's copy phase by SplitCosts::cut_bytes: each forward copy between
  // consecutive IPUs carries at least that much (the hidden state crosses every cut of these models).
  const auto blocks = table.stage_blocks(c.split);
  for (std::size_t s = 0; s + 1 < split.size(); ++s) {
    double carried = 0;
    for (const PlanCopy& copy : built.copies)
      if (!copy.gradient && copy.from_stage == static_cast<int>(s)) carried = copy.bytes;
    const double least = table.cut_bytes(heads_on_last)[static_cast<std::size_t>(blocks[s + 1].first)];
    INFO("cut after IPU " << s);
    CHECK(least > 0);
    CHECK(carried >= least);
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
  const std::vector<int> stash =
      stash_depths(schedule, built.forward_stage_count, placed.execution.gradient_accumulation, placed.execution.training);
  for (bool recompute : {false, true}) {
    INFO("recomputation " << recompute);
    const MemoryReport want = estimate_memory(placed, built, stash, recompute);
    MemorySettings settings;
    settings.recompute = recompute;
    settings.state_on_chip = !placed.execution.optimizer_state_off_chip;
    settings.shards = placed.execution.replicated_tensor_sharding ? static_cast<double>(placed.execution.replicas) : 1;
    const MemoryReport got = table.memory(composed, c.split, settings, stash);
    REQUIRE(got.ipus.size() == want.ipus.size());
    for (std::size_t i = 0; i < got.ipus.size(); ++i) {
      CHECK(got.ipus[i].total_bytes == Approx(want.ipus[i].total_bytes).epsilon(1e-9));
      CHECK(got.ipus[i].fullest_tile_bytes == Approx(want.ipus[i].fullest_tile_bytes).epsilon(1e-9));
      CHECK(got.ipus[i].fits == want.ipus[i].fits);
    }
    Scenario timed = placed;
    timed.execution.recomputation = recompute ? Recomputation::Pipeline : Recomputation::None;
    CHECK(same(estimate_step(timed, p).step_seconds, estimate_step(timed, built).step_seconds));
  }
  return true;
}

SplitCosts table_of(const Scenario& sc, const LayerStructure& layers) {
  std::vector<double> amps = sc.execution.available_memory_proportion;
  std::sort(amps.begin(), amps.end());
  amps.erase(std::unique(amps.begin(), amps.end()), amps.end());
  return SplitCosts(sc, layers, sc.execution.micro_batch_size, sc.execution.gradient_accumulation > 1, amps);
}

} // namespace

TEST_CASE("Split tables: composed plans and memory equal the built ones (BERT-tiny, every split)", "[planner]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-tiny-training.json");
  const LayerStructure layers = detect_layers(sc.model);
  REQUIRE(layers.names.size() == 4);
  const SplitCosts table = table_of(sc, layers);
  REQUIRE(table.usable());
  int compared = 0, refused = 0;
  for (int ipus = 2; ipus <= 4; ++ipus)
    for (const auto& split : contiguous_splits(4, ipus, true, false))
      for (bool heads_on_last : {false, true}) (composed_equals_built(sc, layers, table, split, heads_on_last) ? compared : refused)++;
  // Heads back on IPU 0 (IPU 0 holding layers or only the embedding); on the last IPU the
  // tied embedding is refused.
  CHECK(compared == 4 + 6 + 4);
  CHECK(refused == 14);
}

TEST_CASE("Split tables: TensorFlow's stash depths, composed as built (BERT-tiny)", "[planner]") {
  // G = 48: a multiple of 2N for 3 and 4 forward stages (Grouped's rule). The tied embedding
  // keeps the heads on IPU 0, which Interleaved, GPipe and 1F1B refuse (one forward stage per IPU).
  Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-tiny-training.json");
  sc.execution.gradient_accumulation = 48;
  const LayerStructure layers = detect_layers(sc.model);
  const SplitCosts table = table_of(sc, layers);
  for (const char* schedule : {"tf-grouped", "tf-sequential"}) {
    INFO(schedule);
    CHECK(composed_equals_built(sc, layers, table, {0, 2, 2}, false, schedule));
    CHECK(composed_equals_built(sc, layers, table, {1, 3}, false, schedule));
  }
}

TEST_CASE("Split tables: composed plans and memory equal the built ones (BERT-Large, POD16)", "[planner]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json");
  const LayerStructure layers = detect_layers(sc.model);
  const SplitCosts table = table_of(sc, layers);
  REQUIRE(table.usable());
  for (const auto& split : std::vector<std::vector<int>>{{3, 7, 7, 7}, {6, 6, 6, 6}, {1, 1, 1, 21}, {21, 1, 1, 1}, {10, 5, 5, 4},
                                                        {0, 8, 8, 8}})
    CHECK(composed_equals_built(sc, layers, table, split, false));
  CHECK_FALSE(composed_equals_built(sc, layers, table, {6, 6, 6, 6}, true));
}

TEST_CASE("Split tables: a model's own checkpoints are stashed under recomputation, as built (MLPerf BERT)", "[planner]") {
  // Graphcore's MLPerf BERT marks checkpoints in every layer (builder.checkpointOutput): under
  // pipeline recomputation the stage stashes them instead of recomputing them. A table that
  // left them out said splits fit that `run` finds out of memory (on the Bow Pod256 the
  // planner's whole answer was then refused by its recheck: "no configuration fits").
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/validation/mlperf-v2.0-bert-closed-pod64.json");
  const LayerStructure layers = detect_layers(sc.model);
  REQUIRE(layers.units_per_layer == 1);
  int checkpoints = 0;
  for (const Op& op : sc.model.ops) checkpoints += is_checkpoint(op) ? 1 : 0;
  REQUIRE(checkpoints > 0);
  const SplitCosts table = table_of(sc, layers);
  REQUIRE(table.usable());
  for (const auto& split : std::vector<std::vector<int>>{{3, 3, 3, 3, 3, 3, 3, 3}, {0, 4, 4, 4, 4, 4, 4}, {2, 3, 3, 4, 4, 4, 4}})
    CHECK(composed_equals_built(sc, layers, table, split, false));
}
