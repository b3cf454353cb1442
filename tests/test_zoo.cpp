// The model zoo (models/*.json made by scripts/make_*_model.py): each generator reproduces
// its shipped files byte for byte, and each model's parameter count and forward FLOPs, as
// ipusim loads and derives them, match the published figures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <utility>
#include <variant>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "temp_dir.hpp"
#include "zoo_support.hpp"

using namespace ipusim;
namespace fs = std::filesystem;
using namespace ipusim::test_zoo;

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
  // Each convolution carries its ONNX attributes for cost models that read them.
  for (const Op& op : m.ops)
    if (op.name == "layer2.0.conv2" || op.name == "conv1") {
      CHECK(std::get<std::vector<std::int64_t>>(op.attributes.at("strides")) == std::vector<std::int64_t>{2, 2});
      CHECK(std::get<std::int64_t>(op.attributes.at("group")) == 1);
    }
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
  CHECK(generator_refuses("make_resnet_model.py", "--depth 50 --layers-per-ipu 3,4,6"));
}


TEST_CASE("GPT-2 small to XL: the published parameter counts and the closed-form FLOPs", "[zoo][gpt]") {
  const test::TempDir dir;
  // OpenAI's released GPT-2 checkpoints (as Hugging Face counts them: 124M, 355M, 774M,
  // 1.5B): 12 L h^2 + 13 L h per layer (QKV, projection, two LayerNorms, MLP with 4h),
  // token embedding 50257 h, position embedding 1024 h, final LayerNorm 2h; the LM head
  // reuses the token embedding.
  struct Case {
    std::string preset;
    int layers;
    double hidden;
    double params;
  };
  for (const Case& c : {Case{"gpt2-small", 12, 768, 124439808}, Case{"gpt2-medium", 24, 1024, 354823168},
                        Case{"gpt2-large", 36, 1280, 774030080}, Case{"gpt2-xl", 48, 1600, 1557611200}}) {
    INFO(c.preset);
    const Model m = generated(dir, "make_gpt_model.py",
                              "--preset " + c.preset + " --layers-per-ipu 0," + std::to_string(c.layers) +
                                  " --seq 128");
    const double h = c.hidden, L = c.layers, V = 50257, s = 128;
    CHECK(weight_elements(m) == 12 * L * h * h + 13 * L * h + V * h + 1024 * h + 2 * h);
    CHECK(weight_elements(m) == c.params);
    // Multiply-accumulates per sample of 128 tokens: the weights 12 L h^2 per token, the
    // LM head V h per token, and attention's Q K^T and P V: 2 s^2 h per layer.
    CHECK(forward_flops(m).macs == s * (12 * L * h * h + V * h) + L * 2 * s * s * h);
    const ModelGraph g = build_graph(m);
    CHECK(g.stage_count == 3);  // embedding (IPU 0), layers (IPU 1), head back on IPU 0
  }
}

TEST_CASE("a generic decoder-only transformer with untied embeddings and its head on the last IPU", "[zoo][gpt]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_gpt_model.py",
                            "--hidden 512 --heads 8 --layers-per-ipu 2,2,2 --heads-on last --untied --seq 64 "
                            "--vocab 1000 --max-positions 64");
  // 6 layers of 12 h^2 + 13 h, embeddings 1000 h + 64 h, final LayerNorm 2h, own LM head h x 1000.
  const double h = 512;
  CHECK(weight_elements(m) == 6 * (12 * h * h + 13 * h) + 1064 * h + 2 * h + h * 1000);
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 3);
  CHECK(ipu_of(m, g, "embedding/token_gather") == 0);
  CHECK(ipu_of(m, g, "h5/ffn/2") == 2);
  CHECK(ipu_of(m, g, "lm_head") == 2);
  CHECK(ipu_of(m, g, "loss/mean") == 2);
}

TEST_CASE("a decoder with tied embeddings refuses its head away from IPU 0", "[zoo][gpt]") {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = python + " '" + kSource +
                              "/scripts/make_gpt_model.py' --hidden 64 --heads 2 --layers-per-ipu 1,1 "
                              "--heads-on last >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
}

TEST_CASE("ViT-B/16 and ViT-L/16: torchvision's parameter counts and GFLOPS", "[zoo][vit]") {
  const test::TempDir dir;
  // torchvision's model cards: ViT-B/16 86,567,656 parameters, 17.56 GFLOPS; ViT-L/16
  // 304,326,632, 61.55 GFLOPS (multiply-accumulates at 224 x 224; the ViT and DeiT papers'
  // 86M and 17.6 GFLOPs).
  struct Case {
    std::string preset;
    std::string split;
    double params;
    double gmacs;
  };
  for (const Case& c : {Case{"vit-b-16", "3,3,3,3", 86567656, 17.56}, Case{"vit-l-16", "6,6,6,6", 304326632, 61.55}}) {
    INFO(c.preset);
    const Model m = generated(dir, "make_vit_model.py", "--preset " + c.preset + " --layers-per-ipu " + c.split);
    CHECK(weight_elements(m) == c.params);
    CHECK(forward_flops(m).macs / 1e9 == Approx(c.gmacs).epsilon(0.0005));
    const ModelGraph g = build_graph(m);
    CHECK(g.stage_count == 4);
    CHECK(ipu_of(m, g, "conv_proj") == 0);
    CHECK(ipu_of(m, g, "heads/head") == 3);
  }
  // Graphcore's pre-training ViT: a Dropout after the embedding, and per layer three hidden
  // ones (attention output, GELU, MLP output) and one on the attention probabilities:
  // 1 + 4 x 12 = 49; and the
  // pre-logits Linear of 768 x 768 + 768 before the classifier.
  const Model pre = generated(dir, "make_vit_model.py",
                              "--preset vit-b-16 --layers-per-ipu 3,3,3,3 --hidden-dropout 0.1 --attention-dropout 0.1 "
                              "--representation-size 768");
  CHECK(std::count_if(pre.ops.begin(), pre.ops.end(), [](const Op& op) { return op.type == "Dropout"; }) == 49);
  CHECK(weight_elements(pre) == 86567656 + 768 * 768 + 768);
  // 197 tokens of 768: 196 patches of 16 x 16 and the class token.
  const Model b = load_model(kSource + "/models/vit-b-16.json");
  CHECK(b.tensor("encoder/input").shape == std::vector<std::int64_t>{197, 768});
  CHECK(weight_elements(b) == 86567656);
}

TEST_CASE("BERT-Base and BERT-Large: 110M and 336M parameters, heads on IPU 0 or the last IPU", "[zoo][bert]") {
  const test::TempDir dir;
  // Devlin et al. give 110M and 340M; with Graphcore's vocabulary of 30528 and the
  // pre-training heads the counts are 110.08M and 336.20M (NVIDIA's and Graphcore's
  // "336M"): embeddings V h + 512 h + 2 h + 2 h, 12 h^2 + 13 h per layer, MLM transform
  // h^2 + 3h, pooler h^2 + h, NSP classifier 2h + 2.
  auto bert = [](double h, double L) {
    return 30528 * h + 516 * h + L * (12 * h * h + 13 * h) + 2 * h * h + 4 * h + 2 * h + 2;
  };
  const Model base = load_model(kSource + "/models/bert-base.json");
  CHECK(weight_elements(base) == bert(768, 12));
  CHECK(weight_elements(base) == Approx(110e6).epsilon(0.001));
  const Model large = load_model(kSource + "/models/bert-large.json");
  CHECK(weight_elements(large) == bert(1024, 24));
  CHECK(weight_elements(large) == Approx(336e6).epsilon(0.001));

  // Heads on the last IPU: the MLM decoder gets its own [vocab, hidden] weight there.
  const Model last = generated(dir, "make_bert_model.py",
                               "--layers-per-ipu 3,7,7,7 --hidden 1024 --heads 16 --heads-on last");
  CHECK(weight_elements(last) == bert(1024, 24) + 30528 * 1024);
  const ModelGraph g = build_graph(last);
  CHECK(g.stage_count == 4);
  CHECK(ipu_of(last, g, "mlm/decoder") == 3);
  CHECK(ipu_of(last, g, "nsp/classifier") == 3);
  CHECK(ipu_of(last, g, "embedding/word_gather") == 0);
}

TEST_CASE("make_bert_model.py --implementation mlperf with whole layers per IPU checkpoints as MLPerf BERT does",
          "[zoo]") {
  // It crashed (Python TypeError: the checkpoint rule read sub-layer placements only).
  // Whole layers on IPUs 3,7,7,7: every layer's output is checkpointed but the last layer's
  // on IPUs 0, 1 and 2 (layers 2, 9, 16: copied to the next IPU, no attention half after them
  // there); the model's last (23) is kept (bert_model.py should_checkpoint_ffn).
  const test::TempDir dir;
  const Model m = generated(dir, "make_bert_model.py", "--implementation mlperf --layers-per-ipu 3,7,7,7");
  std::vector<int> checkpointed;
  for (const Op& op : m.ops)
    for (int i = 0; i < 24; ++i)
      if (op.name == "layer" + std::to_string(i) + "/checkpoint") checkpointed.push_back(i);
  std::vector<int> expected;
  for (int i = 0; i < 24; ++i)
    if (i != 2 && i != 9 && i != 16) expected.push_back(i);
  CHECK(checkpointed == expected);
  // --projection-bias exists only in MLPerf BERT's graph: without --implementation mlperf it
  // was accepted and did nothing.
  CHECK(generator_refuses("make_bert_model.py", "--layers-per-ipu 3,7,7,7 --projection-bias"));
}

TEST_CASE("the zoo generators reproduce the shipped BERT, GPT-2 and ViT models", "[zoo]") {
  CHECK(generate("make_bert_model.py", "--layers-per-ipu 3,7,7,7 --hidden 1024 --heads 16 --name bert-large") ==
        read_all(kSource + "/models/bert-large.json"));
  CHECK(generate("make_bert_model.py", "--layers-per-ipu 1,1,1,1 --hidden 128 --heads 2 --vocab 8192 --name bert-tiny") ==
        read_all(kSource + "/models/bert-tiny.json"));
  CHECK(generate("make_gpt_model.py", "--preset gpt2-small --layers-per-ipu 0,4,4,4 --seq 128") ==
        read_all(kSource + "/models/gpt2-small.json"));
  CHECK(generate("make_vit_model.py", "--preset vit-b-16 --layers-per-ipu 3,3,3,3") ==
        read_all(kSource + "/models/vit-b-16.json"));
  CHECK(generate("make_gpt_model.py", "--preset gpt2-medium --layers-per-ipu 0,4,4,4,3,3,3,3") ==
        read_all(kSource + "/models/gpt2-medium.json"));
  // The V placements of the what-if schedules (docs/schedules.md, "Side by side").
  CHECK(generate("make_bert_model.py", "--layers-per-ipu 1,4,4,4,3,3,3,2 --stage-ipus 0,1,2,3,3,2,1,0 --heads-on last "
                                       "--hidden 1024 --heads 16 --name bert-large-v") ==
        read_all(kSource + "/models/bert-large-v.json"));
  CHECK(generate("make_gpt_model.py", "--preset gpt2-medium --layers-per-ipu 0,2,2,2,2,2,2,2,1,1,1,1,2,2,2,0 "
                                      "--stage-ipus 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0 --heads-on last --name gpt2-medium-v") ==
        read_all(kSource + "/models/gpt2-medium-v.json"));
  // The GPT-J-sized decoder of the tensor-parallel scenario (docs/tensor-parallel.md).
  CHECK(generate("make_gpt_model.py", "--hidden 4096 --heads 16 --layers 28 --phased 1 --seq 1024 --vocab 50400 --untied "
                                      "--dtype float16 --name gpt-j-6b-phased") ==
        read_all(kSource + "/models/gpt-j-6b-phased.json"));
}

TEST_CASE("zoo generators: --stage-ipus places stage s on its IPU, a V returns to IPU 0 with the head", "[zoo]") {
  const test::TempDir dir;
  const Model v = generated(dir, "make_bert_model.py",
                            "--layers-per-ipu 1,1,1,1 --stage-ipus 0,1,1,0 --heads-on last --hidden 128 --heads 2 --vocab 8192");
  const ModelGraph g = build_graph(v);
  CHECK(ipu_of(v, g, "embedding/word_gather") == 0);
  CHECK(ipu_of(v, g, "mlm/decoder") == 0);  // the last stage, on IPU 0 with the tied embedding
  CHECK(ipu_of(v, g, "layer1/attention/qkv") == 1);
  CHECK(ipu_of(v, g, "layer2/attention/qkv") == 1);
  CHECK(g.stage_count == 4);  // distinct pipelineStage ids: stages 1 and 2 share IPU 1
}

TEST_CASE("the zoo's scenarios plan: ResNet-50, GPT-2 small and ViT-B/16 on an IPU-M2000", "[zoo]") {
  // Forward stages after merging: 4 for ResNet-50 and ViT (head on the last IPU), 5 for
  // GPT-2 (its tied LM head back on IPU0): 7 and 9 training stages.
  for (const auto& [scenario, stages] : {std::pair<std::string, int>{"resnet50-training.json", 7},
                                         {"gpt2-small-training.json", 9}, {"vit-b-16-training.json", 7}}) {
    INFO(scenario);
    const Scenario s = load_scenario(kSource + "/scenarios/" + scenario);
    CHECK(make_plan(s, build_graph(s.model)).stage_count() == stages);
  }
}

TEST_CASE("BERT with Graphcore's att_ffn_placement: attention and feed-forward halves placed apart as MLPerf's "
          "bert_model.py places them", "[zoo][bert]") {
  // MLPerf Training v2.0, Graphcore/benchmarks/bert/implementations/popart/configs/pod16-closed.json.
  const test::TempDir dir;
  const Model m = generated(
      dir, "make_bert_model.py",
      "--implementation mlperf --att-ffn-placement '[[1, [3, 3]], [2, [4, 3]], [3, [3, 3]], [4, [3, 4]], "
      "[5, [4, 3]], [6, [3, 4]], [7, [4, 3]], [0, [0, 1]]]' --hidden 1024 --heads 16 --seq 512 --masked 76 "
      "--vocab 30912 --sequences-per-pack 3 --hidden-dropout 0.1 --attention-dropout 0.1 "
      "--activation-checkpoint-dtype float8 --embedding-serialization-vocab-steps 4 --projection-bias");
  const ModelGraph g = build_graph(m);
  auto stage_of = [&](const std::string& name) {
    for (const Op& op : m.ops)
      if (op.name == name) return std::pair{g.ipu_of_op[op.index], g.stage_of_op[op.index]};
    FAIL("no op " << name);
    return std::pair{-1, -1};
  };
  // Attention halves 3,4,3,3,4,3,4,0 and feed-forward halves 3,3,3,4,3,4,3,1 per stage 1..8:
  // layer 6's attention is the 7th (IPU 2, stage 2), its feed-forward the 7th (IPU 3, stage 3).
  CHECK(stage_of("layer6/attention/scores") == std::pair{2, 2});
  CHECK(stage_of("layer6/ffn/1") == std::pair{3, 3});
  CHECK(stage_of("layer23/attention/scores") == std::pair{7, 7});
  CHECK(stage_of("layer23/ffn/1") == std::pair{0, 8});  // the last stage, with the heads, on IPU 0
  CHECK(stage_of("mlm/decoder") == std::pair{0, 8});
  CHECK(stage_of("embedding/word_gather") == std::pair{0, 0});
  CHECK(g.stage_count == 9);
  // should_checkpoint_ffn: layer 0's feed-forward output is followed by layer 1's on IPU 1
  // (checkpointed, in FP8 outside the last stage); layer 2's is copied to IPU 2 (not).
  auto has_op = [&](const std::string& name) {
    return std::any_of(m.ops.begin(), m.ops.end(), [&](const Op& op) { return op.name == name; });
  };
  CHECK(has_op("layer0/checkpoint"));
  CHECK(m.tensor("layer0/checkpoint_out").dtype == DType::Float8);
  CHECK(!has_op("layer2/checkpoint"));
  // should_checkpoint_att: attention outputs in the last stage only (none there here);
  // the model's last feed-forward output is checkpointed, in float16 in the last stage.
  CHECK(!has_op("layer22/attention/checkpoint"));
  CHECK(m.tensor("layer23/checkpoint_out").dtype == DType::Float16);
  // Parameters: the padded vocabulary (30912 is a multiple of 4) and the projection bias.
  const double h = 1024;
  CHECK(weight_elements(m) ==
        30912 * h + 516 * h + 24 * (12 * h * h + 13 * h) + 2 * h * h + 4 * h + 2 * h + 2 + 30912);
  // The projection is serialised over the vocabulary in 4 steps.
  for (const Op& op : m.ops)
    if (op.name == "mlm/decoder") {
      CHECK(std::get<std::string>(op.attributes.at("__serialize_matmul_mode")) == "output_channels");
      CHECK(std::get<std::int64_t>(op.attributes.at("__serialize_matmul_factor")) == 4);
    }
}
