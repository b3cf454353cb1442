// The planner's search against brute force over its whole space, with and without pruning,
// the binary's output, and the layer detector on the names PyTorch's exporter writes.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>

#include "sim/graph/model_graph.hpp"
#include "sim/io/layer_names.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/search/planner.hpp"
#include "sim/simulate/simulation.hpp"
#include "cli_runner.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

// stem -> layer0 ... layer(L-1) -> head: a chain renamed so the planner finds L layers, a stem
// and heads; layers of random cost, each with its own weight (Adam state: on or off chip matters).
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

Json system_with_streaming_memory(int ipus) {
  Json config = zero_overhead_config(ipus, 2e9);
  config["links"][0]["latencySeconds"] = 1e-6;
  config["streamingMemory"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}, {"sharedBy", 1}};
  return config;
}

const Json kExecution = {{"mode", "pipelined"}, {"training", true}, {"costModel", "compute"}, {"gradientAccumulation", 8},
                         {"microBatchSize", 2}, {"replicas", 2}, {"optimizer", {{"type", "adam"}}}};

struct Brute {
  double best = 0;
  Candidate argmax;
  std::size_t timed = 0, fitting = 0;
};

// Every point of `space`, every split, every availableMemoryProportion per IPU and every
// weight-update schedule, each built as `run` builds it (graph, plan, memory) and timed by its
// schedule's evaluator: the planner's space, enumerated without any of its tables or bounds.
Brute brute_force(const Scenario& sc, const PlanSpace& space) {
  const LayerStructure layers = plan_units(sc.model, space);  // half layers where the space and model allow
  const int L = static_cast<int>(layers.names.size());
  const bool stem = layers.unit_of_op.front() < 0 || std::count(layers.unit_of_op.begin(), layers.unit_of_op.end(), -1) > 0;
  const bool heads = std::count(layers.unit_of_op.begin(), layers.unit_of_op.end(), L) > 0;
  const bool training = sc.execution.training;
  Brute out;
  for (const PipelineShape& shape : space.shapes)
    for (std::int64_t mb : space.micro_batches)
      for (std::int64_t depth : space.depths_for(mb, shape.replicas))
        for (const std::string& schedule : space.schedules)
          for (bool rc : space.recomputation)
            for (bool off : space.state_off_chip)
              for (bool rts : space.rts)
                for (bool last : space.heads_on_last) {
                  const int W = shape.ipus, P = W + (last ? 0 : 1);
                  if ((rts && shape.replicas == 1) || (!last && !heads) || !schedule_accepts(schedule, P, !last, depth, training))
                    continue;
                  std::vector<WeightUpdateSchedule> wus{sc.execution.weight_update_schedule};
                  if (training && ((schedule == "popart" && depth > 1) || schedule.rfind("tf-", 0) == 0)) wus = space.weight_update;
                  const auto splits = contiguous_splits(L, W, space.layer_free_ipus && stem, space.layer_free_ipus && last && heads);
                  std::vector<double> values = space.amps;
                  for (const auto& split : splits) {
                    std::vector<std::size_t> pick(static_cast<std::size_t>(W), 0);
                    for (bool more = true; more;) {
                      Candidate c;
                      c.settings = {W, shape.replicas, mb, depth, schedule, rc, off, rts, last, wus.front()};
                      c.split.layers_per_ipu = split;
                      c.split.units_per_layer = layers.units_per_layer;
                      c.split.heads_on_last = last;
                      for (std::size_t i = 0; i < pick.size(); ++i)
                        c.amp.push_back(space.fixed_amps.empty() ? values[pick[i]]
                                                                 : space.fixed_amps[space.fixed_amps.size() == 1 ? 0 : i]);
                      for (WeightUpdateSchedule wu : wus) {
                        c.settings.weight_update = wu;
                        const Scenario v = candidate_scenario(sc, layers, c);
                        Plan plan;
                        try {
                          plan = make_plan(v, build_graph(v.model));
                          if (plan.pipelining_refused) throw *plan.pipelining_refused;
                        } catch (const InputError&) {
                          break;  // PopART refuses the placement
                        }
                        const MemoryReport memory = estimate_memory(v, plan, stash_depths(schedule, P, depth, training), rc);
                        ++out.timed;
                        if (!memory.fits) break;
                        ++out.fitting;
                        const double samples = static_cast<double>(depth * mb * shape.replicas);
                        const double throughput = samples / estimate_step(v, plan).step_seconds;
                        if (throughput > out.best) out.best = throughput, out.argmax = c;
                      }
                      // Next availableMemoryProportion per IPU (an odometer over the values).
                      more = false;
                      if (!space.fixed_amps.empty()) break;
                      for (std::size_t i = 0; i < pick.size() && !more; ++i) {
                        if (++pick[i] < values.size()) more = true;
                        else pick[i] = 0;
                      }
                    }
                  }
                }
  return out;
}

// The layered model's whole space on a 4-IPU system: 2 x 2 and 4 x 1, every schedule.
PlanSpace small_space(const Scenario& sc) {
  PlanRequest request;
  request.schedules = evaluated_schedules();  // what-if ones included: asked for, they rank with the rest
  request.micro_batches = {1, 2};
  request.amps = {0.6};
  return make_plan_space(sc, request, 6);
}

// With and without the bounds, the same top candidates (`top` of them, or any number when 0),
// and fewer candidates timed with them (the bounds did prune).
void pruning_keeps_the_top(const Scenario& sc, const PlanSpace& space, std::size_t top) {
  PlanSearchOptions pruned;
  pruned.tolerance = 0;
  PlanSearchOptions everything = pruned;
  everything.prune = false;
  const PlanSearch a = search_plans(sc, space, pruned), b = search_plans(sc, space, everything);
  REQUIRE_FALSE(b.ranked.empty());
  if (top > 0) REQUIRE(b.ranked.size() == top);
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (std::size_t i = 0; i < a.ranked.size(); ++i) CHECK(a.ranked[i].throughput == Approx(b.ranked[i].throughput).epsilon(1e-12));
  CHECK(a.ranked.front().describe(true) == b.ranked.front().describe(true));
  CHECK(a.counts.evaluated < b.counts.evaluated);
}

} // namespace

TEST_CASE("Planner: its best equals brute force over the whole space (every schedule, shape, split, setting)",
          "[planner]") {
  std::mt19937 rng(7);
  const Json model = layered_model(rng, 6);
  Json config = system_with_streaming_memory(4);
  const Scenario roomy = make_scenario(model, config, kExecution);
  const PlanSpace space = small_space(roomy);
  REQUIRE(space.shapes.size() == 2);
  REQUIRE(space.schedules.size() == 6);
  PlanSearchOptions exact;
  exact.tolerance = 0;
  const PlanSearch unconstrained = search_plans(roomy, space, exact);
  REQUIRE(!unconstrained.ranked.empty());
  // SRAM one byte short of what the unconstrained best needs: memory now decides.
  const Candidate& first = unconstrained.ranked.front();
  config["ipu"]["sramBytesPerTile"] = static_cast<std::int64_t>(std::ceil((1 << 30) - first.least_headroom)) - 1;
  const Scenario sc = make_scenario(model, config, kExecution);
  const PlanSearch search = search_plans(sc, space, exact);
  REQUIRE(!search.ranked.empty());
  CHECK(search.counts.out_of_memory > 0);
  const Brute brute = brute_force(sc, space);
  INFO("brute force: " << brute.timed << " built, " << brute.fitting << " fit; best " << brute.argmax.describe(true));
  CHECK(brute.fitting > 0);
  CHECK(brute.fitting < brute.timed);
  CHECK(brute.timed > 1000);
  const Candidate& planned = search.ranked.front();
  CHECK(planned.throughput == Approx(brute.best).epsilon(1e-12));
  CHECK(planned.describe(true) == brute.argmax.describe(true));
  CHECK(search.complete);
}

TEST_CASE("Planner: pruning never drops the optimum (with and without the bounds, the same top 3)", "[planner]") {
  for (int seed : {3, 5, 11}) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    const Json model = layered_model(rng, 6);
    Json config = system_with_streaming_memory(4);
    // Tight enough that state on chip, no recomputation or a long first block do not all fit.
    config["ipu"]["sramBytesPerTile"] = 900000;
    const Scenario sc = make_scenario(model, config, kExecution);
    INFO("seed " << seed);
    pruning_keeps_the_top(sc, small_space(sc), 3);
  }
}

TEST_CASE("Planner: BERT-tiny with the poplibs cost model, an availableMemoryProportion per IPU, equals brute force",
          "[planner]") {
  Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-tiny-training.json");
  sc.hardware.ipu.sram_bytes_per_tile = 40000;  // the matmul temporaries the AMP allows now matter
  PlanRequest request;
  request.ipus = {2, 3};
  request.replicas = {1};
  request.micro_batches = {4, 8};
  request.schedules = {"popart", "tf-grouped"};
  request.recomputation = {"pipeline"};
  request.weight_update = {"Serial"};
  request.amps = {0.1, 0.6};
  request.global_batch = 8 * 96;
  const PlanSpace space = make_plan_space(sc, request, 4);
  PlanSearchOptions exact;
  exact.tolerance = 0;
  const PlanSearch search = search_plans(sc, space, exact);
  const Brute brute = brute_force(sc, space);
  INFO("brute force: " << brute.timed << " built, " << brute.fitting << " fit; best " << brute.argmax.describe(true));
  REQUIRE(brute.fitting > 0);
  CHECK(brute.fitting < brute.timed);
  REQUIRE(!search.ranked.empty());
  CHECK(search.ranked.front().throughput == Approx(brute.best).epsilon(1e-12));
  // Its layers were cut into attention and feed-forward halves, every half split brute-forced;
  // whole layers are a part of that space, so they reach no more.
  REQUIRE(search.layers.units_per_layer == 2);
  PlanSpace whole = space;
  whole.half_layers = false;
  const PlanSearch by_layers = search_plans(sc, whole, exact);
  REQUIRE(!by_layers.ranked.empty());
  CHECK(by_layers.layers.units_per_layer == 1);
  CHECK(by_layers.ranked.front().throughput <= search.ranked.front().throughput * (1 + 1e-12));
}

TEST_CASE("Planner: MLPerf BERT's layers halve where Graphcore's att_ffn_placement cuts them", "[planner]") {
  const Model model = load_model(std::string(IPUSIM_SOURCE_DIR) + "/models/bert-large-mlperf-pod64.json");
  const LayerStructure layers = detect_layers(model);
  REQUIRE(layers.names.size() == 24);
  const auto halves = halve_layers(model, layers);
  REQUIRE(halves);
  REQUIRE(halves->names.size() == 48);
  // The attention half ends with its residual and LayerNorm; the feed-forward half starts at its
  // first matmul (bert_model.py's att/ffn scopes in Graphcore's MLPerf submission).
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const int whole = layers.unit_of_op[i], half = halves->unit_of_op[i];
    if (whole < 0) CHECK(half == -1);
    else if (whole == 24) CHECK(half == 48);
    else {
      const bool ffn = model.ops[i].name.find("/ffn/") != std::string::npos;
      INFO(model.ops[i].name);
      CHECK(half == 2 * whole + (ffn ? 1 : 0));
    }
  }
  CHECK(layer_count_text(7, 2) == "3.5");
  CHECK(layer_count_text(6, 2) == "3");
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
  const std::vector<std::string> fixed{"--ipus", "3", "--schedule", "popart", "--micro-batch", "2"};
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"plan", scenario};
    args.insert(args.end(), fixed.begin(), fixed.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ipusim(args);
  };
  const Result r = plan({"--top", "2", "--write", prefix});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("#1 3 IPUs x 1 replica, [") != std::string::npos);
  CHECK(r.out.find("#2 ") != std::string::npos);
  CHECK(r.out.find("loses to #1: ") != std::string::npos);
  CHECK(r.out.find("(exact: no contention)") != std::string::npos);
  CHECK(r.out.find("exact (to 0.01 %): every configuration not timed") != std::string::npos);

  // The written scenario runs, and the engine's throughput is the planner's best.
  std::mt19937 same_rng(11);  // the same model as written above
  const Scenario sc = make_scenario(layered_model(same_rng, 5), zero_overhead_config(3, 2e9), execution);
  PlanRequest request;
  request.ipus = {3};
  request.schedules = {"popart"};
  request.micro_batches = {2};
  const PlanSearch search = search_plans(sc, make_plan_space(sc, request, 5), {});
  const Result run = run_ipusim({"run", prefix + ".scenario.json", "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const Json report = Json::parse(run.out);
  CHECK(report["runs"][0]["throughputSamplesPerSecond"].get<double>() ==
        Approx(search.ranked.front().throughput).epsilon(1e-9));

  // Existing files are kept without --force, and replaced with it.
  CHECK(plan({"--write", prefix}).exit_code == 2);
  CHECK(plan({"--write", prefix, "--force"}).exit_code == 0);
  const Result too_many = run_ipusim({"plan", scenario, "--ipus", "9"});  // 3 IPUs in the system
  CHECK(too_many.exit_code == 2);
  CHECK(too_many.err.find("[plan.ipus]") != std::string::npos);
  const Result layers = run_ipusim({"plan", scenario, "--explain-layers"});
  CHECK(layers.exit_code == 0);
  CHECK(layers.out.find("5 layers of the template \"layer#\": layer0 (1 ops), layer1 (1 ops)") != std::string::npos);
}

TEST_CASE("ipusim plan: a search the time limit cut before anything fitting does not claim the space was searched",
          "[planner][cli]") {
  // Without a limit the planner finds a fitting BERT-Large on 4 IPUs in 0.3 s; a 1 ms limit stops the
  // search before any candidate. It said "the whole space was searched: the model needs more
  // memory than 4 IPUs ... give", a wrong answer.
  const Result r = run_ipusim({"plan", std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-training.json",
                               "--time-limit", "0.001", "--quiet"});
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.err, Catch::Matchers::Contains("before --time-limit stopped the search") &&
                        Catch::Matchers::Contains("raise --time-limit"));
  CHECK_THAT(r.err, !Catch::Matchers::Contains("whole space was searched"));
}

TEST_CASE("ipusim plan: nothing fits with the width fixed; the message names the width that fits", "[planner][cli]") {
  std::mt19937 rng(11);
  TempDir dir;
  const Json execution = {{"mode", "pipelined"}, {"training", true}, {"costModel", "compute"},
                          {"gradientAccumulation", 8}, {"microBatchSize", 2}, {"recomputation", "pipeline"}};
  const Json model = layered_model(rng, 6);
  Json config = zero_overhead_config(4, 2e9);
  // Between what the best 2-IPU and the best 4-IPU split need on their fullest IPU.
  const Scenario roomy = make_scenario(model, config, execution);
  auto least_needed = [&](int ipus) {
    PlanRequest r;
    r.ipus = {ipus};
    r.replicas = {1};
    r.schedules = {"popart"};
    r.micro_batches = {2};
    PlanSearchOptions whole_front;
    whole_front.front_within = 1;  // every candidate with more headroom than all faster ones
    const PlanSearch s = search_plans(roomy, make_plan_space(roomy, r, 6), whole_front);
    double need = 1e300;
    for (const Candidate& c : s.front) need = std::min(need, (1 << 30) - c.least_headroom);
    for (const Candidate& c : s.ranked) need = std::min(need, (1 << 30) - c.least_headroom);
    return need;
  };
  const double two = least_needed(2), four = least_needed(4);
  REQUIRE(four < two);
  config["ipu"]["sramBytesPerTile"] = static_cast<std::int64_t>((two + four) / 2);
  dir.write("model.json", model);
  dir.write("config.json", config);
  const std::string scenario = dir.write(
      "scenario.json", Json{{"name", "tight"}, {"model", "model.json"}, {"config", "config.json"}, {"execution", execution}});
  const Result r = run_ipusim({"plan", scenario, "--ipus", "2", "--replicas", "1", "--schedule", "popart",
                               "--micro-batch", "2", "--quiet"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("searching every pipeline width (no --ipus/--replicas) finds one that fits: 4 IPUs x 1 replica") !=
        std::string::npos);
}

TEST_CASE("Layer detector: the module paths of PyTorch exports (HF BERT, GPT-2, LLaMA; legacy op-numbered nodes)",
          "[planner][layers]") {
  auto layers_of = [](const std::vector<NamedNode>& nodes) { return detect_layers_by_name(nodes); };
  // Hugging Face BERT as torch.onnx.export names it (PyTorch >= 1.13: scope names as node names).
  std::vector<NamedNode> bert{{"/bert/embeddings/word_embeddings/Gather", {"bert.embeddings.word_embeddings.weight"}},
                              {"/bert/embeddings/LayerNorm/LayerNormalization", {}}};
  for (int l = 0; l < 12; ++l) {
    const std::string p = "/bert/encoder/layer." + std::to_string(l);
    bert.push_back({p + "/attention/self/query/MatMul", {}});
    bert.push_back({p + "/attention/self/Softmax", {}});
    bert.push_back({p + "/attention/output/LayerNorm/LayerNormalization", {}});
    bert.push_back({p + "/intermediate/intermediate_act_fn/Mul_1", {}});
    bert.push_back({p + "/output/dense/MatMul", {}});
  }
  bert.push_back({"/cls/predictions/transform/dense/MatMul", {}});
  const DetectedLayers b = layers_of(bert);
  CHECK(b.pattern == "bert.encoder.layer.#");
  REQUIRE(b.names.size() == 12);
  CHECK(b.names.front() == "bert.encoder.layer.0");
  CHECK(b.names.back() == "bert.encoder.layer.11");
  CHECK(b.layer_of_node.front() == -1);
  CHECK(b.layer_of_node.back() == 12);

  // LLaMA-style decoder: model.layers.N.
  std::vector<NamedNode> llama{{"/model/embed_tokens/Gather", {}}};
  for (int l = 0; l < 4; ++l)
    for (const char* op : {"/input_layernorm/Mul_1", "/self_attn/q_proj/MatMul", "/mlp/down_proj/MatMul"})
      llama.push_back({"/model/layers." + std::to_string(l) + op, {}});
  llama.push_back({"/lm_head/MatMul", {}});
  const DetectedLayers m = layers_of(llama);
  CHECK(m.pattern == "model.layers.#");
  CHECK(m.names.size() == 4);

  // PyTorch 1.x: nodes named by op and number ("MatMul_12", "Identity_7"); only the weights
  // carry the module path. The Identity nodes (more than the layers) are not layers.
  std::vector<NamedNode> legacy{{"Gather_0", {"transformer.wte.weight"}}, {"Gather_1", {"transformer.wpe.weight"}},
                                {"Add_2", {}}};
  int n = 3;
  for (int l = 0; l < 3; ++l) {
    const std::string p = "transformer.h." + std::to_string(l);
    legacy.push_back({"LayerNormalization_" + std::to_string(n++), {p + ".ln_1.weight", p + ".ln_1.bias"}});
    legacy.push_back({"MatMul_" + std::to_string(n++), {p + ".attn.c_attn.weight"}});
    legacy.push_back({"Softmax_" + std::to_string(n++), {}});
    legacy.push_back({"Identity_" + std::to_string(n++), {}});
    legacy.push_back({"MatMul_" + std::to_string(n++), {p + ".mlp.c_fc.weight"}});
    legacy.push_back({"Identity_" + std::to_string(n++), {}});
    legacy.push_back({"Identity_" + std::to_string(n++), {}});
  }
  legacy.push_back({"LayerNormalization_" + std::to_string(n++), {"transformer.ln_f.weight"}});
  legacy.push_back({"MatMul_" + std::to_string(n++), {"lm_head.weight"}});
  const DetectedLayers g = layers_of(legacy);
  CHECK(g.pattern == "transformer.h.#");
  CHECK(g.names == std::vector<std::string>{"transformer.h.0", "transformer.h.1", "transformer.h.2"});
  // Nodes without a key belong to the layer before them: the Softmax and Identities of layer 1.
  CHECK(g.layer_of_node[3 + 7 + 2] == 1);
  CHECK(g.layer_of_node[3 + 7 + 6] == 1);
  CHECK(g.layer_of_node.back() == 3);
  // The zoo's names: layer0/..., h11/...
  const DetectedLayers zoo = layers_of({{"embedding/add", {}}, {"h0/ln_1", {}}, {"h0/ffn/1", {}}, {"h1/ln_1", {}}, {"ln_f", {}}});
  CHECK(zoo.names == std::vector<std::string>{"h0", "h1"});
  CHECK(zoo.layer_of_node == std::vector<int>{-1, 0, 0, 1, 2});
}

TEST_CASE("Memory advice: each setting that makes an overflowing configuration fit, from the memory model",
          "[planner][advice]") {
  // BERT-Large as Graphcore's POD16 config but with its LAMB state on chip and no recomputation.
  const std::string file = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json";
  const std::vector<std::string> worse{"execution.optimizer.stateLocation=on-chip",
                                       "execution.optimizer.replicatedTensorSharding=false", "execution.recomputation=none"};
  std::vector<Override> overrides;
  for (const auto& w : worse) overrides.push_back(parse_override(w));
  const Scenario sc = load_scenario(file, overrides);
  const std::vector<MemoryFix> fixes = memory_fixes(sc, Mode::Pipelined);
  REQUIRE(!fixes.empty());
  REQUIRE(fixes.front().fits);  // the ones that fit come first
  int applied = 0;
  for (const MemoryFix& f : fixes) {
    INFO(f.change << ": " << f.how);
    if (!f.fits || f.how.rfind("--set ", 0) != 0) continue;
    // The advice as a user would apply it: its --set arguments on the scenario.
    std::vector<Override> with = overrides;
    std::istringstream words(f.how);
    for (std::string w; words >> w;)
      if (w != "--set") with.push_back(parse_override(w));
    const Scenario v = load_scenario(file, with);
    const Plan plan = make_plan(v, build_graph(v.model));
    CHECK(estimate_memory(v, plan, popart_stash_depth(plan), v.execution.recomputation == Recomputation::Pipeline).fits);
    ++applied;
  }
  CHECK(applied >= 1);
  CHECK(fixes_sentence(fixes).rfind("would fit with ", 0) == 0);
  // A configuration that fits needs no advice.
  CHECK(memory_fixes(load_scenario(file), Mode::Pipelined).empty());
}

TEST_CASE("Memory advice: settings combined when none is enough alone, each edit with its own values",
          "[planner][advice]") {
  // BERT-Large as a V with Adam's state on chip, micro-batch 32, no recomputation: no one
  // setting is enough. The combination re-applies the stored edits after the loops that made
  // them (micro-batch 1 with G 544, from a loop over micro-batches): they captured their
  // loop's variables by reference, and read dead stack there (ASan: stack-use-after-scope).
  const std::string file = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-v-training.json";
  std::vector<Override> overrides;
  for (const char* w : {"execution.gradientAccumulation=17", "execution.optimizer.type=adam",
                        "execution.optimizer.stateLocation=on-chip", "execution.microBatchSize=32",
                        "execution.recomputation=none"})
    overrides.push_back(parse_override(w));
  const Scenario sc = load_scenario(file, overrides);
  const std::vector<MemoryFix> fixes = memory_fixes(sc, Mode::Pipelined);
  REQUIRE(!fixes.empty());
  const MemoryFix& together = fixes.front();
  INFO(together.change << ": " << together.how);
  CHECK(together.fits);
  CHECK(together.how == "--set execution.microBatchSize=1 --set execution.gradientAccumulation=544 "
                        "--set execution.optimizer.stateLocation=streaming-memory");
  // Applied as a user would, the combination fits.
  std::vector<Override> with = overrides;
  std::istringstream words(together.how);
  for (std::string w; words >> w;)
    if (w != "--set") with.push_back(parse_override(w));
  const Scenario v = load_scenario(file, with);
  CHECK(v.execution.micro_batch_size == 1);
  CHECK(v.execution.gradient_accumulation == 544);  // the global batch kept: 32 x 17 = 544
  const Plan plan = make_plan(v, build_graph(v.model));
  CHECK(estimate_memory(v, plan, popart_stash_depth(plan), false).fits);
  for (std::size_t i = 1; i < fixes.size(); ++i) CHECK_FALSE(fixes[i].fits);  // alone, none is enough
}

TEST_CASE("Memory advice: tensor parallelism over the IPUs the scenario leaves idle, the smallest group that fits",
          "[planner][advice][tensor-parallel]") {
  // BERT-Large's 4-IPU pipeline, one replica, on a Bow Pod16: 12 IPUs idle, so groups of 2
  // (8 IPUs) and 4 (16) can be tried; 3 is no power of two and 8 needs 32 IPUs.
  const std::string file = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-training.json";
  auto fixes_with = [&](const char* setting) {
    std::vector<Override> overrides{parse_override("config=../configs/bow-pod16.json"), parse_override(setting)};
    return std::make_pair(overrides, memory_fixes(load_scenario(file, overrides), Mode::Pipelined));
  };
  auto tensor_parallel_fixes = [](const std::vector<MemoryFix>& fixes) {
    std::vector<MemoryFix> out;
    for (const MemoryFix& f : fixes)
      if (f.setting == "tensor parallelism") out.push_back(f);
    return out;
  };
  // Micro-batch 32: a group of 2 fits, and is the one given.
  const auto [overrides, fixes] = fixes_with("execution.microBatchSize=32");
  const std::vector<MemoryFix> pairs = tensor_parallel_fixes(fixes);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs.front().how == "--set execution.tensorParallel=2");
  CHECK(pairs.front().fits);
  CHECK_THAT(pairs.front().change, Catch::Matchers::Contains("over 2 IPUs (now 1), 8 of the system's 16"));
  // Applied as a user would, it fits.
  std::vector<Override> with = overrides;
  with.push_back(parse_override("execution.tensorParallel=2"));
  const Scenario v = load_scenario(file, with);
  const Plan plan = make_plan(v, build_graph(v.model));
  CHECK(estimate_memory(v, plan, popart_stash_depth(plan), true).fits);
  // Without recomputation no group the system holds is enough: the widest tried, 4, is given
  // as not enough alone (the group of 2, which frees less, is not listed).
  const std::vector<MemoryFix> widest = tensor_parallel_fixes(fixes_with("execution.recomputation=none").second);
  REQUIRE(widest.size() == 1);
  CHECK(widest.front().how == "--set execution.tensorParallel=4");
  CHECK_FALSE(widest.front().fits);
  CHECK(widest.front().freed_bytes > 0);
}

TEST_CASE("ipusim plan: bad input exits 2 naming its rule", "[planner][cli][rules]") {
  std::mt19937 rng(11);
  TempDir dir;
  const Json execution = {{"mode", "pipelined"}, {"training", true}, {"costModel", "compute"},
                          {"gradientAccumulation", 8}, {"microBatchSize", 2}, {"optimizer", {{"type", "adam"}}}};
  dir.write("model.json", layered_model(rng, 5));
  dir.write("config.json", zero_overhead_config(4, 2e9));  // no Streaming Memory
  const std::string scenario = dir.write(
      "scenario.json", Json{{"name", "bad"}, {"model", "model.json"}, {"config", "config.json"}, {"execution", execution}});
  auto rule_of_plan = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"plan", scenario, "--quiet"});
    const Result r = run_ipusim(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    return r.err;
  };
  CHECK_THAT(rule_of_plan({"--ipus", "2", "--replicas", "3"}), Catch::Matchers::Contains("[plan.replicas]"));
  CHECK_THAT(rule_of_plan({"--global-batch", "16x"}), Catch::Matchers::Contains("[plan.global-batch]"));
  CHECK_THAT(rule_of_plan({"--global-batch", "64-32"}), Catch::Matchers::Contains("[plan.global-batch]"));
  CHECK_THAT(rule_of_plan({"--global-batch", "7", "--replicas", "2"}), Catch::Matchers::Contains("[plan.global-batch]"));
  CHECK_THAT(rule_of_plan({"--schedule", "sharded"}), Catch::Matchers::Contains("[plan.schedule]"));
  CHECK_THAT(rule_of_plan({"--state", "streaming-memory"}), Catch::Matchers::Contains("[plan.state]"));
  CHECK_THAT(rule_of_plan({"--recomputation", "maybe"}), Catch::Matchers::Contains("[plan.bad-value]"));
  CHECK_THAT(rule_of_plan({"--amp", "1.5"}), Catch::Matchers::Contains("[plan.bad-value]"));
  CHECK_THAT(rule_of_plan({"--ipus", "3", "--set", "execution.availableMemoryProportion=[0.2,0.3]"}),
             Catch::Matchers::Contains("[plan.fixed-amp]"));
  // Layer 1's op listed after layer 2's, which reads its output: blocks of layers would not be stages.
  Json model = layered_model(rng, 5);
  std::swap(model["ops"][2], model["ops"][3]);
  dir.write("unordered.json", model);
  const std::string unordered = dir.write(
      "unordered-scenario.json",
      Json{{"name", "unordered"}, {"model", "unordered.json"}, {"config", "config.json"}, {"execution", execution}});
  const Result r = run_ipusim({"plan", unordered, "--quiet"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Matchers::Contains("[plan.layers]"));
}

TEST_CASE("Planner: TensorFlow's Grouped bound (G x the largest forward plus the largest backward) never drops the optimum",
          "[planner]") {
  // Grouped runs all forwards in forward steps and all backwards in backward steps, so its step
  // is at least G x (an IPU's largest forward + an IPU's largest backward): tighter than G x the
  // busiest IPU's whole work, and still below every split's step; its N - 1 ramp-up and flush
  // steps of each pass are bounded by the IPUs placed so far. G = 120 is a multiple of 2N for
  // every N up to 5 forward stages (Grouped's rule); at G = 12 and 20 (N = 2, 3 and 2, 5) the ramps
  // are a large part of the step.
  for (auto [seed, G] : std::vector<std::pair<int, int>>{{3, 120}, {5, 120}, {11, 12}, {17, 20}, {19, 12}, {23, 20}}) {
    INFO("G " << G);
    std::mt19937 rng(static_cast<unsigned>(seed));
    const Json model = layered_model(rng, 6);
    Json execution = kExecution;
    execution["gradientAccumulation"] = G;
    const Scenario sc = make_scenario(model, system_with_streaming_memory(4), execution);
    PlanRequest request;
    request.schedules = {"tf-grouped"};
    request.micro_batches = {1, 2};
    request.amps = {0.6};
    INFO("seed " << seed);
    pruning_keeps_the_top(sc, make_plan_space(sc, request, 6), 0);
  }
}
