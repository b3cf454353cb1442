// Tensor parallelism (docs/tensor-parallel.md): the shard the transform makes of a Megatron
// block and of the shipped GPT-J-sized decoder against hand counts, the inserted all-reduces'
// closed forms on hand-made IPU-Link topologies, the plan's stage times against the unsharded
// ones, the placement of groups, and the rules.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <variant>

#include "sim/io/scenario_loader.hpp"
#include "sim/io/tensor_parallel.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/tensor_parallel_cost.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/output/explanation.hpp"
#include "sim/output/json_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "cli_runner.hpp"
#include "run_metrics.hpp"
#include "sanitizer.hpp"
#include "support.hpp"
#include "temp_dir.hpp"
#include "sim/base/units.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

// x -> LayerNorm -> a -> MatMul W1 [16, 64] -> h -> Add b1 -> hb -> Gelu -> g -> MatMul W2 [64, 16] -> o,
// per sample [8, 16] and [8, 64], float32, each op with its FLOPs given (per sample).
Json mlp_block() {
  Json tensors = {{"x", {{"shape", {8, 16}}, {"kind", "input"}}},
                  {"gamma", {{"shape", {16}}, {"kind", "weight"}}},
                  {"beta", {{"shape", {16}}, {"kind", "weight"}}},
                  {"a", {{"shape", {8, 16}}, {"kind", "activation"}}},
                  {"W1", {{"shape", {16, 64}}, {"kind", "weight"}}},
                  {"b1", {{"shape", {64}}, {"kind", "weight"}}},
                  {"h", {{"shape", {8, 64}}, {"kind", "activation"}}},
                  {"hb", {{"shape", {8, 64}}, {"kind", "activation"}}},
                  {"g", {{"shape", {8, 64}}, {"kind", "activation"}}},
                  {"W2", {{"shape", {64, 16}}, {"kind", "weight"}}},
                  {"o", {{"shape", {8, 16}}, {"kind", "activation"}}}};
  auto op = [](const char* name, const char* type, std::vector<std::string> in, const char* out, double flops) {
    return Json{{"name", name}, {"type", type}, {"inputs", in}, {"outputs", {out}}, {"virtualGraph", 0}, {"flops", flops}};
  };
  return {{"name", "mlp block"},
          {"tensors", tensors},
          {"ops",
           {op("ln", "LayerNorm", {"x", "gamma", "beta"}, "a", 1000), op("fc1", "MatMul", {"a", "W1"}, "h", 16384),
            op("bias", "Add", {"h", "b1"}, "hb", 512), op("gelu", "Gelu", {"hb"}, "g", 4096),
            op("fc2", "MatMul", {"g", "W2"}, "o", 16384)}}};
}

Json execution(int tp, bool training) {
  return {{"mode", "sharded"}, {"training", training}, {"tensorParallel", tp}, {"costModel", "compute"}, {"hostIo", false}};
}

const Op& op_named(const Model& m, const std::string& name) {
  for (const Op& op : m.ops)
    if (op.name == name) return op;
  FAIL("no op " << name);
  throw std::logic_error("unreachable");
}

double attribute(const Op& op, const std::string& key) {
  const AttributeValue& v = op.attributes.at(key);
  return std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::int64_t>(v));
}

} // namespace

TEST_CASE("a Megatron MLP block: column- then row-parallel, one all-reduce forward, one backward", "[tensor-parallel]") {
  const Scenario sc = make_scenario(mlp_block(), zero_overhead_config(4), execution(4, true));
  const Model& m = sc.model;
  CHECK(m.tensor("W1").shape == std::vector<std::int64_t>{16, 16});  // columns split
  CHECK(m.tensor("b1").shape == std::vector<std::int64_t>{16});
  CHECK(m.tensor("W2").shape == std::vector<std::int64_t>{16, 16});  // rows split
  CHECK(m.tensor("g").shape == std::vector<std::int64_t>{8, 16});
  CHECK(m.tensor("o").shape == std::vector<std::int64_t>{8, 16});   // whole after the all-reduce
  CHECK(m.tensor("gamma").shape == std::vector<std::int64_t>{16});  // the LayerNorm runs whole
  std::vector<std::string> order;
  for (const Op& op : m.ops) order.push_back(op.name);
  CHECK(order == std::vector<std::string>{"ln", "fc1/tp_whole_input", "fc1", "bias", "gelu", "fc2", "fc2/tp_all_reduce"});
  const Op& identity = op_named(m, "fc1/tp_whole_input");
  CHECK(identity.type == kTensorParallelIdentity);
  CHECK(attribute(identity, "reducedElements") == 0);
  CHECK(attribute(identity, "gradientReducedElements") == 128);  // a's gradient, 8 x 16
  const Op& reduce = op_named(m, "fc2/tp_all_reduce");
  CHECK(reduce.type == kTensorParallelAllReduce);
  CHECK(attribute(reduce, "reducedElements") == 128);
  CHECK(attribute(reduce, "gradientReducedElements") == 0);
  CHECK(reduce.inputs == std::vector<std::string>{"o/tp_partial"});
  CHECK(*op_named(m, "fc1").flops == 4096);  // split work, declared FLOPs divided by 4
  CHECK(*op_named(m, "ln").flops == 1000);   // whole
  // Inference inserts no identity: its forward is free and there is no gradient.
  const Scenario inference = make_scenario(mlp_block(), zero_overhead_config(4), execution(4, false));
  CHECK(inference.model.ops.size() == 6);
}

TEST_CASE("a tensor-parallel all-reduce is GCL's ring pair over the group's routes", "[tensor-parallel][closed-form]") {
  // Four IPUs, every pair joined at 1e9 B/s, no latency or sync: 2(t-1) = 6 steps, each
  // sending B/2t = 500 B each way over its own link: 6 x 0.5 us.
  const HardwareConfig full = hardware_from_json(zero_overhead_config(4), "full.json");
  CHECK(group_all_reduce_seconds(full, 0, 4, 4000) == Approx(6 * 0.5e-6).epsilon(1e-12));
  // A line 0-1-2-3: the ring's hop 3 -> 0 runs 3 -> 2 -> 1 -> 0, so links 1->0, 2->1 and 3->2
  // also carry a neighbour hop each: two half-chunks each, 1 us a step.
  Json line = zero_overhead_config(4);
  line["links"] = Json::array();
  for (int a = 0; a < 3; ++a)
    line["links"].push_back({{"ipus", {a, a + 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}});
  const HardwareConfig chain = hardware_from_json(line, "line.json");
  CHECK(group_all_reduce_seconds(chain, 0, 4, 4000) == Approx(6 * 1e-6).epsilon(1e-12));
  // Latency: the longest neighbour route (3 hops of 1 us) and the sync, 2 x (1 + 4/4) x 15 ns.
  line["links"] = Json::array();
  for (int a = 0; a < 3; ++a)
    line["links"].push_back({{"ipus", {a, a + 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 1e-6}});
  line["syncLatencyPerHopSeconds"] = 15e-9;
  const HardwareConfig slow = hardware_from_json(line, "line.json");
  CHECK(group_all_reduce_seconds(slow, 0, 4, 4000) == Approx(6 * (1e-6 + 3e-6 + 60e-9)).epsilon(1e-12));
  CHECK(group_all_reduce_seconds(full, 0, 1, 4000) == 0);
}

TEST_CASE("a tensor-parallel stage takes a quarter of the split work, the whole rest and its all-reduces",
          "[tensor-parallel][closed-form]") {
  // The compute cost model at 1 FLOP a cycle, 1 GHz, one tile: 1 FLOP per sample is 1 ns.
  const Scenario whole = make_scenario(mlp_block(), zero_overhead_config(4), execution(1, true));
  const Scenario split = make_scenario(mlp_block(), zero_overhead_config(4), execution(4, true));
  const Plan p1 = make_plan(whole, build_graph(whole.model));
  const Plan p4 = make_plan(split, build_graph(split.model));
  // Forward: LayerNorm 1000 ns whole, the rest (16384 + 512 + 4096 + 16384) / 4 ns, then the
  // all-reduce of o (128 floats = 512 B: 6 steps of 64 B at 1e9 B/s).
  const double all_reduce = 6 * 64e-9;
  CHECK(p4.stages[0].forward_seconds == Approx(1000e-9 + 37376e-9 / 4 + all_reduce).epsilon(1e-9));
  CHECK(p1.stages[0].forward_seconds == Approx(1000e-9 + 37376e-9).epsilon(1e-9));
  // Backward (twice the forward FLOPs): the identity's all-reduce of a's gradient instead.
  CHECK(p4.stages[0].backward_seconds == Approx(2 * (1000e-9 + 37376e-9 / 4) + all_reduce).epsilon(1e-9));
  CHECK(p4.stages[0].tensor_parallel_seconds == Approx(2 * all_reduce).epsilon(1e-9));
  CHECK(tensor_parallel_fraction(p4, false) == Approx(2 * all_reduce / p4.stages[0].seconds()).epsilon(1e-12));
}

TEST_CASE("the GPT-J-sized decoder's shard: each layer's matmuls 1/16, its norms and output biases whole",
          "[tensor-parallel][zoo]") {
  const Scenario sc = load_scenario(kSource + "/scenarios/gpt-j-phased-pod16.json");
  REQUIRE(sc.execution.tensor_parallel == 16);
  double layer = 0, whole_layer = 0;
  for (const auto& [name, t] : sc.model.tensors)
    if (t.kind == TensorKind::Weight && name.rfind("h0/", 0) == 0) layer += static_cast<double>(t.elements());
  for (const auto& [name, t] : sc.unsharded->model.tensors)
    if (t.kind == TensorKind::Weight && name.rfind("h0/", 0) == 0) whole_layer += static_cast<double>(t.elements());
  // Hand count, H = 4096, F = 16384: qkv H x 3H + 3H, out H x H (+ bias H whole), fc1 H x F + F,
  // fc2 F x H (+ bias H whole), two LayerNorms 2 x 2H whole.
  const double H = 4096, F = 16384;
  const double split = H * 3 * H + 3 * H + H * H + H * F + F + F * H;
  CHECK(whole_layer == split + H + H + 4 * H);
  CHECK(layer == split / 16 + H + H + 4 * H);
  // Embedding and head: the 50400-row vocabulary split, the 1024 positions whole.
  CHECK(sc.model.tensor("wte").shape == std::vector<std::int64_t>{3150, 4096});
  CHECK(sc.model.tensor("wpe").shape == std::vector<std::int64_t>{1024, 4096});
  CHECK(sc.model.tensor("lm_head/weight").shape == std::vector<std::int64_t>{4096, 3150});
  // Per layer two all-reduces forward and two identities (all-reduced gradients), as Megatron.
  int reduces = 0, identities = 0;
  for (const Op& op : sc.model.ops)
    if (op.name.rfind("h0/", 0) == 0) {
      reduces += op.type == kTensorParallelAllReduce;
      identities += op.type == kTensorParallelIdentity;
    }
  CHECK(reduces == 2);
  CHECK(identities == 2);
}

TEST_CASE("the GPT-J-sized decoder trains phased on a Bow Pod16 with tensor parallelism 16 and fits",
          "[tensor-parallel][phased]") {
  const Scenario sc = load_scenario(kSource + "/scenarios/gpt-j-phased-pod16.json");
  const Simulation sim = simulate(sc, {Mode::Phased});
  const RunMetrics& run = run_of(sim, Mode::Phased);
  REQUIRE(run.memory.ipus.size() == 1);
  CHECK(run.memory.fits);
  CHECK(run.memory.ipus[0].id == 0);
  // The engine ran one IPU standing for the group: the throughput is the group's.
  CHECK(run.samples == 128);
}

TEST_CASE("tensor-parallel groups: consecutive IPUs, replicas strided, the IPU count and placement checked",
          "[tensor-parallel][rules]") {
  Json model = two_layer_model(1e6, 3e6);
  Json ex = {{"mode", "pipelined"}, {"training", false}, {"batchesPerStep", 4}, {"tensorParallel", 2}, {"replicas", 2},
             {"costModel", "compute"}, {"hostIo", false}};
  const Scenario grouped = make_scenario(model, zero_overhead_config(8), ex);
  const Simulation sim = simulate(grouped, {Mode::Pipelined});
  std::vector<int> ipus;
  for (const IpuMetrics& m : run_of(sim, Mode::Pipelined).ipus) ipus.push_back(m.id);
  CHECK(ipus == std::vector<int>{0, 2, 4, 6});  // replica r, virtual IPU v: group (2r + v) from IPU 2(2r + v)
  // Outputs name each group by its IPUs: replica 1's virtual IPU 1 is the group of IPUs 6 and 7.
  const Json doc = report_json(grouped, sim);
  const Json& last = doc.at("runs").at(0).at("ipus").at(3);
  CHECK(last.at("replica") == 1);
  CHECK(last.at("virtualIpu") == 1);
  CHECK(last.at("tensorParallelIpus") == Json::array({6, 7}));
  CHECK(physical_ipu_name(run_of(sim, Mode::Pipelined).ipus[3], true, 2) == "IPUs 6-7 (replica 1, vIPU 1)");
  // A sync spans every IPU of every group: 2 virtual IPUs x 2 replicas x 2 shards = 8 IPUs, so
  // 2 (1 + 8/4) hops of 1 us (hardware.hpp's rule), not the 4 IPUs the engine runs.
  Json synced = zero_overhead_config(8);
  synced["syncLatencyPerHopSeconds"] = 1e-6;
  const Simulation with_sync = simulate(make_scenario(model, synced, ex), {Mode::Pipelined});
  CHECK(run_of(with_sync, Mode::Pipelined).sync_seconds == Approx(6e-6).epsilon(1e-12));
  // Groups wider than the system: the plan timed each op's all-reduce on a ring of IPUs 0..15
  // and crashed routing to IPU 8; refused before any cost.
  Json wide = ex;
  wide["tensorParallel"] = 16;
  wide["replicas"] = 1;
  const Scenario too_wide = make_scenario(model, zero_overhead_config(8), wide);
  const InputError narrow = error_of([&] { make_plan(too_wide, build_graph(too_wide.model)); });
  CHECK(narrow.rule() == "scenario.not-enough-ipus");
  CHECK(narrow.pointer() == "/execution/tensorParallel");
  CHECK_THAT(narrow.message(), Contains("sharded over 16 IPUs per virtual IPU need 32 IPUs"));
  // 8 IPUs hold one 2-IPU pipeline sharded 4 ways: 8 / (2 x 1).
  CHECK_THAT(narrow.message(), Contains("give tensorParallel 4 or less or choose a larger system"));
  // With a placement of the right length, its first group runs past the system's last IPU.
  wide["placement"] = {1, 0};
  const Scenario placed = make_scenario(model, zero_overhead_config(8), wide);
  const InputError past = error_of([&] { make_plan(placed, build_graph(placed.model)); });
  CHECK(past.rule() == "scenario.bad-placement");
  CHECK(past.pointer() == "/execution/placement/0");
  CHECK_THAT(past.message(), Contains("IPU 8 does not exist") && Contains("holds IPUs 1 to 16"));
  ex["replicas"] = 3;
  const InputError e = error_of([&] { simulate(make_scenario(model, zero_overhead_config(8), ex), {Mode::Pipelined}); });
  CHECK(e.rule() == "scenario.not-enough-ipus");
  CHECK(e.pointer() == "/execution/tensorParallel");
  CHECK_THAT(e.message(), Contains("12 IPUs"));
  ex["replicas"] = 1;
  ex["placement"] = {0, 1};
  CHECK(rule_of([&] { simulate(make_scenario(model, zero_overhead_config(8), ex), {Mode::Pipelined}); }) == "scenario.bad-placement");
}

TEST_CASE("tensor-parallel rules: indivisible axes refused, splits nothing can read kept whole, PopXL and Megatron names",
          "[tensor-parallel][rules]") {
  // 16 heads and a 12288-wide qkv: 5 divides neither.
  const InputError indivisible = error_of([&] {
    load_scenario(kSource + "/scenarios/gpt-j-phased-pod16.json", {{"execution.tensorParallel", 5}});
  });
  CHECK(indivisible.rule() == "tensor-parallel.indivisible");
  CHECK(indivisible.file() == kSource + "/models/gpt-j-6b-phased.json");
  CHECK_THAT(indivisible.message(), Contains("h0/attention/qkv/weight") && Contains("12288"));
  // 3 divides the qkv's 12288 columns but not the 16 heads, so the qkv is kept whole; the
  // attention output projection, then reading a whole activation, would split its 4096 columns.
  const InputError ffn = error_of([&] {
    load_scenario(kSource + "/scenarios/gpt-j-phased-pod16.json", {{"execution.tensorParallel", 3}});
  });
  CHECK(ffn.rule() == "tensor-parallel.indivisible");
  CHECK_THAT(ffn.message(), Contains("h0/attention/out/weight") && Contains("4096"));
  // An op writing an undeclared tensor is the graph's tensor.unknown, before the sharding that
  // runs ahead of the graph (it reached the sharder's lookups: exit 3 "map::at", run campaign seed 644).
  Json undeclared = mlp_block();
  undeclared["tensors"].erase("h");
  const InputError unknown = error_of([&] { make_scenario(undeclared, zero_overhead_config(8), execution(2, true)); });
  CHECK(unknown.rule() == "tensor.unknown");
  CHECK(unknown.pointer() == "/ops/1/outputs/0");
  CHECK_THAT(unknown.message(), Contains("op \"fc1\" writes tensor \"h\", which \"tensors\" does not declare"));
  Json block = mlp_block();
  block["ops"][2] = {{"name", "norm"}, {"type", "LayerNorm"}, {"inputs", {"h", "b1", "b1"}}, {"outputs", {"hb"}},
                     {"virtualGraph", 0}};
  // A LayerNorm over fc1's split output: fc1 is kept whole (as Megatron leaves BERT's MLM dense
  // whole), and fc2, now reading a whole activation, becomes column-parallel.
  const Scenario norm = make_scenario(block, zero_overhead_config(4), execution(4, true));
  REQUIRE(norm.tensor_parallel_kept_whole.size() == 1);
  CHECK(norm.tensor_parallel_kept_whole[0].op == "fc1");
  CHECK_THAT(norm.tensor_parallel_kept_whole[0].reason, Contains("norm (LayerNorm) normalises over the split axis"));
  CHECK(norm.model.tensor("W1").shape == std::vector<std::int64_t>{16, 64});
  CHECK(norm.model.tensor("W2").shape == std::vector<std::int64_t>{64, 4});
  CHECK_THAT(*kept_whole_note(norm), Contains("1 op(s)") && Contains("fc1"));
  // A weight read whole by one op, then split by a matmul: the matmul is kept whole.
  const Json tied = {
      {"name", "tied"},
      {"tensors",
       {{"x", {{"shape", {16, 16}}, {"kind", "input"}}},
        {"W", {{"shape", {16, 16}}, {"kind", "weight"}}},
        {"a", {{"shape", {16, 16}}, {"kind", "activation"}}},
        {"h", {{"shape", {16, 16}}, {"kind", "activation"}}}}},
      {"ops",
       {{{"name", "scale"}, {"type", "Mul"}, {"inputs", {"x", "W"}}, {"outputs", {"a"}}, {"virtualGraph", 0}},
        {{"name", "fc"}, {"type", "MatMul"}, {"inputs", {"a", "W"}}, {"outputs", {"h"}}, {"virtualGraph", 0}}}}};
  const Scenario conflict = make_scenario(tied, zero_overhead_config(4), execution(4, true));
  REQUIRE(conflict.tensor_parallel_kept_whole.size() == 1);
  CHECK(conflict.tensor_parallel_kept_whole[0].op == "fc");
  CHECK_THAT(conflict.tensor_parallel_kept_whole[0].reason, Contains("needs weight W split"));
  CHECK(conflict.model.tensor("W").shape == std::vector<std::int64_t>{16, 16});
  // PopXL's and Megatron's names are read as tensorParallel.
  for (const char* alias : {"tensor_parallel", "tensor_model_parallel_size", "tp"}) {
    Json ex = execution(1, true);
    ex.erase("tensorParallel");
    ex[alias] = 4;
    CHECK(make_scenario(mlp_block(), zero_overhead_config(4), ex).execution.tensor_parallel == 4);
  }
  // PopXL's example configs' names read as ipusim's; the ones without a field say what instead.
  Json popxl = execution(1, true);
  popxl.erase("tensorParallel");
  popxl["micro_batch_size"] = 2;
  popxl["device_iterations"] = 3;
  popxl["gradient_accumulation"] = 8;
  const Scenario read = make_scenario(mlp_block(), zero_overhead_config(4), popxl);
  CHECK(read.execution.micro_batch_size == 2);
  CHECK(read.execution.batches_per_step == 3);
  CHECK(read.execution.gradient_accumulation == 8);
  for (const auto& [name, says] : {std::pair{"ipus_per_replica", "plan --ipus"},
                                   std::pair{"sequence_parallel", "known but not modelled"}}) {
    Json ex = execution(1, true);
    ex[name] = 4;
    try {
      make_scenario(mlp_block(), zero_overhead_config(4), ex);
      FAIL("accepted " << name);
    } catch (const InputError& e) {
      CHECK(e.rule() == "json.unknown-key");
      CHECK_THAT(e.message(), Contains(says));
    }
  }
}

TEST_CASE("ipusim run reports the tensor-parallel group and its all-reduce share", "[tensor-parallel][cli]") {
  const Result r = run_ipusim({"run", kSource + "/scenarios/gpt-j-phased-pod16.json", "--json"});
  REQUIRE(r.exit_code == 0);
  const Json doc = Json::parse(r.out);
  CHECK(doc["execution"]["tensorParallel"] == 16);
  const double share = doc["runs"][0]["timeShares"]["tensorParallelAllReduce"].get<double>();
  CHECK(share > 0);
  CHECK(share < doc["runs"][0]["timeShares"]["compute"].get<double>());
}

TEST_CASE("plan of the GPT-J-sized decoder: tensor parallelism searched, a fitting best at least as fast as Graphcore's",
          "[tensor-parallel][phased][cli]") {
#ifdef IPUSIM_TEST_ASAN
  // 256 engine runs of a 28-layer model take over 12 minutes under AddressSanitizer; the phased
  // plan test of tests/test_phased.cpp runs the same search (tensor parallelism, sharding) there.
  WARN("the GPT-J-sized plan is checked by the release suite only");
  return;
#endif
  const std::string scenario = kSource + "/scenarios/gpt-j-phased-pod16.json";
  const Result plan = run_ipusim({"plan", scenario, "--top", "1"});
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.out, Contains("best: ") && Contains("--set execution.tensorParallel="));
  // The shipped configuration (tensor parallel 16, 1 replica, 128 I/O tiles, PopXL's order,
  // recomputation) is a candidate: the best is at least its throughput.
  const Simulation shipped = simulate(load_scenario(scenario), {Mode::Phased});
  const std::string rank1 = plan.out.substr(plan.out.find("  1  "));
  const std::string row = rank1.substr(0, rank1.find('\n'));
  const std::size_t unit = row.find(" samples/s");  // "17.50 samples/s": below 1,000 a second
  REQUIRE(unit != std::string::npos);
  const std::size_t start = row.rfind(' ', unit - 1) + 1;
  const double best = std::stod(row.substr(start, unit - start));
  CHECK(best >= run_of(shipped, Mode::Phased).throughput_samples_per_s * (1 - 1e-3));
}

TEST_CASE("plan searches tensor parallelism in a pipeline: groups of 2 fit where whole IPUs do not, and the best "
          "written out runs to the engine's figure", "[tensor-parallel][cli][planner]") {
  // GPT-2 small on an IPU-M2000 whose tiles hold 200,000 bytes: no split over whole IPUs fits.
  const std::string scenario = kSource + "/scenarios/gpt2-small-training.json";
  const std::vector<std::string> small_tiles{"--set", "config.ipu.sramBytesPerTile=200000", "--quiet", "--top", "1"};
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"plan", scenario};
    args.insert(args.end(), small_tiles.begin(), small_tiles.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ipusim(args);
  };
  const Result whole_ipus = plan({"--tensor-parallel", "1"});
  CHECK(whole_ipus.exit_code == 5);
  CHECK_THAT(whole_ipus.err, Contains("searching groups of 2 IPUs (--tensor-parallel 2) finds one that fits"));
  // Groups of 4 leave one group on the 4-IPU system: no pipeline.
  const Result too_large = plan({"--tensor-parallel", "4"});
  CHECK(too_large.exit_code == 2);
  CHECK_THAT(too_large.err, Contains("[plan.tensor-parallel]"));
  const TempDir dir;
  const std::string prefix = dir / "best";
  const Result planned = plan({"--write", prefix});
  INFO(planned.out << planned.err);
  REQUIRE(planned.exit_code == 0);
  CHECK(line_starting(planned.out, "#1 2 groups of 2 IPUs (tp 2) x 1 replica, ").size() > 0);
  CHECK(line_starting(planned.out, "tensor parallel: groups of 1 2 IPUs searched").size() > 0);
  const std::string engine = line_starting(planned.out, "  engine:    step ");
  REQUIRE(!engine.empty());
  // The written scenario holds the whole model and tensorParallel 2; run reshards it alike.
  std::ifstream file(prefix + ".scenario.json");
  const Json written = Json::parse(file);
  CHECK(written.at("execution").at("tensorParallel") == 2);
  const Result run = run_ipusim({"run", prefix + ".scenario.json", "--set", "config.ipu.sramBytesPerTile=200000", "--json"});
  REQUIRE(run.exit_code == 0);
  const Json doc = Json::parse(run.out);
  const double throughput = doc.at("runs").at(0).at("throughputSamplesPerSecond").get<double>();
  CHECK(engine.find(", " + format_rate(throughput, "samples/s") + ",") != std::string::npos);
  CHECK(doc.at("runs").at(0).at("memory").at("fits") == true);
}

TEST_CASE("a vocabulary the group does not divide is padded, as Megatron-LM pads it", "[tensor-parallel]") {
  // GPT-2's 50257 tokens over 4 shards: ceil(50257 / 4) = 12565 rows each, the last partly padding;
  // the tied LM head's logits likewise. The layers' 768 columns and 12 heads divide exactly.
  const Scenario sc = load_scenario(kSource + "/scenarios/gpt2-small-training.json", {{"execution.tensorParallel", 4}});
  CHECK(sc.model.tensor("wte").shape == std::vector<std::int64_t>{12565, 768});
  CHECK(sc.model.tensor("lm_head_out").shape.back() == 12565);
  CHECK(sc.model.tensor("h0/ffn/1/weight").shape == std::vector<std::int64_t>{768, 768});
}
