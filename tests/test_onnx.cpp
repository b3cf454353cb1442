// ONNX import (sim/io/onnx_model_loader.cpp), `ipusim convert` and `ipusim annotate`, on
// fixtures written by tests/make_onnx_fixtures.py with python3-onnx's helper: every op the
// importer costs with hand-computed FLOPs, the batch dimension, weights with and without
// data, and each bad input with its located error and exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "cli_runner.hpp"
#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/search/layers.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

// The fixtures, written once per test process; empty when python3-onnx is missing.
const test::TempDir& fixture_dir() {
  static const auto dir = std::make_unique<test::TempDir>();
  return *dir;
}

bool have_fixtures() {
  static const int status = [] {
    const std::string command = "/usr/bin/python3 '" + kSource + "/tests/make_onnx_fixtures.py' '" +
                                fixture_dir().root().string() + "'";
    return std::system(command.c_str());
  }();
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    WARN("skipped: python3-onnx is not installed (apt-get install python3-onnx; scripts/setup.sh installs it)");
    return false;
  }
  REQUIRE(WEXITSTATUS(status) == 0);
  return true;
}

std::string fixture(const std::string& name) { return fixture_dir() / name; }

const Op& op_named(const Model& m, const std::string& name) {
  for (const Op& op : m.ops)
    if (op.name == name) return op;
  FAIL("no op " << name);
  throw;
}

using Shape = std::vector<std::int64_t>;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("onnx: the annotated MLP imports as models/mlp.json has it", "[onnx]") {
  if (!have_fixtures()) return;
  const Model m = load_model(fixture("mlp.onnx"));
  const Model json = load_model(kSource + "/models/mlp.json");
  // The batch dimension "N" is dropped: shapes per sample, as in the JSON model.
  for (const std::string t : {"x0", "W0", "b0", "x1", "x2", "W1", "b1", "x3", "probs"}) {
    INFO(t);
    CHECK(m.tensor(t).shape == json.tensor(t).shape);
    CHECK(m.tensor(t).kind == json.tensor(t).kind);
  }
  for (const std::string name : {"dense1/Gemm", "dense1/Relu", "dense2/Gemm", "dense2/Relu"}) {
    INFO(name);
    CHECK(op_named(m, name).virtual_graph == op_named(json, name).virtual_graph);
    CHECK(derived_flops_per_sample(m, op_named(m, name)) == derived_flops_per_sample(json, op_named(json, name)));
  }
  CHECK(derived_flops_per_sample(m, op_named(m, "dense1/Gemm")) == 2 * 512 * 784 + 512);
  CHECK(m.anchors == std::vector<std::string>{"probs"});
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 2);
  CHECK(g.ipu_of_op == std::vector<int>{0, 0, 1, 1});
  // __pipeline_stage absent: stage = __ipu_number, PopART's default.
  CHECK(build_graph(load_model(fixture("mlp-virtual-graph-only.onnx"))).stage_of_op == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("onnx: __execution_phase is read, kept by convert, run by the phased mode, and the others say they ignore it",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  const Model m = load_model(fixture("mlp-phased.onnx"));
  std::vector<std::int64_t> phases;
  for (const Op& op : m.ops) phases.push_back(op.execution_phase.value_or(-1));
  CHECK(phases == std::vector<std::int64_t>{0, 0, 1, 1});
  CHECK(build_graph(m).phase_count == 2);
  const test::Result validated = test::run_ipusim({"validate", fixture("mlp-phased.onnx")});
  CHECK(validated.exit_code == 0);
  CHECK_THAT(validated.err, Contains("4 ops carry executionPhase (2 phases)"));
  const test::Result converted = test::run_ipusim({"convert", fixture("mlp-phased.onnx"), "-o", "-"});
  REQUIRE(converted.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(converted.out);
  CHECK(doc["ops"][2]["executionPhase"] == 1);
  const test::Result ran = test::run_ipusim({"run", fixture("mlp-phased.onnx"), "--config",
                                             kSource + "/configs/ipu-m2000.json", "--json"});
  REQUIRE(ran.exit_code == 0);
  CHECK_THAT(ran.err, Contains("ipusim: warning: ") && Contains("executionPhase") &&
                          Contains("place the ops by virtualGraph and pipelineStage alone"));
  // The phased mode runs by the phases: two phases, phase p on IPU p (stages 2), no warning.
  const test::Result phased = test::run_ipusim({"run", fixture("mlp-phased.onnx"), "--config",
                                                kSource + "/configs/ipu-m2000.json", "--mode", "phased", "--json"});
  REQUIRE(phased.exit_code == 0);
  CHECK(phased.err.find("warning") == std::string::npos);
  const nlohmann::json run = nlohmann::json::parse(phased.out);
  CHECK(run["runs"][0]["mode"] == "phased");
  CHECK(run["plan"]["stages"].size() == 2);
  CHECK(run["execution"]["executionPhaseSettings"]["stages"] == 2);
}

TEST_CASE("onnx: every supported op imports with its per-sample shape and FLOPs", "[onnx]") {
  if (!have_fixtures()) return;
  const Model m = load_model(fixture("every-op.onnx"));
  // Shape-computing inputs (Reshape targets, Slice bounds, constant Gather indices) are
  // constants of the graph, not tensors of the model.
  CHECK(op_named(m, "reshape_rows").inputs == std::vector<std::string>{"flat"});
  CHECK(op_named(m, "gather").inputs == std::vector<std::string>{"table"});
  CHECK(m.tensor("rows").shape == Shape{4, 32});  // [N*4, 32]: 4 rows per sample
  CHECK(m.tensor("fc").shape == Shape{4, 4});     // the same symbol, learned from the reshape
  CHECK(m.tensor("tokens").shape == Shape{4, 32});
  CHECK(m.tensor("scores").shape == Shape{2, 4, 4});
  CHECK(m.tensor("emb").shape == Shape{3, 16});
  CHECK(m.tensor("table").kind == TensorKind::Weight);
  CHECK(m.tensor("x").kind == TensorKind::Input);
  auto flops = [&](const std::string& name) { return derived_flops_per_sample(m, op_named(m, name)); };
  // By hand from docs/formats.md's table.
  CHECK(flops("conv") == 2 * 512 * 27 + 512);    // stride 2: 8 x 8 outputs per channel
  CHECK(flops("grouped_conv") == 2 * 512 * 18);  // 4 groups: 2 input channels x 3 x 3 each
  CHECK(flops("bn") == 4 * 512);
  CHECK(flops("maxpool") == 4 * 128);            // kernel_shape 2 x 2
  CHECK(flops("avgpool") == 9 * 128);            // kernel_shape 3 x 3
  CHECK(flops("global_pool") == 128);            // one per input element
  CHECK(flops("flatten") == 0);
  CHECK(flops("gemm") == 2 * 16 * 32 + 16);      // transB: K is still the 32 of the first input
  CHECK(flops("matmul") == 2 * 64 * 32);
  CHECK(flops("batched_matmul") == 2 * 32 * 8);  // 2 heads x 4 x 4 outputs, K = 8
  CHECK(flops("layernorm") == 8 * 64);
  CHECK(flops("softmax") == 5 * 64);
  CHECK(flops("gather") == 48);
  CHECK(flops("slice") == 64);
  CHECK(flops("split") == 64);
  CHECK(flops("erf") == 4 * 32);
  CHECK(flops("leaky_relu") == 2 * 32);
  CHECK(flops("reduce_sum") == 32);
  CHECK(flops("squeeze") == 0);
  for (const Op& op : m.ops) CHECK_NOTHROW(derived_flops_per_sample(m, op));
  // The node attributes the cost model may read are kept.
  CHECK(std::get<std::vector<std::int64_t>>(op_named(m, "conv").attributes.at("strides")) == Shape{2, 2});
  CHECK(std::get<std::int64_t>(op_named(m, "grouped_conv").attributes.at("group")) == 4);
}

TEST_CASE("onnx: Gemm with transA contracts over the first input's first dimension", "[onnx]") {
  Model m;
  m.file = "gemm";
  m.tensors["a"] = Tensor{"a", {32, 4}, DType::Float32, TensorKind::Input};
  m.tensors["w"] = Tensor{"w", {32, 8}, DType::Float32, TensorKind::Weight};
  m.tensors["y"] = Tensor{"y", {4, 8}, DType::Float32, TensorKind::Activation};
  Op op;
  op.name = "gemm";
  op.type = "Gemm";
  op.inputs = {"a", "w"};
  op.outputs = {"y"};
  op.attributes["transA"] = std::int64_t{1};
  m.ops.push_back(op);
  CHECK(derived_flops_per_sample(m, m.ops[0]) == 2 * 32 * 32);  // K = 32, not 4
}

TEST_CASE("onnx: a static batch dimension is named by the batch size", "[onnx]") {
  if (!have_fixtures()) return;
  OnnxImportOptions batch4;
  batch4.batch_size = 4;
  const Model m = load_model(fixture("mlp-static-batch.onnx"), batch4);
  CHECK(m.tensor("x0").shape == Shape{784});
  CHECK(m.tensor("x1").shape == Shape{512});
  CHECK(m.tensor("W0").shape == Shape{784, 512});  // weights keep their shapes
  // Without it, the file's shapes are taken as one sample's.
  CHECK(load_model(fixture("mlp-static-batch.onnx")).tensor("x0").shape == Shape{4, 784});
}

TEST_CASE("onnx: weights with data, in an external file, or shapes only all load alike", "[onnx]") {
  if (!have_fixtures()) return;
  const Model shapes_only = load_model(fixture("mlp.onnx"));
  for (const std::string f : {"mlp-with-data.onnx", "mlp-external.onnx"}) {
    INFO(f);
    const Model m = load_model(fixture(f));
    CHECK(m.tensor("W0").shape == shapes_only.tensor("W0").shape);
    CHECK(m.tensor("W0").kind == TensorKind::Weight);
    CHECK(m.ops.size() == shapes_only.ops.size());
  }
}

TEST_CASE("onnx: every bad input exits 2 with its file, place and rule", "[onnx][cli]") {
  if (!have_fixtures()) return;
  struct Case {
    std::string file, rule, where;
  };
  const std::vector<Case> cases{
      {"bad-missing-ipu.onnx", "[annotation.mixed-virtual-graph]", "/graph/node/"},
      {"bad-float-ipu.onnx", "[annotation.not-integer]", "at /graph/node/1"},
      {"bad-negative-ipu.onnx", "[annotation.negative]", "at /graph/node/1"},
      {"bad-stride.onnx", "[op.attribute-range]", "at /graph/node/1/attribute/2/1"},
      {"bad-unknown-op.onnx", "[onnx.shape-unknown]", "at /graph/node/3"},
      {"bad-shape-mismatch.onnx", "[onnx.shape-inference]", "at /graph"},
      {"bad-symbolic-feature.onnx", "[onnx.shape-unknown]", "at /graph/input/0"},
      {"bad-batch-disagreement.onnx", "[onnx.batch-dimension]", "at /graph/input/1"},
      {"bad-double.onnx", "[onnx.unsupported-dtype]", "at /graph/input/0"},
      {"bad-truncated.onnx", "[onnx.unreadable]", "at /"},
      {"bad-not-onnx.onnx", "[onnx.unreadable]", "at /"},
      {"mlp-external-missing.onnx", "[onnx.external-data]", "at /graph/initializer/0"},
      // Each of these crashed libonnx's shape inference or the importer (issue 23).
      {"bad-huge-input.onnx", "[tensor.bad-shape]", "at /graph/input/0"},  // fuzz_onnx finding
      {"bad-hardmax.onnx", "[op.flops-underivable]", "at /graph/node/"},  // validate costs every op, as run does
      {"bad-scan-without-body.onnx", "[onnx.bad-node]", "at /graph/node/3: node \"/Scan\" (Scan)"},
      {"bad-raw-data-length.onnx", "[onnx.bad-tensor]", "at /graph/node/0/attribute/0/t/raw_data"},
      {"bad-empty-dims-with-data.onnx", "[onnx.bad-tensor]", "at /graph/initializer/2/int64_data"},
      {"bad-dims-overflow.onnx", "[onnx.bad-tensor]", "at /graph/initializer/1/dims"},
      {"bad-external-offset-overflow.onnx", "[onnx.external-data]", "at /graph/initializer/0"},
      {"bad-local-function.onnx", "[onnx.local-function]", "at /functions/0"},
      {"bad-name-utf8.onnx", "[onnx.bad-name]", "at /graph/node/2/name"},  // fuzz_onnx finding
      {"bad-sparse-initializer.onnx", "[onnx.sparse-tensor]", "at /graph/sparse_initializer/0"},
      {"bad-conv-weight-rank.onnx", "[onnx.bad-node]", "at /graph/node/0/input/1"},  // fuzz_onnx finding
      {"bad-conv-computed-weight.onnx", "[onnx.bad-node]", "at /graph/node/1/input/1"},
      {"bad-conv-inferred-weight-rank.onnx", "[onnx.bad-node]", "at /graph/node/1/input/1"},
      // Inputs nothing defines (issue 39): libonnx's data propagation read a null pointer (SIGSEGV).
      {"bad-undefined-shape-input.onnx", "[onnx.undefined-input]", "at /graph/node/0/input/0"},
      {"bad-no-graph-inputs.onnx", "[onnx.undefined-input]", "at /graph/node/0/input/1"},
      {"bad-undefined-in-subgraph.onnx", "[onnx.undefined-input]", "at /graph/node/1/attribute/0/g/node/0/input/0"},
      {"bad-node-order.onnx", "[onnx.node-order]", "at /graph/node/1/input/0"},
      {"bad-shape-of-unknown-op.onnx", "[onnx.shape-unknown]", "at /graph/node/1/input/0"},  // fuzz_onnx finding
      {"bad-shape-of-untyped-chain.onnx", "[onnx.shape-unknown]", "at /graph/node/2/input/0"},  // fuzz_onnx, CI
  };
  for (const Case& c : cases) {
    INFO(c.file);
    const test::Result r = test::run_ipusim({"validate", fixture(c.file)});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(fixture(c.file)) && Contains(c.rule) && Contains(c.where));
    CHECK_THAT(r.err, !Contains("internal fault"));
  }
  // A pipelining-only rule: the model is valid for sharded runs, and validate says which rule
  // pipelined runs would refuse, where.
  const test::Result r = test::run_ipusim({"validate", fixture("bad-stage-without-ipu.onnx")});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("sharded runs only") && Contains("[annotation.stage-without-virtual-graph]") &&
                        Contains("/graph/node/"));
}

TEST_CASE("onnx: a Constant node before the ops (as torch.onnx.export writes) keeps op indices dense",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  // Six nodes, the first a Constant the importer drops: the ops are numbered 0-4 (graphs index
  // their tables by it: ipu_of_op[5] was out of bounds, SIGSEGV), errors still name node indices.
  const Model m = load_model(fixture("constant-first.onnx"));
  REQUIRE(m.ops.size() == 5);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    CHECK(m.ops[i].index == i);
    CHECK(m.op_pointer(m.ops[i]) == "/graph/node/" + std::to_string(i + 1));
  }
  const ModelGraph g = build_graph(m);
  CHECK(g.ipu_of_op == std::vector<int>{0, 0, 1, 1, 1});
  const test::TempDir dir;
  REQUIRE(test::run_ipusim({"convert", fixture("constant-first.onnx"), "-o", dir / "cf.json"}).exit_code == 0);
  const std::string config = kSource + "/configs/ipu-m2000.json";
  for (const std::string mode : {"sharded", "pipelined"}) {
    INFO(mode);
    const test::Result onnx =
        test::run_ipusim({"run", fixture("constant-first.onnx"), "--config", config, "--mode", mode, "--json"});
    const test::Result json = test::run_ipusim({"run", dir / "cf.json", "--config", config, "--mode", mode, "--json"});
    REQUIRE(onnx.exit_code == 0);
    REQUIRE(json.exit_code == 0);
    CHECK(nlohmann::json::parse(onnx.out)["runs"] == nlohmann::json::parse(json.out)["runs"]);
  }
  CHECK(test::run_ipusim({"validate", fixture("constant-first.onnx")}).exit_code == 0);
}

TEST_CASE("onnx: a head tied to the embedding reads the one weight, through a Transpose node or a folded copy",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  for (const std::string file : {"tied-transpose.onnx", "tied-folded.onnx"}) {
    INFO(file);
    const Model m = load_model(fixture(file));
    // One 32 x 8 weight: the transposed copy is not a second weight, nor an activation
    // (which would be held per sample), and the Transpose node is not an op.
    std::vector<std::string> weights;
    for (const auto& [name, t] : m.tensors)
      if (t.kind == TensorKind::Weight) weights.push_back(name);
    CHECK(weights == std::vector<std::string>{"emb"});
    REQUIRE(m.ops.size() == 3);
    const Op& head = op_named(m, "/head/MatMul");
    CHECK(head.inputs == std::vector<std::string>{"h1", "emb"});
    CHECK(std::get<std::int64_t>(head.attributes.at("transB")) == 1);
    // 2 x 4 tokens x 8 x 32 FLOPs per sample, as the untied product.
    CHECK(derived_flops_per_sample(m, head) == 2.0 * 4 * 8 * 32);
    // The embedding on IPU 0 and the head on IPU 1 share the weight: refused, as PopART would.
    const test::Result r = test::run_ipusim({"run", fixture(file), "--config", kSource + "/configs/ipu-m2000.json",
                                             "--mode", "sharded"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("weight \"emb\"") && Contains("[annotation.weight-on-several-ipus]"));
  }
}

TEST_CASE("onnx: two zero-initialised weights on two IPUs are two weights, never tied by their equal values",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  // Equal (all zeros) and each the other's transpose: tied by value, they were one weight on
  // two IPUs and the run was refused [annotation.weight-on-several-ipus].
  const Model m = load_model(fixture("zero-weights.onnx"));
  std::vector<std::string> weights;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) weights.push_back(name);
  CHECK(weights == std::vector<std::string>{"fc0.weight", "fc1.weight"});
  CHECK(op_named(m, "/fc1/MatMul").inputs == std::vector<std::string>{"h1", "fc1.weight"});
  const test::TempDir dir;
  const std::string json = dir.root() / "zero-weights.json";
  REQUIRE(test::run_ipusim({"convert", fixture("zero-weights.onnx"), "-o", json}).exit_code == 0);
  const std::vector<std::string> options{"--config", kSource + "/configs/ipu-m2000.json", "--mode", "pipelined",
                                         "--set", "execution.training=true", "--json"};
  std::vector<std::string> onnx_run{"run", fixture("zero-weights.onnx")}, json_run{"run", json};
  onnx_run.insert(onnx_run.end(), options.begin(), options.end());
  json_run.insert(json_run.end(), options.begin(), options.end());
  const test::Result from_onnx = test::run_ipusim(onnx_run), from_json = test::run_ipusim(json_run);
  REQUIRE(from_onnx.exit_code == 0);
  REQUIRE(from_json.exit_code == 0);
  const auto a = nlohmann::json::parse(from_onnx.out), b = nlohmann::json::parse(from_json.out);
  CHECK(a["runs"] == b["runs"]);
  CHECK(a["runs"][0]["stepTimeSeconds"].get<double>() > 0);
}

TEST_CASE("onnx: an op type ipusim cannot cost names the node and how to give its FLOPs", "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  const std::string scenario = dir.write(
      "s.json", nlohmann::json{{"model", fixture("bad-unknown-op-with-shape.onnx")},
                               {"config", kSource + "/configs/ipu-m2000.json"},
                               {"execution", {{"microBatchSize", 4}}}});
  const test::Result r = test::run_ipusim({"validate", scenario});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("at /graph/node/3") && Contains("NoSuchOp") && Contains("[op.flops-underivable]") &&
                        Contains("ipusim convert"));
}

TEST_CASE("onnx: run on an ONNX scenario gives the numbers of its JSON conversion", "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  const test::Result c = test::run_ipusim({"convert", fixture("mlp.onnx"), "-o", dir / "mlp.json"});
  REQUIRE(c.exit_code == 0);
  const nlohmann::json execution{{"training", true}, {"microBatchSize", 16}, {"gradientAccumulation", 8}};
  auto scenario = [&](const std::string& name, const std::string& model) {
    return dir.write(name, nlohmann::json{{"name", "mlp"}, {"model", model},
                                          {"config", kSource + "/configs/ipu-m2000.json"},
                                          {"execution", execution}});
  };
  const test::Result onnx = test::run_ipusim({"run", scenario("onnx.json", fixture("mlp.onnx")), "--json"});
  const test::Result json = test::run_ipusim({"run", scenario("json.json", dir / "mlp.json"), "--json"});
  REQUIRE(onnx.exit_code == 0);
  REQUIRE(json.exit_code == 0);
  const auto a = nlohmann::json::parse(onnx.out), b = nlohmann::json::parse(json.out);
  REQUIRE(a["runs"].size() == 2);
  CHECK(a["runs"] == b["runs"]);
  CHECK(a["runs"][1]["stepTimeSeconds"].get<double>() > 0);
}

TEST_CASE("onnx: convert writes JSON that loads as the same model, and refuses to overwrite", "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  const std::string out = dir / "every-op.json";
  REQUIRE(test::run_ipusim({"convert", fixture("every-op.onnx"), "-o", out}).exit_code == 0);
  const Model a = load_model(fixture("every-op.onnx"));
  const Model b = load_model(out);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    INFO(a.ops[i].name);
    CHECK(a.ops[i].name == b.ops[i].name);
    CHECK(a.ops[i].inputs == b.ops[i].inputs);
    CHECK(a.ops[i].attributes == b.ops[i].attributes);
    CHECK(derived_flops_per_sample(a, a.ops[i]) == derived_flops_per_sample(b, b.ops[i]));
  }
  for (const auto& [name, t] : a.tensors) CHECK(b.tensor(name).shape == t.shape);
  const std::string before = slurp(out);
  const test::Result again = test::run_ipusim({"convert", fixture("every-op.onnx"), "-o", out});
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.err, Contains("[output.exists]"));
  CHECK(slurp(out) == before);
}

TEST_CASE("onnx: annotate places detected layers by --layers-per-ipu and --heads-on", "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  // layers.0 .. layers.3: one on IPU 0 with the stem, one on IPU 1, two on IPU 2.
  const std::string last = dir / "last.onnx";
  const test::Result r =
      test::run_ipusim({"annotate", fixture("layered.onnx"), "--layers-per-ipu", "1,1,2", "-o", last});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("4 layers (layers.0 ... layers.3)"));
  const Model m = load_model(last);
  const ModelGraph g = build_graph(m);
  CHECK(g.ipu_of_op == std::vector<int>{0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2});
  CHECK(g.stage_of_op == g.ipu_of_op);
  // Heads back on IPU 0 in a new final stage, written straight to JSON.
  const std::string first = dir / "first.json";
  REQUIRE(test::run_ipusim({"annotate", fixture("layered.onnx"), "--layers-per-ipu", "1,1,2", "--heads-on", "0",
                            "-o", first})
              .exit_code == 0);
  const Model j = load_model(first);
  const ModelGraph h = build_graph(j);
  CHECK(h.ipu_of_op == std::vector<int>{0, 0, 0, 1, 1, 2, 2, 2, 2, 0, 0});
  CHECK(h.stage_of_op == std::vector<int>{0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3});
  // A split that does not add up names the layers it found.
  const test::Result bad =
      test::run_ipusim({"annotate", fixture("layered.onnx"), "--layers-per-ipu", "1,1", "-o", dir / "bad.onnx"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("[annotate.layer-count]") && Contains("layers.3"));
  CHECK_FALSE(fs::exists(dir / "bad.onnx"));
  // --phased 2: the stem in phase 0, layers.0..3 in phases 1..4, the head in 5; phase p on IPU p % 2.
  const std::string phased = dir / "phased.onnx";
  REQUIRE(test::run_ipusim({"annotate", fixture("layered.onnx"), "--phased", "2", "-o", phased}).exit_code == 0);
  const Model p = load_model(phased);
  std::vector<std::int64_t> phases;
  for (const Op& op : p.ops) phases.push_back(op.execution_phase.value_or(-1));
  CHECK(phases == std::vector<std::int64_t>{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
  CHECK(build_graph(p).ipu_of_op == std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1});
  const test::Result ran = test::run_ipusim({"run", phased, "--config", kSource + "/configs/ipu-m2000.json",
                                             "--mode", "phased", "--json"});
  CHECK(ran.exit_code == 0);
  CHECK_THAT(ran.err, !Contains("warning"));
  CHECK(test::run_ipusim({"annotate", fixture("layered.onnx"), "--phased", "2", "--layers-per-ipu", "1,1,2", "-o",
                          dir / "both.onnx"})
            .exit_code == 2);
}

TEST_CASE("onnx: annotate and plan find the same layers in a PyTorch export of GPT-2 (scoped and op-numbered names)",
          "[onnx][cli][layers]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  for (const char* name : {"gpt2-export.onnx", "gpt2-export-legacy.onnx"}) {
    INFO(name);
    const std::string placed = dir / (std::string(name) + ".json");
    const test::Result a =
        test::run_ipusim({"annotate", fixture(name), "--layers-per-ipu", "1,1,1", "-o", placed});
    REQUIRE(a.exit_code == 0);
    CHECK_THAT(a.out, Contains("3 layers (transformer.h.0 ... transformer.h.2)"));
    const std::string scenario = dir.write(
        std::string(name) + ".scenario.json",
        nlohmann::json{{"model", fixture(name)}, {"config", kSource + "/configs/ipu-m2000.json"},
                       {"execution", {{"training", true}, {"gradientAccumulation", 16}}}});
    const test::Result p = test::run_ipusim({"plan", scenario, "--explain-layers"});
    REQUIRE(p.exit_code == 0);
    CHECK_THAT(p.out, Contains("3 layers of the template \"transformer.h.#\": transformer.h.0 (11 ops)"));
    // Op by op the same: annotate's IPU of each node is the planner's unit (stem on IPU 0, heads on the last).
    const LayerStructure layers = detect_layers(load_model(fixture(name)));
    const ModelGraph g = build_graph(load_model(placed));
    REQUIRE(layers.unit_of_op.size() == g.ipu_of_op.size());
    for (std::size_t i = 0; i < g.ipu_of_op.size(); ++i) CHECK(g.ipu_of_op[i] == std::clamp(layers.unit_of_op[i], 0, 2));
  }
}

TEST_CASE("onnx: annotate --split-at places by node-name prefixes", "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  const std::string out = dir / "split.onnx";
  REQUIRE(test::run_ipusim({"annotate", fixture("layered.onnx"), "--split-at", "layers.2", "--split-at", "head", "-o",
                            out})
              .exit_code == 0);
  CHECK(build_graph(load_model(out)).ipu_of_op == std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2});
  const test::Result bad =
      test::run_ipusim({"annotate", fixture("layered.onnx"), "--split-at", "nowhere", "-o", dir / "bad.onnx"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("[annotate.split-not-found]"));
}

TEST_CASE("onnx: --set model.ops.N.flops gives an uncostable op its FLOPs through the JSON conversion",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  const std::string scenario = dir.write(
      "s.json", nlohmann::json{{"model", fixture("bad-unknown-op-with-shape.onnx")},
                               {"config", kSource + "/configs/ipu-m2000.json"},
                               {"execution", {{"microBatchSize", 4}, {"batchesPerStep", 2}}}});
  const test::Result r = test::run_ipusim({"validate", scenario, "--set", "model.ops.3.flops=100"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("valid scenario"));
}

TEST_CASE("onnx: a scenario's modelBatchSize names a static batch, and is refused for a JSON model",
          "[onnx][cli]") {
  if (!have_fixtures()) return;
  const test::TempDir dir;
  auto scenario = [&](const std::string& model, const nlohmann::json& batch) {
    nlohmann::json s{{"model", model}, {"config", kSource + "/configs/ipu-m2000.json"},
                     {"execution", {{"microBatchSize", 4}}}, {"modelBatchSize", batch}};
    return dir.write("s.json", s);
  };
  const Scenario onnx = load_scenario(scenario(fixture("mlp-static-batch.onnx"), 4));
  CHECK(onnx.model.tensor("x0").shape == Shape{784});
  const test::Result json = test::run_ipusim({"validate", scenario(kSource + "/models/mlp.json", 4)});
  CHECK(json.exit_code == 2);
  CHECK_THAT(json.err, Contains("at /modelBatchSize") && Contains("[scenario.model-batch-size]"));
  const test::Result zero = test::run_ipusim({"validate", scenario(fixture("mlp-static-batch.onnx"), 0)});
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Contains("at /modelBatchSize") && Contains("[value.not-positive]"));
  const test::Result huge = test::run_ipusim({"validate", scenario(fixture("mlp-static-batch.onnx"), 2000000)});
  CHECK(huge.exit_code == 2);
  CHECK_THAT(huge.err, Contains("at /modelBatchSize") && Contains("[value.too-large]"));
}
