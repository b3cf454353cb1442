// Plans of the shipped BERT models (models/bert-*.json, made by scripts/make_bert_model.py)
// against the PopART rules of docs/reference/popart-semantics.md ("The BERT case"), with every count
// and byte figure computed by hand in the comments. No simulation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

using namespace ipusim;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

struct Built {
  Scenario scenario;
  ModelGraph graph;
  Plan plan;
};

Built build(const std::string& scenario, const std::vector<Override>& overrides = {}) {
  Built b{load_scenario(kSource + "/scenarios/" + scenario, overrides), {}, {}};
  b.graph = build_graph(b.scenario.model);
  b.plan = make_plan(b.scenario, b.graph);
  return b;
}

const PlanCopy& copy_between(const Plan& plan, int from_stage, int to_stage) {
  for (const auto& c : plan.copies)
    if (c.from_stage == from_stage && c.to_stage == to_stage) return c;
  FAIL("no copy from stage " << from_stage << " to stage " << to_stage);
  throw;
}

bool carries(const PlanCopy& c, const std::string& tensor) {
  return std::find(c.tensors.begin(), c.tensors.end(), tensor) != c.tensors.end();
}

const PlanIpu& ipu(const Plan& plan, int id) {
  for (const auto& i : plan.ipus)
    if (i.id == id) return i;
  FAIL("no IPU " << id << " in the plan");
  throw;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// Parameter counts by hand, from the generator's structure (hidden h, ffn f, vocab V,
// 512 positions, 2 segments; every bias and LayerNorm gamma/beta of size h unless said).
double embedding_params(double h, double V) { return V * h + 512 * h + 2 * h + 2 * h; }
// qkv h*3h + 3h, out h*h + h, LN 2h, ffn1 h*f + f, ffn2 f*h + h, LN 2h.
double layer_params(double h, double f) { return 3 * h * h + 3 * h + h * h + h + 2 * h + h * f + f + f * h + h + 2 * h; }
// MLM transform h*h + h + LN 2h (its decoder reuses the word embedding: no new weight),
// pooler h*h + h, NSP classifier h*2 + 2.
double head_params(double h) { return h * h + h + 2 * h + h * h + h + 2 * h + 2; }

} // namespace

TEST_CASE("BERT-Large training: 5 forward stages wrapping back to IPU0, 9 stages", "[bert][plan]") {
  const Built b = build("bert-large-training.json");
  const Plan& plan = b.plan;
  // Embedding + 3 layers on IPU0 (stage 0), 7 layers each on IPUs 1-3 (stages 1-3), the
  // heads back on IPU0 in stage 4. No two consecutive stages share an IPU: P = 5, S = 2P-1 = 9.
  REQUIRE(plan.forward_stage_count == 5);
  REQUIRE(plan.stage_count() == 9);
  CHECK(plan.loss_stage == 4);
  CHECK(plan.stages[4].ipu == 0);
  CHECK_FALSE(plan.stages[4].backward);
  CHECK(plan.stages[4].annotated_stages == std::vector<int>{4});
  // Backward stage 2L-s = 8-s runs on forward stage s's IPU: 5,6,7,8 <- 3,2,1,0.
  const int expected_ipu[9] = {0, 1, 2, 3, 0, 3, 2, 1, 0};
  for (int s = 0; s < 9; ++s) {
    CHECK(plan.stages[s].ipu == expected_ipu[s]);
    CHECK(plan.stages[s].backward == (s > 4));
    CHECK(plan.stages[s].forward_stage == (s > 4 ? 8 - s : s));
  }
  REQUIRE(plan.ipus.size() == 4);
  CHECK(ipu(plan, 0).stages == std::vector<int>{0, 4, 8});  // IPU0 runs three stages every main cycle
  CHECK(ipu(plan, 1).stages == std::vector<int>{1, 7});
  CHECK(ipu(plan, 2).stages == std::vector<int>{2, 6});
  CHECK(ipu(plan, 3).stages == std::vector<int>{3, 5});
  // Op counts: embedding 6 + mask 2 = 8, 22 per layer, 18 in the heads and losses.
  CHECK(plan.stages[0].ops.size() == 8 + 3 * 22);
  CHECK(plan.stages[1].ops.size() == 7 * 22);
  CHECK(plan.stages[4].ops.size() == 18);
  CHECK(plan.stages[8].ops.size() == 8 + 3 * 22);  // the backward of stage 0
}

TEST_CASE("BERT-Large training: copies, the chained attention bias and the gradients", "[bert][plan]") {
  const Built b = build("bert-large-training.json");
  const Plan& plan = b.plan;
  const double seq = 128, hidden = 1024, fp16 = 2, micro_batch = 8;
  // A layer output [seq, hidden] float16 for a micro-batch of 8: 128*1024*2*8 = 2,097,152 B.
  const double hidden_state = seq * hidden * fp16 * micro_batch;
  REQUIRE(hidden_state == 2097152.0);
  // attention_bias [seq] float16: 128*2*8 = 2,048 B.
  const double bias = seq * fp16 * micro_batch;

  // 4 forward boundaries + 4 gradient boundaries.
  REQUIRE(plan.copies.size() == 8);

  // Boundaries 0->1, 1->2, 2->3: the last layer output of the stage and the attention bias,
  // which every layer's mask Add reads but only IPU0 can compute (a host input feeds one
  // IPU), so it hops IPU0 -> 1 -> 2 -> 3: 2,097,152 + 2,048 = 2,099,200 B.
  const char* last_layer_of_stage[3] = {"layer2/output", "layer9/output", "layer16/output"};
  for (int s = 0; s < 3; ++s) {
    const PlanCopy& c = copy_between(plan, s, s + 1);
    CHECK_FALSE(c.gradient);
    CHECK(c.src_ipu == s);
    CHECK(c.dst_ipu == s + 1);
    CHECK(as_set(c.tensors) == std::set<std::string>{last_layer_of_stage[s], "attention_bias"});
    CHECK(c.bytes == hidden_state + bias);
    CHECK(c.bytes == 2099200.0);
  }
  // Boundary 3->4 wraps IPU3 -> IPU0 with the last encoder output only: no op after
  // stage 3 reads the attention bias, so its chain stops at stage 3.
  const PlanCopy& wrap = copy_between(plan, 3, 4);
  CHECK_FALSE(wrap.gradient);
  CHECK(wrap.src_ipu == 3);
  CHECK(wrap.dst_ipu == 0);
  CHECK(wrap.tensors == std::vector<std::string>{"layer23/output"});
  CHECK_FALSE(carries(wrap, "attention_bias"));
  CHECK(wrap.bytes == 2097152.0);  // 128 * 1024 * 2 B * 8

  // Gradients cross every boundary back, from backward stage 8-(s+1) to 8-s, IPU of s+1
  // to IPU of s, carrying the gradient of each ACTIVATION the forward copy carried (host
  // inputs have none). attention_bias is an activation (mask/scale produces it on IPU0),
  // so the plan sends its gradient back 3->2->1->0 and the gradient copies mirror the
  // forward copies byte for byte. (Real PopART would differentiate only tensors on a
  // path from a weight to the loss; attention_bias depends on the input mask alone, and
  // Graphcore's BERT even wraps it in a Detach, so PopART would copy 2,048 B less per
  // boundary: 0.1 % of the copy.)
  const PlanCopy& g45 = copy_between(plan, 4, 5);
  CHECK(g45.gradient);
  CHECK(g45.src_ipu == 0);
  CHECK(g45.dst_ipu == 3);
  CHECK(g45.tensors == std::vector<std::string>{"layer23/output"});
  CHECK(g45.bytes == 2097152.0);
  for (int s = 2; s >= 0; --s) {
    const PlanCopy& g = copy_between(plan, 8 - (s + 1), 8 - s);
    CHECK(g.gradient);
    CHECK(g.src_ipu == s + 1);
    CHECK(g.dst_ipu == s);
    CHECK(as_set(g.tensors) == std::set<std::string>{last_layer_of_stage[s], "attention_bias"});
    CHECK(g.bytes == 2099200.0);
  }

  // Host streams: input_ids, position_ids, segment_ids, input_mask ([128] int32 each)
  // enter at stage 0: 4*128*4*8 = 16,384 B; the labels enter on IPU0 at stage 4, where
  // the losses read them: (20 + 1)*4*8 = 672 B; the two anchored per-sample losses
  // (float16 [1]) leave from stage 4: 2*2*8 = 32 B.
  CHECK(as_set(plan.stages[0].host_inputs) ==
        std::set<std::string>{"input_ids", "position_ids", "segment_ids", "input_mask"});
  CHECK(plan.stages[0].host_input_bytes == 16384.0);
  CHECK(as_set(plan.stages[4].host_inputs) == std::set<std::string>{"masked_lm_ids", "next_sentence_label"});
  CHECK(plan.stages[4].host_input_bytes == 672.0);
  CHECK(as_set(plan.stages[4].host_outputs) == std::set<std::string>{"mlm_loss", "nsp_loss"});
  CHECK(plan.stages[4].host_output_bytes == 32.0);
  for (int s : {1, 2, 3}) CHECK(plan.stages[s].host_input_bytes == 0.0);
}

TEST_CASE("BERT-Large: IPU0 holds the tied embedding once, 3 layers and the heads", "[bert][plan]") {
  const Built b = build("bert-large-training.json");
  const Plan& plan = b.plan;
  // Embedding: 30528*1024 + 512*1024 + 2*1024 + 2*1024 = 31,789,056.
  const double embedding = embedding_params(1024, 30528);
  REQUIRE(embedding == 31789056.0);
  // Layer: 12*1024^2 + 13*1024 = 12,596,224.
  const double layer = layer_params(1024, 4096);
  REQUIRE(layer == 12596224.0);
  // Heads: 2*1024^2 + 7*1024 + 2 = 2,103,298.
  const double heads = head_params(1024);
  REQUIRE(heads == 2103298.0);
  // IPU0: 31,789,056 + 3*12,596,224 + 2,103,298 = 71,681,026 float16 = 143,362,052 B.
  // The word embedding, read by the stage-0 Gather and the stage-4 MLM decoder, counts once.
  CHECK(ipu(plan, 0).weight_elements == 71681026.0);
  CHECK(ipu(plan, 0).weight_bytes == 143362052.0);
  CHECK(ipu(plan, 0).weight_bytes == 2 * (embedding + 3 * layer + heads));
  // IPUs 1-3: 7 layers = 88,173,568 parameters = 176,347,136 B each.
  for (int i : {1, 2, 3}) CHECK(ipu(plan, i).weight_bytes == 2 * 7 * layer);
  // The whole model: 31,789,056 + 24*12,596,224 + 2,103,298 = 336,201,730 (BERT-Large, ~336M).
  double total = 0;
  for (const auto& i : plan.ipus) total += i.weight_elements;
  CHECK(total == 336201730.0);
}

TEST_CASE("BERT-Large inference: 5 forward stages, no gradient copies", "[bert][plan]") {
  const Built b = build("bert-large-training.json",
                        {Override{"execution.training", false}, Override{"execution.gradientAccumulation", 1}});
  const Plan& plan = b.plan;
  REQUIRE(plan.stage_count() == 5);
  CHECK(plan.forward_stage_count == 5);
  const int expected_ipu[5] = {0, 1, 2, 3, 0};
  for (int s = 0; s < 5; ++s) {
    CHECK(plan.stages[s].ipu == expected_ipu[s]);
    CHECK_FALSE(plan.stages[s].backward);
    CHECK(plan.stages[s].backward_seconds == 0.0);
  }
  CHECK(ipu(plan, 0).stages == std::vector<int>{0, 4});
  REQUIRE(plan.copies.size() == 4);
  for (const auto& c : plan.copies) CHECK_FALSE(c.gradient);
  CHECK(copy_between(plan, 3, 4).bytes == 2097152.0);
  CHECK(copy_between(plan, 0, 1).bytes == 2099200.0);
}

TEST_CASE("BERT-Base: IPU0 = embedding + heads only, the bias chain starts at IPU0", "[bert][plan]") {
  const Built b = build("bert-base-training.json");
  const Plan& plan = b.plan;
  REQUIRE(plan.forward_stage_count == 5);
  REQUIRE(plan.stage_count() == 9);
  const int expected_ipu[9] = {0, 1, 2, 3, 0, 3, 2, 1, 0};
  for (int s = 0; s < 9; ++s) CHECK(plan.stages[s].ipu == expected_ipu[s]);
  CHECK(plan.stages[0].ops.size() == 8);      // embedding 6 + mask 2, no layer
  CHECK(plan.stages[1].ops.size() == 4 * 22);
  // IPU0: embedding 30528*768 + 512*768 + 2*768 + 2*768 = 23,841,792 and heads
  // 2*768^2 + 7*768 + 2 = 1,184,258: 25,026,050 float16 = 50,052,100 B.
  CHECK(ipu(plan, 0).weight_elements == embedding_params(768, 30528) + head_params(768));
  CHECK(ipu(plan, 0).weight_bytes == 50052100.0);
  // Each of IPUs 1-3: 4 layers of 12*768^2 + 13*768 = 7,087,872.
  for (int i : {1, 2, 3}) CHECK(ipu(plan, i).weight_elements == 4 * 7087872.0);
  // Copies: micro-batch 32, [128, 768] float16 = 6,291,456 B; + attention bias 128*2*32 = 8,192 B.
  const PlanCopy& first = copy_between(plan, 0, 1);
  CHECK(as_set(first.tensors) == std::set<std::string>{"embedding/output", "attention_bias"});
  CHECK(first.bytes == 6291456.0 + 8192.0);
  CHECK(copy_between(plan, 3, 4).bytes == 6291456.0);
  CHECK_FALSE(carries(copy_between(plan, 3, 4), "attention_bias"));
}

TEST_CASE("BERT-Tiny inference: 5 stages over 4 IPUs, depth 32 >= 5", "[bert][plan]") {
  const Built b = build("bert-tiny-inference.json");
  CHECK_FALSE(b.plan.training);
  REQUIRE(b.plan.stage_count() == 5);
  CHECK(b.plan.stages[4].ipu == 0);
  CHECK(b.scenario.execution.batches_per_step >= b.plan.stage_count());
  // [128, 128] float16 * 8 = 262,144 B wraps IPU3 -> IPU0.
  CHECK(copy_between(b.plan, 3, 4).bytes == 262144.0);
}

TEST_CASE("one BERT-Large encoder layer derives the textbook forward FLOPs", "[bert][flops]") {
  const Built b = build("bert-large-training.json");
  const Model& m = b.scenario.model;
  const double s = 128, h = 1024, n = 16, f = 4096;
  double all = 0, matmuls = 0;
  int ops = 0;
  for (const Op& op : m.ops) {
    if (op.name.rfind("layer5/", 0) != 0) continue;
    ++ops;
    const double flops = derived_flops_per_sample(m, op);
    all += flops;
    if (op.type == "MatMul") matmuls += flops;
  }
  REQUIRE(ops == 22);
  // MatMuls: QKV 2*s*h*3h, scores 2*n*s*s*(h/n) = 2*s^2*h, context 2*s^2*h, output 2*s*h^2,
  // FFN 2*s*h*f twice: with f = 4h, 24*s*h^2 + 4*s^2*h = 3,288,334,336 + 67,108,864 FLOPs.
  const double textbook = 2 * s * h * 3 * h + 2 * s * s * h + 2 * s * s * h + 2 * s * h * h + 2 * s * h * f + 2 * s * f * h;
  REQUIRE(textbook == 24 * s * h * h + 4 * s * s * h);
  CHECK(matmuls == Approx(textbook).epsilon(1e-12));
  // Elementwise per op-work's table: QKV bias 3sh + head split transpose 3sh + scale n*s^2
  // + mask n*s^2 + softmax 5n*s^2 + head merge transpose sh + output bias sh + residual sh
  // + LayerNorm 8sh + FFN bias f*s + Gelu 8*s*f + FFN bias sh + residual sh + LayerNorm 8sh
  // (Reshapes are free) = 27sh + 9sf + 7n*s^2.
  const double elementwise = 27 * s * h + 9 * s * f + 7 * n * s * s;
  CHECK(all == Approx(textbook + elementwise).epsilon(1e-12));
  // The heads: the MLM decoder MatMul contracts hidden against the tied word embedding:
  // 2 * 20 * 30528 * 1024 FLOPs per sample.
  for (const Op& op : m.ops)
    if (op.name == "mlm/decoder") {
      CHECK(op.inputs[1] == "embedding/word_embeddings");
      CHECK(derived_flops_per_sample(m, op) == Approx(2.0 * 20 * 30528 * 1024).epsilon(1e-12));
    }
}

TEST_CASE("BERT-Large training: each backward stage splits into B and W, W near half", "[bert][plan]") {
  // Encoder layers are matmul-dominated: dW has dX's MACs, so W is about half of a layer's
  // backward; B (what the previous stage waits for) is the rest. The split sums to the backward.
  const Built b = build("bert-large-training.json");
  for (int s = 5; s < 9; ++s) {
    const PlanStage& st = b.plan.stages[static_cast<std::size_t>(s)];
    INFO("stage " << s);
    CHECK(st.weight_gradient_seconds > 0.3 * st.backward_seconds);
    CHECK(st.weight_gradient_seconds < 0.6 * st.backward_seconds);
  }
  // The loss stage's backward (heads: MLM projection, tied embedding) has W too.
  CHECK(b.plan.stages[4].weight_gradient_seconds > 0);
  CHECK(b.plan.stages[4].weight_gradient_seconds < b.plan.stages[4].backward_seconds);
  // Forward stages hold no W.
  for (int s = 0; s < 4; ++s) CHECK(b.plan.stages[static_cast<std::size_t>(s)].weight_gradient_seconds == 0);
}
