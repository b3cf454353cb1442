// The model zoo (models/*.json made by scripts/make_*_model.py): each generator reproduces
// its shipped files byte for byte, and each model's parameter count and forward FLOPs, as
// ipusim loads and derives them, match the published figures.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
namespace fs = std::filesystem;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a generator (arguments after the script) and returns what it wrote.
std::string generate(const std::string& script, const std::string& arguments) {
  const test::TempDir dir;
  const fs::path out = dir / "model.json";
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command =
      python + " '" + kSource + "/scripts/" + script + "' " + arguments + " -o '" + out.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return read_all(out);
}

double weight_elements(const Model& m) {
  double n = 0;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) n += static_cast<double>(t.elements());
  return n;
}

// Forward FLOPs per sample: all ops, and the multiply-accumulates of Conv, Gemm and MatMul
// (what the published "FLOPs" of torchvision and the ViT papers count: one per MAC).
struct Flops {
  double total = 0;
  double macs = 0;
};

Flops forward_flops(const Model& m) {
  Flops f;
  for (const Op& op : m.ops) {
    const double flops = derived_flops_per_sample(m, op);
    f.total += flops;
    if (op.type == "Conv" || op.type == "Gemm" || op.type == "MatMul") {
      // Without the bias term (+ out) that Gemm / Conv add for a third input.
      double out = 0;
      for (const auto& t : op.outputs) out += static_cast<double>(m.tensor(t).elements());
      f.macs += (flops - (op.inputs.size() > 2 ? out : 0.0)) / 2;
    }
  }
  return f;
}

} // namespace

TEST_CASE("ResNet-50: torchvision's 25,557,032 parameters and 4.09 GMACs", "[zoo][resnet]") {
  const Model m = load_model(kSource + "/models/resnet50.json");
  // torchvision.models.resnet50: 25,557,032 parameters (its model card: 25.6M); the
  // BatchNormalization running statistics are buffers, not parameters, and are not in the model.
  CHECK(weight_elements(m) == 25557032);
  // torchvision's card gives 4.09 GFLOPS, counting multiply-accumulates of the convolutions
  // and the classifier. By hand: stem 118,013,952 MACs; each stage's blocks add up to
  // 4,089,184,256 with the classifier's 2,048,000.
  const Flops f = forward_flops(m);
  CHECK(f.macs == 4089184256.0);
  CHECK(f.macs == Approx(4.09e9).epsilon(0.001));
  // All forward FLOPs by docs/formats.md's table: 2 x MACs, the classifier's 1,000 bias
  // additions, then BatchNormalization (4 per output), Relu, MaxPool (9), the residual
  // Adds, the pool (one per input) and the loss: 0.75% on top of 2 x MACs.
  CHECK(f.total == 8239866200.0);

  const ModelGraph g = build_graph(m);
  // [3,4,6,3] bottleneck blocks on IPUs 0..3, stem on IPU 0, head on the last IPU.
  CHECK(g.stage_count == 4);
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    const Op& op = m.ops[i];
    if (op.name == "conv1" || op.name.rfind("layer1.", 0) == 0) CHECK(g.ipu_of_op[i] == 0);
    if (op.name.rfind("layer2.", 0) == 0) CHECK(g.ipu_of_op[i] == 1);
    if (op.name.rfind("layer3.", 0) == 0) CHECK(g.ipu_of_op[i] == 2);
    if (op.name.rfind("layer4.", 0) == 0 || op.name == "fc") CHECK(g.ipu_of_op[i] == 3);
    CHECK(g.stage_of_op[i] == g.ipu_of_op[i]);
  }
}

TEST_CASE("ResNet-50 per-sample shapes follow torchvision's strides", "[zoo][resnet]") {
  const Model m = load_model(kSource + "/models/resnet50.json");
  // 224 -> conv1/2 112 -> maxpool/2 56 -> layer2 28 -> layer3 14 -> layer4 7 (v1.5: the
  // stride is on the 3x3 convolution of the first block).
  CHECK(m.tensor("conv1_out").shape == std::vector<std::int64_t>{64, 112, 112});
  CHECK(m.tensor("maxpool_out").shape == std::vector<std::int64_t>{64, 56, 56});
  CHECK(m.tensor("layer1.0.relu3_out").shape == std::vector<std::int64_t>{256, 56, 56});
  CHECK(m.tensor("layer2.0.conv1_out").shape == std::vector<std::int64_t>{128, 56, 56});
  CHECK(m.tensor("layer2.0.conv2_out").shape == std::vector<std::int64_t>{128, 28, 28});
  CHECK(m.tensor("layer4.2.relu3_out").shape == std::vector<std::int64_t>{2048, 7, 7});
  // GlobalAveragePool sums each channel's 7 x 7 inputs: 2048 x 49 FLOPs, not 2048.
  for (const Op& op : m.ops)
    if (op.type == "GlobalAveragePool") CHECK(derived_flops_per_sample(m, op) == 2048 * 49);
}

TEST_CASE("scripts/make_resnet_model.py reproduces models/resnet50.json", "[zoo][resnet]") {
  CHECK(generate("make_resnet_model.py", "--depth 50 --layers-per-ipu 3,4,6,3") ==
        read_all(kSource + "/models/resnet50.json"));
}

TEST_CASE("ResNet-101 and ResNet-152: torchvision's parameter counts and GMACs", "[zoo][resnet]") {
  const test::TempDir dir;
  // torchvision's cards: ResNet-101 44,549,160 parameters, 7.80 GFLOPS; ResNet-152
  // 60,192,808 parameters, 11.51 GFLOPS (multiply-accumulates).
  struct Case {
    int depth;
    double params;
    double gmacs;
  };
  for (const Case c : {Case{101, 44549160, 7.80}, Case{152, 60192808, 11.51}}) {
    const fs::path p = dir / ("resnet" + std::to_string(c.depth) + ".json");
    std::ofstream(p) << generate("make_resnet_model.py",
                                 "--depth " + std::to_string(c.depth) + " --layers-per-ipu " +
                                     (c.depth == 101 ? "33" : "50") + " --heads-on 0");
    const Model m = load_model(p.string());
    CHECK(weight_elements(m) == c.params);
    CHECK(forward_flops(m).macs / 1e9 == Approx(c.gmacs).epsilon(0.005));
    // One IPU: blocks in stage 0, the head back on IPU 0 in stage 1.
    CHECK(build_graph(m).stage_count == 2);
  }
}

TEST_CASE("the generators reject a split that does not add up", "[zoo]") {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = python + " '" + kSource +
                              "/scripts/make_resnet_model.py' --depth 50 --layers-per-ipu 3,4,6 >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
}
