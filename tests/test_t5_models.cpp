// T5 v1.1 / Flan-T5 encoder-decoders (scripts/make_t5_model.py, models/t5-base.json): the presets'
// parameter counts as ipusim loads them match Hugging Face's published ones and the closed form,
// the forward multiply-accumulates of a small model match the hand-derived closed form (with the
// cross-attention shaped [heads, dec_seq, enc_seq]), the shared embedding's two lookups sit on
// IPU 0 and a placement splitting them over two IPUs is refused, and the generator reproduces the
// shipped model byte for byte. The helpers are tests/zoo_support.hpp's.
#include <catch2/catch.hpp>

#include <algorithm>
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

long count_ops(const Model& m, const std::string& type) {
  return static_cast<long>(std::count_if(m.ops.begin(), m.ops.end(), [&](const Op& op) { return op.type == type; }));
}

std::vector<std::string> inputs_of(const Model& m, const std::string& op_name) {
  for (const Op& op : m.ops)
    if (op.name == op_name) return op.inputs;
  FAIL("no op " << op_name);
  return {};
}

// Parameters of a T5 v1.1 model, inner = heads x d_kv: the shared embedding V d and the untied
// LM head d V; per encoder block q, k, v [d, inner] and o [inner, d] (4 d inner), wi_0, wi_1
// [d, ff] and wo [ff, d] (3 d ff), two norm weights (2 d); per decoder block self-attention and
// cross-attention (8 d inner), the feed-forward (3 d ff), three norm weights (3 d); the two
// relative-attention bias tables [32, heads]; the final encoder and decoder norms (2 d). No biases.
double t5_parameters(double enc, double dec, double d, double ff, double heads, double d_kv, double V) {
  const double inner = heads * d_kv;
  return 2 * V * d + enc * (4 * d * inner + 3 * d * ff + 2 * d) + dec * (8 * d * inner + 3 * d * ff + 3 * d) +
         2 * 32 * heads + 2 * d;
}

// Forward multiply-accumulates per sample, S encoder and T decoder tokens. A MatMul costs
// out x K MACs, K the first input's last dimension (sim/cost/op_work.cpp); I = heads x d_kv,
// H heads. Per encoder block:
//   q, k, v, o [S,d]x[d,I] / [S,I]x[I,d]: 4 S d I; wi_0, wi_1 [S,d]x[d,ff], wo [S,ff]x[ff,d]: 3 S d ff;
//   scores [H,S,dkv]x[H,dkv,S]: H S S dkv = S^2 I; context [H,S,S]x[H,S,dkv]: S^2 I.
// Per decoder block:
//   self-attention q, k, v, o: 4 T d I; scores and context: 2 T^2 I;
//   cross-attention q [T,d]x[d,I] and o [T,I]x[I,d]: 2 T d I; k and v from the encoder's output
//   [S,d]x[d,I]: 2 S d I; scores [H,T,dkv]x[H,dkv,S]: H T S dkv = T S I; context
//   [H,T,S]x[H,S,dkv]: H T dkv S = T S I (contracted over S, the first input's last dimension);
//   the feed-forward: 3 T d ff.
// Per encoder block 4 S d I + 3 S d ff + 2 S^2 I; per decoder block 6 T d I + 2 S d I + 3 T d ff
// + 2 T^2 I + 2 T S I. LM head [T,d]x[d,V]: T d V. Norms, Gelu, the gate, the bias lookups and residuals are
// elementwise or data movement: no MACs.
double t5_forward_macs(double S, double T, double d, double ff, double inner, double V, double enc, double dec) {
  const double encoder_block = 4 * S * d * inner + 3 * S * d * ff + 2 * S * S * inner;
  const double decoder_block =
      6 * T * d * inner + 2 * S * d * inner + 3 * T * d * ff + 2 * T * T * inner + 2 * T * S * inner;
  return enc * encoder_block + dec * decoder_block + T * d * V;
}

// The small model: d 256, ff 512, 4 heads of d_kv 32 (inner 128, not d), V 1000, 2 encoder
// blocks and 1 decoder block, 64 encoder and 48 decoder tokens (S, T and d_kv all differ, so a
// transposed shape cannot pass for the right one).
const std::string kSmall = "--d-model 256 --d-ff 512 --heads 4 --d-kv 32 --vocab 1000 --encoder-layers 2 "
                           "--decoder-layers 1 --enc-seq 64 --dec-seq 48";

} // namespace

TEST_CASE("Flan-T5 small, base, large and XL: the published parameter counts and the closed form", "[zoo][t5]") {
  const test::TempDir dir;
  // Hugging Face's google/flan-t5-* (config.json: vocabulary 32128, d_kv 64, 32 relative-position
  // buckets, gated-GELU, untied head); the published counts include the shared embedding once,
  // the LM head, both bias tables and every norm weight.
  struct Case {
    std::string preset;
    int layers;  // per stack: encoder and decoder alike
    double d;
    double ff;
    double heads;
    double params;
  };
  for (const Case& c : {Case{"flan-t5-small", 8, 512, 1024, 6, 76961152.0},
                        Case{"flan-t5-base", 12, 768, 2048, 12, 247577856.0},
                        Case{"flan-t5-large", 24, 1024, 2816, 16, 783150080.0},
                        Case{"flan-t5-xl", 24, 2048, 5120, 32, 2849757184.0}}) {
    INFO(c.preset);
    // The weights do not depend on the sequence lengths: short ones keep the case quick.
    const Model m = generated(dir, "make_t5_model.py",
                              "--preset " + c.preset + " --layers-per-ipu 0," + std::to_string(2 * c.layers) +
                                  " --enc-seq 64 --dec-seq 32");
    CHECK(weight_elements(m) == t5_parameters(c.layers, c.layers, c.d, c.ff, c.heads, 64, 32128));
    CHECK(weight_elements(m) == c.params);
    // Four Gathers: the two lookups of the shared embedding and the two bias tables.
    CHECK(count_ops(m, "Gather") == 4);
    CHECK(count_ops(m, "Scale") == 0);  // T5 leaves its scores unscaled
    const ModelGraph g = build_graph(m);
    CHECK(g.stage_count == 2);
    CHECK(ipu_of(m, g, "encoder/embed_tokens") == 0);
    CHECK(ipu_of(m, g, "decoder/embed_tokens") == 0);
    CHECK(ipu_of(m, g, "lm_head") == 1);
  }
}

TEST_CASE("a small T5 encoder-decoder: forward multiply-accumulates in closed form, cross-attention shapes",
          "[zoo][t5]") {
  const test::TempDir dir;
  const Model m = generated(dir, "make_t5_model.py", kSmall + " --layers-per-ipu 2,1");
  const double S = 64, T = 48, d = 256, ff = 512, inner = 128, V = 1000;
  CHECK(forward_flops(m).macs == t5_forward_macs(S, T, d, ff, inner, V, 2, 1));
  CHECK(forward_flops(m).macs == 115376128.0);
  CHECK(weight_elements(m) == t5_parameters(2, 1, d, ff, 4, 32, V));
  CHECK(weight_elements(m) == 2218496.0);

  // Cross-attention: q [heads, T, d_kv] from the decoder, K transposed to [heads, d_kv, S] and
  // V [heads, S, d_kv] from the encoder, scores [heads, T, S], context [heads, T, d_kv].
  const std::string x = "decoder.block.0/layer.1/EncDecAttention/";
  CHECK(m.tensor(x + "q_heads").shape == std::vector<std::int64_t>{4, 48, 32});
  CHECK(m.tensor(x + "k_t").shape == std::vector<std::int64_t>{4, 32, 64});
  CHECK(m.tensor(x + "v_heads").shape == std::vector<std::int64_t>{4, 64, 32});
  CHECK(m.tensor(x + "scores_out").shape == std::vector<std::int64_t>{4, 48, 64});
  CHECK(m.tensor(x + "context_out").shape == std::vector<std::int64_t>{4, 48, 32});
  CHECK(inputs_of(m, x + "k") == std::vector<std::string>{"encoder/final_layer_norm_out", x + "k/weight"});

  // The relative position bias: one [32, heads] table per stack, in its first block; the
  // encoder's [heads, S, S] bias is added to every encoder block's scores, the decoder's
  // (causal mask folded in) [heads, T, T] to every decoder block's; cross-attention has none.
  const std::string e0 = "encoder.block.0/layer.0/SelfAttention/";
  CHECK(m.tensor(e0 + "relative_attention_bias/weight").shape == std::vector<std::int64_t>{32, 4});
  CHECK(m.tensors.count("encoder.block.1/layer.0/SelfAttention/relative_attention_bias/weight") == 0);
  CHECK(m.tensor(e0 + "position_bias").shape == std::vector<std::int64_t>{4, 64, 64});
  CHECK(inputs_of(m, "encoder.block.1/layer.0/SelfAttention/position_bias_add") ==
        std::vector<std::string>{"encoder.block.1/layer.0/SelfAttention/scores_out", e0 + "position_bias"});
  CHECK(m.tensor("decoder.block.0/layer.0/SelfAttention/position_bias_masked").shape ==
        std::vector<std::int64_t>{4, 48, 48});
  CHECK(m.tensors.count(x + "biased") == 0);

  // Placement: both lookups of the shared embedding on IPU 0; the encoder on IPU 0, the decoder,
  // the untied head and the loss on IPU 1.
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 2);
  CHECK(ipu_of(m, g, "encoder/embed_tokens") == 0);
  CHECK(ipu_of(m, g, "decoder/embed_tokens") == 0);
  CHECK(ipu_of(m, g, "encoder/final_layer_norm") == 0);
  CHECK(ipu_of(m, g, x + "k") == 1);
  CHECK(ipu_of(m, g, "lm_head") == 1);
  CHECK(ipu_of(m, g, "loss/mean") == 1);
}

TEST_CASE("make_t5_model.py refuses a placement that splits the shared embedding's readers", "[zoo][t5]") {
  const test::TempDir dir;
  // --decoder-embedding decoder puts the decoder's lookup with decoder block 0: on IPU 1 here,
  // away from the encoder's lookup of the same weight on IPU 0.
  CHECK(generator_refuses("make_t5_model.py", kSmall + " --layers-per-ipu 2,1 --decoder-embedding decoder"));
  CHECK(generator_refuses("make_t5_model.py",
                          "--preset flan-t5-small --layers-per-ipu 8,8 --decoder-embedding decoder"));
  // Accepted when decoder block 0 is on IPU 0: all on one IPU, or a V coming back to IPU 0.
  CHECK_FALSE(generator_refuses("make_t5_model.py", kSmall + " --layers-per-ipu 3 --decoder-embedding decoder"));
  const Model v = generated(dir, "make_t5_model.py",
                            kSmall + " --stage-ipus 0,1,0 --layers-per-ipu 1,1,1 --decoder-embedding decoder");
  const ModelGraph g = build_graph(v);
  CHECK(g.stage_count == 3);
  CHECK(ipu_of(v, g, "encoder/embed_tokens") == 0);
  CHECK(ipu_of(v, g, "decoder/embed_tokens") == 0);
  CHECK(ipu_of(v, g, "encoder.block.1/layer.1/residual") == 1);
  // A preset fixes its depths and sizes.
  CHECK(generator_refuses("make_t5_model.py", "--preset flan-t5-base --layers-per-ipu 6,6,6,5"));
  CHECK(generator_refuses("make_t5_model.py", "--preset flan-t5-base --layers-per-ipu 6,6,6,6 --d-model 512"));
}

TEST_CASE("scripts/make_t5_model.py reproduces models/t5-base.json", "[zoo][t5]") {
  CHECK(generate("make_t5_model.py", "--preset flan-t5-base --layers-per-ipu 6,6,6,6 --name t5-base") ==
        read_all(kSource + "/models/t5-base.json"));
  // The shipped model: Flan-T5 base, 247.6M parameters; encoder blocks 0-5 on IPU 0 and 6-11 on
  // IPU 1, decoder blocks 0-5 on IPU 2 and 6-11 on IPU 3 with the head and loss; the shared
  // embedding and both lookups on IPU 0; 512 encoder and 128 decoder tokens per sample.
  const Model m = load_model(kSource + "/models/t5-base.json");
  CHECK(weight_elements(m) == 247577856.0);
  CHECK(forward_flops(m).macs == t5_forward_macs(512, 128, 768, 2048, 768, 32128, 12, 12));
  CHECK(forward_flops(m).macs == 72917975040.0);
  const ModelGraph g = build_graph(m);
  CHECK(g.stage_count == 4);
  CHECK(ipu_of(m, g, "encoder/embed_tokens") == 0);
  CHECK(ipu_of(m, g, "decoder/embed_tokens") == 0);
  CHECK(ipu_of(m, g, "encoder.block.5/layer.1/residual") == 0);
  CHECK(ipu_of(m, g, "encoder.block.6/layer.0/SelfAttention/q") == 1);
  CHECK(ipu_of(m, g, "encoder/final_layer_norm") == 1);
  CHECK(ipu_of(m, g, "decoder.block.0/layer.1/EncDecAttention/k") == 2);
  CHECK(ipu_of(m, g, "decoder.block.11/layer.2/residual") == 3);
  CHECK(ipu_of(m, g, "lm_head") == 3);
}
