// GPT-J (scripts/make_gpt_model.py --preset gpt-j-6b, --structure gptj): Hugging Face's
// parameter count of EleutherAI/gpt-j-6b and its closed form, the forward multiply-accumulates
// of a small GPT-J-shaped decoder by hand, the parallel residual (attention and MLP both read
// ln_1), the partial rotary's shapes, and the refusals of mixed GPT-2 / GPT-J flags. The
// helpers are tests/zoo_support.hpp's.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "temp_dir.hpp"
#include "zoo_support.hpp"

using namespace ipusim;
using namespace ipusim::test_zoo;

namespace {

const Op& op_named(const Model& m, const std::string& name) {
  for (const Op& op : m.ops)
    if (op.name == name) return op;
  FAIL("no op " << name);
  throw;
}

} // namespace

TEST_CASE("GPT-J 6B: Hugging Face's parameter count and the closed form", "[zoo][gptj]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_gpt_model.py", "--preset gpt-j-6b --layers-per-ipu 0,28 --heads-on last --seq 128");
  // EleutherAI/gpt-j-6b config.json: 28 layers, n_embd 4096, 16 heads, n_inner 4 x 4096,
  // vocabulary 50400. Per layer: ln_1 2h, Q K V and out_proj 4 h^2 without biases, fc_in
  // h ffn + ffn, fc_out ffn h + h; token embedding V h; ln_f 2h; LM head h V + V (a bias).
  // sum(p.numel()) of transformers' GPTJForCausalLM is 6,050,882,784.
  const double L = 28, h = 4096, ffn = 16384, V = 50400, s = 128;
  CHECK(weight_elements(m) == 2 * V * h + V + L * (4 * h * h + 2 * h * ffn + ffn + 3 * h) + 2 * h);
  CHECK(weight_elements(m) == 6050882784.0);
  // Per token 4 h^2 + 2 h ffn per layer and V h for the head; Q K^T and P V s^2 h each.
  CHECK(forward_flops(m).macs == s * (L * (4 * h * h + 2 * h * ffn) + V * h) + L * 2 * s * s * h);
  CHECK(m.tensors.count("wpe") == 0);  // no position table: rotary positions
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 2);  // embedding on IPU 0; layers, untied head and loss on IPU 1
}

TEST_CASE("a small GPT-J-shaped decoder: parallel residual, partial rotary, MACs by hand", "[zoo][gptj]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_gpt_model.py",
                            "--structure gptj --hidden 256 --heads 4 --rotary-dim 16 --vocab 1000 "
                            "--layers-per-ipu 1,1 --heads-on last --seq 64");
  // h 256, 4 heads of 64, ffn 4h = 1024, V 1000, L 2, s 64:
  //   q, k, v, out_proj [s,h]x[h,h]: 4 s h h; fc_in [s,h]x[h,ffn] and fc_out [s,ffn]x[ffn,h]:
  //   2 s h ffn; scores and context: heads s s dh each = 2 s^2 h; lm_head s h V.
  //   2 x 64 x (4 x 65536 + 2 x 262144) + 2 x 2 x 4096 x 256 + 64 x 256 x 1000 = 121,241,600.
  CHECK(forward_flops(m).macs == 121241600.0);
  // Both halves read ln_1's output (GPTJBlock: x + attn(ln_1(x)) + mlp(ln_1(x))).
  CHECK(op_named(m, "h0/attn/q_proj").inputs.at(0) == "h0/ln_1_out");
  CHECK(op_named(m, "h0/mlp/fc_in").inputs.at(0) == "h0/ln_1_out");
  CHECK(m.tensors.count("h0/ln_2/gamma") == 0);
  // The rotary turns 16 of each head's 64 dimensions and passes 48 through.
  CHECK(m.tensor("h0/attn/q_rotary/x_rot").shape == std::vector<std::int64_t>{4, 64, 16});
  CHECK(m.tensor("h0/attn/q_rotary/x_pass").shape == std::vector<std::int64_t>{4, 64, 48});
  CHECK(m.tensor("h0/attn/q_rotary_out").shape == std::vector<std::int64_t>{4, 64, 64});
  // Biases on the MLP and the head, none on the attention projections.
  CHECK(m.tensors.count("h0/mlp/fc_in/bias") == 1);
  CHECK(m.tensors.count("lm_head/bias") == 1);
  CHECK(m.tensors.count("h0/attn/q_proj/bias") == 0);
  const ModelGraph g = build_graph(m);
  CHECK(ipu_of(m, g, "h1/mlp/fc_out") == 1);
  CHECK(ipu_of(m, g, "lm_head") == 1);
}

TEST_CASE("make_gpt_model.py refuses GPT-J flags on GPT-2 and a preset's sizes changed", "[zoo][gptj]") {
  CHECK(generator_refuses("make_gpt_model.py", "--hidden 64 --heads 2 --rotary-dim 16 --layers-per-ipu 1"));
  CHECK(generator_refuses("make_gpt_model.py",
                          "--structure gptj --hidden 64 --heads 2 --max-positions 64 --layers-per-ipu 1"));
  CHECK(generator_refuses("make_gpt_model.py", "--structure gptj --hidden 64 --heads 2 --rotary-dim 48 "
                                               "--layers-per-ipu 1"));  // more than the head size 32
  CHECK(generator_refuses("make_gpt_model.py", "--preset gpt-j-6b --vocab 50257 --layers-per-ipu 28"));
  CHECK(generator_refuses("make_gpt_model.py", "--preset gpt-j-6b --layers-per-ipu 2,2"));
  // GPT-2's presets still refuse another hidden size.
  CHECK(generator_refuses("make_gpt_model.py", "--preset gpt2-small --hidden 512 --layers-per-ipu 12"));
}
