// A real exporter: PyTorch 1.13 (Debian's python3-torch, python3-torchvision) exports
// torchvision's ResNet-50 and a 6-layer torch.nn.TransformerEncoder to ONNX without weight
// data (tests/torch_export.py); `ipusim annotate` places them; the imported parameter
// count and FLOPs must equal PyTorch's own; a GPT-style decoder exported with its weights and
// constant folding (Constant and Shape nodes, a tied head) must import with the same counts
// and run as its JSON conversion does. Skipped, saying so, where PyTorch is missing.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "cli_runner.hpp"
#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "temp_dir.hpp"

using namespace ipusim;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

const test::TempDir& export_dir() {
  static const auto dir = std::make_unique<test::TempDir>();
  return *dir;
}

// Exports one model; false (with a warning) when PyTorch is missing.
bool exported(const std::string& model) {
  const std::string command = "/usr/bin/python3 '" + kSource + "/tests/torch_export.py' '" +
                              export_dir().root().string() + "' " + model;
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    WARN("skipped: PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch "
         "python3-torchvision python3-onnx; scripts/setup.sh installs them when CI=true or IPUSIM_TORCH_TESTS=1)");
    return false;
  }
  REQUIRE(WEXITSTATUS(status) == 0);
  return true;
}

nlohmann::json torch_counts(const std::string& name) {
  std::ifstream in(export_dir() / (name + ".json"));
  return nlohmann::json::parse(in);
}

double weight_elements(const Model& m) {
  double n = 0;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) n += static_cast<double>(t.elements());
  return n;
}

// FLOPs of the convolutions and matrix products without their bias additions: what
// torch.profiler counts (2 per multiply-accumulate of aten::conv2d, addmm, mm, bmm).
double product_flops(const Model& m) {
  double f = 0;
  for (const Op& op : m.ops) {
    if (op.type != "Conv" && op.type != "Gemm" && op.type != "MatMul") continue;
    double out = 0;
    for (const auto& t : op.outputs) out += static_cast<double>(m.tensor(t).elements());
    f += derived_flops_per_sample(m, op) - (op.inputs.size() > 2 ? out : 0.0);
  }
  return f;
}

} // namespace

TEST_CASE("torch: torchvision's ResNet-50, exported and annotated, has PyTorch's parameters and FLOPs",
          "[onnx][torch]") {
  if (!exported("resnet50")) return;
  const nlohmann::json counts = torch_counts("resnet50");
  const std::string annotated = export_dir() / "resnet50-annotated.onnx";
  const test::Result r = test::run_ipusim(
      {"annotate", export_dir() / "resnet50.onnx", "--layers-per-ipu", "3,4,6,3", "-o", annotated});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Matchers::Contains("16 layers (layer1.layer1.0 ... layer4.layer4.2)"));
  const Model m = load_model(annotated);
  // 25,557,032 parameters, plus BatchNormalization's running mean and variance (53,120),
  // which the ONNX graph reads as initializers and ipusim holds as weights.
  CHECK(counts["parameters"] == 25557032);
  CHECK(weight_elements(m) == counts["parameters"].get<double>() + counts["buffers"].get<double>());
  // 2 x 4,089,184,256 multiply-accumulates per sample.
  CHECK(product_flops(m) == counts["flops"].get<double>());
  CHECK(product_flops(m) == 2 * 4089184256.0);
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 4);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    if (m.ops[i].name.rfind("/layer3/", 0) == 0) CHECK(g.ipu_of_op[i] == 2);
    if (m.ops[i].name == "/fc/Gemm") CHECK(g.ipu_of_op[i] == 3);
    if (m.ops[i].name == "/conv1/Conv") CHECK(g.ipu_of_op[i] == 0);
  }
}

TEST_CASE("torch: a TransformerEncoder, exported and annotated, has PyTorch's parameters and FLOPs",
          "[onnx][torch]") {
  if (!exported("encoder")) return;
  const nlohmann::json counts = torch_counts("encoder");
  const std::string annotated = export_dir() / "encoder-annotated.json";
  const test::Result r = test::run_ipusim({"annotate", export_dir() / "encoder.onnx", "--layers-per-ipu", "2,2,2",
                                           "--heads-on", "last", "-o", annotated});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Matchers::Contains("6 layers (encoder.layers.0 ... encoder.layers.5)"));
  const Model m = load_model(annotated);
  // 6 x (in_proj 64 x 192 + 192, out_proj 64 x 64 + 64, two LayerNorms 256, 64 x 128 + 128,
  // 128 x 64 + 64) + head 64 x 10 + 10 = 201,482.
  CHECK(counts["parameters"] == 201482);
  CHECK(weight_elements(m) == counts["parameters"].get<double>());
  // Per sample of 16 tokens: 6 x (16 x 64 x 192 + 16 x 64 x 64 + 2 x 16 x 64 x 128) MACs in
  // the projections, 6 x 2 x 4 x 16 x 16 x 16 in attention, 16 x 64 x 10 in the head.
  CHECK(counts["flops"] == 2 * (6 * (196608 + 65536 + 262144) + 6 * 32768 + 10240));
  CHECK(product_flops(m) == counts["flops"].get<double>());
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 3);
  // The planner finds the same six layers in the export (the detector annotate uses).
  const test::TempDir scenarios;
  const std::string scenario = scenarios.write(
      "encoder.scenario.json", nlohmann::json{{"model", std::string(export_dir() / "encoder.onnx")},
                                              {"config", kSource + "/configs/ipu-m2000.json"},
                                              {"execution", {{"batchesPerStep", 16}}}});
  const test::Result plan = test::run_ipusim({"plan", scenario, "--explain-layers"});
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.out, Catch::Matchers::Contains("6 layers of the template \"encoder.layers.#\""));
}

TEST_CASE("torch: a GPT-style decoder exported as a user would (weights, constant folding, tied head) imports "
          "right",
          "[onnx][torch]") {
  if (!exported("decoder")) return;
  const nlohmann::json counts = torch_counts("decoder");
  const std::string onnx = export_dir() / "decoder.onnx";
  const Model m = load_model(onnx);
  // The export starts with Constant and Shape nodes the importer drops: op indices are dense
  // while error pointers keep the node indices (build_graph indexed by node index: SIGSEGV).
  bool dropped_before_an_op = false;
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    CHECK(m.ops[i].index == i);
    dropped_before_an_op = dropped_before_an_op || m.ops[i].source_index != i;
  }
  CHECK(dropped_before_an_op);
  // 128 x 64 tokens (tied to the head) + 16 x 64 positions + 2 x (64 x 192 + 192 + 64 x 64 + 64 +
  // 64 x 256 + 256 + 256 x 64 + 64 + 4 x 64) + 2 x 64 = 109,312. Constant folding wrote the
  // head's transposed copy of the tokens (64 x 128, 8,192 more) as an initializer of its own:
  // counted once, as the weight it is. The 16 x 16 causal mask buffer (a slice of it, folded)
  // is a constant of the graph, not a weight: it is not trained.
  CHECK(counts["parameters"] == 109312);
  CHECK(counts["buffers"] == 256);
  CHECK(weight_elements(m) == counts["parameters"].get<double>());
  for (const Op& op : m.ops)
    if (op.name == "/head/MatMul") {
      CHECK(op.inputs.at(1) == "tokens.weight");
      CHECK(std::get<std::int64_t>(op.attributes.at("transB")) == 1);
    }
  // Per sample of 16 tokens: 2 x (16 x 64 x 192 + 16 x 64 x 64 + 2 x 16 x 64 x 256) MACs in the
  // projections, 2 x 2 x 4 x 16 x 16 x 16 in attention, 16 x 64 x 128 in the head.
  CHECK(counts["flops"] == 2 * (2 * (196608 + 65536 + 524288) + 2 * 32768 + 131072));
  CHECK(product_flops(m) == counts["flops"].get<double>());
  // The exported weights are fp32; --dtype float16 says the model runs in fp16.
  OnnxImportOptions half;
  half.float_dtype = DType::Float16;
  for (const auto& [name, t] : load_onnx_model(onnx, half).tensors)
    if (t.kind == TensorKind::Weight) CHECK(t.dtype == DType::Float16);

  // The tied weight lives on one IPU: the head on IPU 1 is refused, the head back on IPU 0 runs.
  const std::string last = export_dir() / "decoder-last.onnx", first = export_dir() / "decoder-0.onnx";
  REQUIRE(test::run_ipusim({"annotate", onnx, "--layers-per-ipu", "1,1", "--heads-on", "last", "-o", last})
              .exit_code == 0);
  REQUIRE(test::run_ipusim({"annotate", onnx, "--layers-per-ipu", "1,1", "--heads-on", "0", "-o", first})
              .exit_code == 0);
  const std::vector<std::string> training{"--config", kSource + "/configs/ipu-m2000.json", "--set",
                                          "execution.training=true", "--set", "execution.gradientAccumulation=8",
                                          "--mode", "pipelined", "--json"};
  auto run = [&](const std::string& model) {
    std::vector<std::string> args{"run", model};
    args.insert(args.end(), training.begin(), training.end());
    return test::run_ipusim(args);
  };
  const test::Result refused = run(last);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Matchers::Contains("\"tokens.weight\"") &&
                              Catch::Matchers::Contains("[annotation.weight-on-several-ipus]"));
  const test::Result ran = run(first);
  REQUIRE(ran.exit_code == 0);
  // No loss in the export: training says what that means instead of streaming logits silently.
  CHECK_THAT(ran.err, Catch::Matchers::Contains("training a model without a loss op") &&
                          Catch::Matchers::Contains("\"logits\""));
  // Step times, memory and every figure equal those of its JSON conversion.
  const std::string json = export_dir() / "decoder-0.json";
  REQUIRE(test::run_ipusim({"convert", first, "-o", json}).exit_code == 0);
  const test::Result converted = run(json);
  REQUIRE(converted.exit_code == 0);
  const auto a = nlohmann::json::parse(ran.out), b = nlohmann::json::parse(converted.out);
  CHECK(a["runs"] == b["runs"]);
  CHECK(a["runs"][0]["stepTimeSeconds"].get<double>() > 0);
}

TEST_CASE("torch: the decoder exported at opset 17 imports as at opset 13, and without its graph inputs is refused, "
          "not a crash",
          "[onnx][torch]") {
  if (!exported("decoder17") || !exported("decoder")) return;
  const std::string onnx17 = export_dir() / "decoder-opset17.onnx";
  const Model m17 = load_model(onnx17), m13 = load_model(export_dir() / "decoder.onnx");
  const nlohmann::json counts = torch_counts("decoder-opset17");
  CHECK(weight_elements(m17) == counts["parameters"].get<double>());
  CHECK(product_flops(m17) == counts["flops"].get<double>());
  CHECK(product_flops(m17) == product_flops(m13));
  // The reproducer: the same file with its graph.input list removed crashed libonnx's
  // inference with data propagation (SIGSEGV, exit 139, in validate, convert and run).
  const std::string stripped = export_dir() / "decoder-opset17-no-inputs.onnx";
  const std::string strip = "/usr/bin/python3 -c \"import onnx, sys; m = onnx.load(sys.argv[1]); "
                            "del m.graph.input[:]; onnx.save(m, sys.argv[2])\" '" + onnx17 + "' '" + stripped + "'";
  REQUIRE(std::system(strip.c_str()) == 0);
  for (const char* command : {"validate", "convert", "run"}) {
    std::vector<std::string> args{command, stripped};
    if (std::string(command) == "convert") args.insert(args.end(), {"-o", "-"});
    if (std::string(command) == "run") args.insert(args.end(), {"--config", kSource + "/configs/ipu-m2000.json"});
    const test::Result r = test::run_ipusim(args);
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Matchers::Contains("[onnx.undefined-input]") &&
                          Catch::Matchers::Contains("reads \"ids\""));
  }
}

namespace {

double step_time(const std::vector<std::string>& args) {
  const test::Result r = test::run_ipusim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["runs"][0]["stepTimeSeconds"].get<double>();
}

} // namespace

TEST_CASE("torch: a LLaMA-style decoder (RMSNorm, rotary buffers, grouped-query attention) exported two ways imports "
          "as the generator's model",
          "[onnx][torch][llama]") {
  if (!exported("llama")) return;
  const nlohmann::json counts = torch_counts("llama-folded");
  const std::string folded = export_dir() / "llama-folded.onnx", unfolded = export_dir() / "llama-unfolded.onnx";
  // repeat_kv's expand() wrote its target shape as Where(Equal(shape, ConstantOfShape(-1) * -1), ...):
  // unfolded, its shape was unknown [onnx.shape-unknown]. Both exports now import, with
  // PyTorch's parameter count: the four RMSNorm weights the exporter merged into the first
  // (all ones) are weights again; the mask and the rotary tables (buffers, or their folded
  // slices) are constants, not 2 x 64 x 16 + 64 x 64 more weights.
  const Model a = load_model(folded);
  OnnxImportOptions two;
  two.batch_size = 2;
  const Model b = load_onnx_model(unfolded, two);
  CHECK(counts["parameters"] == 123712);
  CHECK(weight_elements(a) == 123712);
  CHECK(weight_elements(b) == 123712);
  CHECK(product_flops(a) == counts["flops"].get<double>());
  CHECK(product_flops(b) == counts["flops"].get<double>());
  REQUIRE(a.warnings.size() == 1);
  CHECK_THAT(a.warnings[0], Catch::Matchers::Contains("merged 4 parameter(s) into \"layers.0.input_layernorm.weight\"") &&
                                Catch::Matchers::Contains("\"norm.weight\""));
  // A static batch of 2 without --batch-size is one sample of [2, 32], and says so.
  const test::Result static_batch = test::run_ipusim({"validate", unfolded});
  CHECK(static_batch.exit_code == 0);
  CHECK_THAT(static_batch.err, Catch::Matchers::Contains("static shape [2, 32]") &&
                                   Catch::Matchers::Contains("--batch-size 2"));
  CHECK_THAT(test::run_ipusim({"validate", unfolded, "--batch-size", "2"}).err,
             !Catch::Matchers::Contains("static shape"));

  // annotate places the two layers on two IPUs, the head on the last; run and plan take it.
  const std::string placed_folded = export_dir() / "llama-folded-placed.onnx";
  const std::string placed_unfolded = export_dir() / "llama-unfolded-placed.onnx";
  for (const auto& [in, out] : {std::pair{folded, placed_folded}, std::pair{unfolded, placed_unfolded}}) {
    const test::Result r = test::run_ipusim({"annotate", in, "--layers-per-ipu", "1,1", "--heads-on", "last", "-o", out});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Matchers::Contains("2 layers (layers.0 ... layers.1)"));
  }
  const std::string config = kSource + "/configs/ipu-m2000.json";
  auto run = [&](const std::string& model, const std::string& batch, bool training) {
    std::vector<std::string> args{"run", model, "--config", config, "--mode", "pipelined", "--json"};
    if (!batch.empty()) args.insert(args.end(), {"--set", "modelBatchSize=" + batch});
    if (training) args.insert(args.end(), {"--set", "execution.training=true", "--set", "execution.gradientAccumulation=8"});
    return step_time(args);
  };
  // Folded or not, at opset 14 or 17: the same step, trained (each RMSNorm weight on its IPU) or not.
  CHECK(run(placed_folded, "1", true) == run(placed_unfolded, "2", true));
  CHECK(run(placed_folded, "1", false) == run(placed_unfolded, "2", false));
  // The generator's model of the same sizes: the same weights and products; its inference step
  // within 1 %: it carries its loss (Softmax, NllLoss over 32 x 256 logits), the export streams
  // the logits, and it writes RMSNorm's 1/sqrt as Reciprocal and Mul where PyTorch writes Div.
  const test::TempDir dir;
  const std::string generated = dir.root() / "llama.json";
  const std::string command = "/usr/bin/python3 '" + kSource +
                              "/scripts/make_llama_model.py' --hidden 64 --heads 4 --kv-heads 2 --ffn 172 --seq 32 "
                              "--vocab 256 --layers-per-ipu 1,1 --heads-on last -o '" + generated + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  const Model g = load_model(generated);
  CHECK(weight_elements(g) == 123712);
  CHECK(product_flops(g) == product_flops(a));
  const double exported_step = run(placed_folded, "1", false), generated_step = run(generated, "", false);
  CHECK(std::abs(generated_step / exported_step - 1) < 0.01);

  // plan reads the export's layers as the generator's.
  const std::string scenario = dir.write(
      "llama.scenario.json", nlohmann::json{{"model", placed_folded}, {"config", config}, {"execution", {{"batchesPerStep", 4}}}});
  const test::Result plan = test::run_ipusim({"plan", scenario, "--explain-layers"});
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.out, Catch::Matchers::Contains("2 layers of the template \"layers.#\""));
}
