// LLaMA-family decoders (scripts/make_llama_model.py, models/llama-2-7b.json): the presets'
// parameter counts as ipusim loads them match the published ones and the closed form, the
// forward multiply-accumulates match the hand-derived closed form, any sequence length is
// accepted, a --kv-heads that does not divide --heads is refused, and the generator
// reproduces the shipped model byte for byte. The helpers are tests/zoo_support.hpp's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <utility>
#include <variant>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "temp_dir.hpp"
#include "zoo_support.hpp"

using namespace ipusim;
namespace fs = std::filesystem;

using namespace ipusim::test_zoo;

namespace {

long count_ops(const Model& m, const std::string& type) {
  return static_cast<long>(std::count_if(m.ops.begin(), m.ops.end(), [&](const Op& op) { return op.type == type; }));
}

// The small grouped-query decoder of the FLOPs and placement cases.
const std::string kSmall = "--hidden 256 --heads 4 --kv-heads 2 --ffn 688 --vocab 1000 --layers-per-ipu 1,1";

} // namespace

TEST_CASE("Llama 2 7B, 13B, 70B and TinyLlama 1.1B: the published parameter counts and the closed form",
          "[zoo][llama]") {
  const test::TempDir dir;
  // Touvron et al. 2023 ("Llama 2", Table 1) and Meta's released config.json files; TinyLlama's
  // config.json (tie_word_embeddings false). Per layer: q_proj and o_proj h^2 each, k_proj and
  // v_proj h kv dh each (dh = h / heads; grouped-query attention when kv < heads), the SwiGLU
  // MLP 3 h ffn, two RMSNorm weights of h; token embedding V h, untied LM head h V, final
  // RMSNorm h. No biases.
  struct Case {
    std::string preset;
    int layers;
    double hidden;
    double heads;
    double kv;
    double ffn;
    double params;
  };
  for (const Case& c : {Case{"llama-2-7b", 32, 4096, 32, 32, 11008, 6738415616.0},
                        Case{"llama-2-13b", 40, 5120, 40, 40, 13824, 13015864320.0},
                        Case{"llama-2-70b", 80, 8192, 64, 8, 28672, 68976648192.0},
                        Case{"tinyllama-1.1b", 22, 2048, 32, 4, 5632, 1100048384.0}}) {
    INFO(c.preset);
    const Model m = generated(dir, "make_llama_model.py",
                              "--preset " + c.preset + " --layers-per-ipu 0," + std::to_string(c.layers) +
                                  " --seq 128");
    const double L = c.layers, h = c.hidden, kv = c.kv, ffn = c.ffn, V = 32000, dh = h / c.heads;
    CHECK(weight_elements(m) == 2 * V * h + L * (2 * h * h + 2 * h * kv * dh + 3 * h * ffn + 2 * h) + h);
    CHECK(weight_elements(m) == c.params);
    // Grouped-query attention repeats K and V (an Expand each per layer); multi-head has none.
    CHECK(count_ops(m, "Expand") == (kv < c.heads ? 2 * c.layers : 0));
    const ModelGraph g = build_graph(m);
    CHECK(g.stage_count == 2);  // embedding on IPU 0; the layers, untied head and loss on IPU 1
  }
}

TEST_CASE("a small grouped-query LLaMA decoder: forward multiply-accumulates in closed form", "[zoo][llama]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_llama_model.py", kSmall + " --seq 64");
  // Derivation, per sample of s tokens (h 256, 4 heads of dh 64, kv 2, ffn 688, V 1000, L 2),
  // from the MatMuls the generator writes (a MatMul costs out x K MACs, K the first input's
  // last dimension):
  //   q_proj [s,h]x[h,h]: s h h; k_proj and v_proj [s,h]x[h,kv dh]: s h kv dh each;
  //   o_proj [s,h]x[h,h]: s h h; gate_proj and up_proj [s,h]x[h,ffn]: s h ffn each;
  //   down_proj [s,ffn]x[ffn,h]: s ffn h. Per token: h (h + 2 kv dh) + h h + 3 h ffn.
  //   scores [heads,s,dh]x[heads,dh,s] (K repeated to all heads): heads s s dh = s^2 h;
  //   context [heads,s,s]x[heads,s,dh]: heads s dh s = s^2 h. Per layer: 2 s^2 h.
  //   lm_head [s,h]x[h,V]: s h V.
  // The rotary, RMSNorm, SiLU and repeat ops are elementwise or data movement: no MACs.
  const double s = 64, L = 2, h = 256, kv = 2, dh = 64, ffn = 688, V = 1000;
  CHECK(forward_flops(m).macs == s * (L * (h * (h + 2 * kv * dh) + h * h + 3 * h * ffn) + h * V) + L * 2 * s * s * h);
  CHECK(forward_flops(m).macs == 113377280.0);
  CHECK(weight_elements(m) == 2 * V * h + L * (2 * h * h + 2 * h * kv * dh + 3 * h * ffn + 2 * h) + h);
  // K and V are [kv, s, dh] until repeated to [heads, s, dh]; the scores are [heads, s, s].
  CHECK(m.tensor("layers.0/self_attn/k").shape == std::vector<std::int64_t>{2, 64, 64});
  CHECK(m.tensor("layers.0/self_attn/k_t").shape == std::vector<std::int64_t>{4, 64, 64});
  CHECK(m.tensor("layers.0/self_attn/v_repeat_out").shape == std::vector<std::int64_t>{4, 64, 64});
  CHECK(m.tensor("layers.0/self_attn/scores_out").shape == std::vector<std::int64_t>{4, 64, 64});
  // The untied head defaults to the last IPU.
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 2);
  CHECK(ipu_of(m, g, "embed_tokens") == 0);
  CHECK(ipu_of(m, g, "layers.1/mlp/down_proj") == 1);
  CHECK(ipu_of(m, g, "lm_head") == 1);
  CHECK(ipu_of(m, g, "loss/mean") == 1);

  // --tied: the head reads the token embedding, on IPU 0 in a new final stage; one V h fewer.
  const Model tied = generated(dir, "make_llama_model.py", kSmall + " --seq 64 --tied --heads-on 0");
  CHECK(weight_elements(tied) == weight_elements(m) - V * h);
  CHECK(forward_flops(tied).macs == forward_flops(m).macs);
  const ModelGraph tg = build_graph(tied);
  CHECK(tg.stage_count == 3);
  CHECK(ipu_of(tied, tg, "lm_head") == 0);
  CHECK(generator_refuses("make_llama_model.py", kSmall + " --tied"));  // tied head away from IPU 0
}

TEST_CASE("a LLaMA decoder takes any sequence length: no position table", "[zoo][llama]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_llama_model.py", "--hidden 128 --heads 2 --ffn 256 --vocab 100 --layers-per-ipu 1 "
                                                        "--seq 4096");
  CHECK(m.tensor("input_ids").shape == std::vector<std::int64_t>{4096});
  CHECK(m.tensor("layers.0/self_attn/scores_out").shape == std::vector<std::int64_t>{2, 4096, 4096});
  // The weights do not depend on the sequence length.
  const double h = 128;
  CHECK(weight_elements(m) == 2 * 100 * h + (2 * h * h + 2 * h * h + 3 * h * 256 + 2 * h) + h);
}

TEST_CASE("make_llama_model.py refuses --kv-heads that does not divide --heads", "[zoo][llama]") {
  CHECK(generator_refuses("make_llama_model.py", "--hidden 256 --heads 4 --kv-heads 3 --layers-per-ipu 1,1"));
  CHECK(generator_refuses("make_llama_model.py", "--hidden 256 --heads 4 --kv-heads 8 --layers-per-ipu 1,1"));
  // A preset fixes its depth and sizes.
  CHECK(generator_refuses("make_llama_model.py", "--preset llama-2-7b --layers-per-ipu 1,2"));
  CHECK(generator_refuses("make_llama_model.py", "--preset llama-2-7b --layers-per-ipu 32 --kv-heads 8"));
}

TEST_CASE("scripts/make_llama_model.py reproduces models/llama-2-7b.json and llama-2-7b-tp.json", "[zoo][llama]") {
  CHECK(generate("make_llama_model.py", "--preset llama-2-7b --layers-per-ipu 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2 "
                                        "--seq 2048") == read_all(kSource + "/models/llama-2-7b.json"));
  // Every layer on virtual IPU 0, for tensor parallelism (scenarios/llama-2-7b-serve-pod16.json).
  CHECK(generate("make_llama_model.py", "--preset llama-2-7b --layers-per-ipu 32 --heads-on 0 --name llama-2-7b-tp") ==
        read_all(kSource + "/models/llama-2-7b-tp.json"));
  // The shipped model: 6.74B parameters; 2 layers on each of 16 IPUs, the embedding on IPU 0, the
  // final RMSNorm, head and loss on IPU 15; forward MACs per 2048-token sample by the closed form.
  const Model m = load_model(kSource + "/models/llama-2-7b.json");
  CHECK(weight_elements(m) == 6738415616.0);
  const double s = 2048, L = 32, h = 4096, ffn = 11008, V = 32000;
  CHECK(forward_flops(m).macs == s * (L * (4 * h * h + 3 * h * ffn) + h * V) + L * 2 * s * s * h);
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 16);
  CHECK(ipu_of(m, g, "embed_tokens") == 0);
  CHECK(ipu_of(m, g, "layers.1/mlp/down_proj") == 0);
  CHECK(ipu_of(m, g, "layers.2/self_attn/q_proj") == 1);
  CHECK(ipu_of(m, g, "layers.31/mlp/residual") == 15);
  CHECK(ipu_of(m, g, "lm_head") == 15);
}
