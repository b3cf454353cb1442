// The "poplibs" cost model, op family by op family: cycle counts computed by hand from
// the tile's constants (configs/ipus/gc200.json) and poplibs' vertex estimates
// (docs/cost-model.md), and the shape effects a tile model must show.
#include <catch2/catch.hpp>

#include "sim/cost/amp_planner.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

// A GC200 tile (the default TileArchitecture) at 1 GHz: one cycle is one nanosecond.
IpuSpec gc200() {
  IpuSpec ipu;
  ipu.name = "GC200";
  ipu.tiles = 1472;
  ipu.clock_hz = 1e9;
  ipu.flops_per_cycle_per_tile_f16 = 128;
  ipu.flops_per_cycle_per_tile_f32 = 32;
  ipu.sram_bytes_per_tile = 638976;
  ipu.exchange_bytes_per_cycle_per_tile = 4;
  return ipu;
}

struct Fixture {
  IpuSpec ipu = gc200();
  TileContext ctx{ipu, ipu.tile, 1472, 0.6 * 638976, DType::Float16};
};

Operand operand(std::vector<std::int64_t> shape, DType dtype, TensorKind kind = TensorKind::Activation,
                bool needs_gradient = true) {
  Operand o;
  o.shape = std::move(shape);
  o.dtype = dtype;
  o.kind = kind;
  o.needs_gradient = needs_gradient;
  return o;
}

} // namespace

TEST_CASE("vector passes: popops rates per worker, six workers, a sync per compute set", "[cost][vector]") {
  Fixture f;
  // 64 halves on each tile (grain 4, at least 128 B): 11 per worker, 3 loops of 4 at 3 cycles.
  CHECK(vector_pass(f.ctx, VectorOp::Add, DType::Float16, 1472 * 64).cycles() == 6 * (26 + 3 * 3) + 90);
  // Exp on 100 floats per tile: 17 per worker, 9 loops of 2 at 6 cycles, 33 of overhead.
  CHECK(vector_pass(f.ctx, VectorOp::Exp, DType::Float32, 1472 * 100).cycles() == 6 * (33 + 9 * 6) + 90);
  // Gelu (popnn) on 1000 halves per tile: 167 per worker, 42 vectors at 5 cycles.
  CHECK(vector_pass(f.ctx, VectorOp::Gelu, DType::Float16, 1472 * 1000).cycles() == 6 * (22 + 42 * 5) + 90);
  // Division is 7 times the cost of a multiplication in halves (21 against 3 cycles a vector).
  const double div = vector_pass(f.ctx, VectorOp::Div, DType::Float16, 1472 * 4800).compute_cycles;
  const double mul = vector_pass(f.ctx, VectorOp::Mul, DType::Float16, 1472 * 4800).compute_cycles;
  CHECK(div == 6 * (26 + 200 * 21));
  CHECK(mul == 6 * (26 + 200 * 3));
  // An exchange before the pass costs its fixed overhead plus bytes at 4 B/cycle.
  const OpCost fed = vector_pass(f.ctx, VectorOp::Add, DType::Float16, 1472 * 64, 128);
  CHECK(fed.exchange_cycles == 100 + 32);
}

TEST_CASE("a small tensor sits on few tiles, at least 128 bytes on each", "[cost][vector]") {
  Fixture f;
  CHECK(elements_per_tile(f.ctx, 1000, DType::Float16) == 64);  // 128 B of halves
  CHECK(tiles_occupied(f.ctx, 1000, DType::Float16) == 16);
  CHECK(elements_per_tile(f.ctx, 1e7, DType::Float32) == 6794);  // ceil(1e7 / 1472 / 2) x 2
}

TEST_CASE("reductions: in place when a result's inputs share a tile, in two compute sets when not",
          "[cost][reduction]") {
  Fixture f;
  // Rows of 128 halves, one per tile: per accumulator vector of 8, 2 + 2 + 8/4 + 3 = 9 cycles;
  // 16 vectors over 6 workers is 3 each, one output region.
  CHECK(reduction(f.ctx, 1472 * 128, 1472, DType::Float16).cycles() == 6 * (30 + 30 + 3 * 9) + 90);
  // One result from all 188,416 halves: every tile reduces its 128 to a float partial, then
  // one tile adds the 1472 partials after receiving them (1472 x 4 B).
  const OpCost all = reduction(f.ctx, 1472 * 128, 1, DType::Float16);
  CHECK(all.sync_cycles == 2 * 90);
  CHECK(all.exchange_cycles == 100 + 1472);
}

TEST_CASE("the AMP vertex: poplibs' 1x1 estimate by hand", "[cost][matmul]") {
  Fixture f;
  // 12 field positions, 2 per worker: 40 + 1 (zeroing) - 7 (state retention) = 34 worker cycles,
  // x 6 workers + 14 to tag the last; weights: 16 units x 16 halves / 16 B per cycle = 32 cycles;
  // supervisor 50 + 6 x 7 + 13 + 11 + 18.
  CHECK(amp_vertex_cycles(f.ctx, DType::Float16, DType::Float16, 1, 1, 1, 12) ==
        50 + 6 * 7 + 13 + 11 + 18 + (7 + 32 + 6 * 34 + 14));
  // 600 positions (100 per worker), 2 input x 3 output channel groups: 4 cycles per position
  // (64 MACs a cycle), within 8 % of the AMP's peak.
  const double cycles = amp_vertex_cycles(f.ctx, DType::Float16, DType::Float16, 1, 2, 3, 600);
  const double inner_first = 6 * (37 + 97 * 4 - 7) + 14, inner_rest = 6 * (38 + 97 * 4 - 7) + 14;
  CHECK(cycles == 50 + 6 * (7 + 3 * 1) + 13 + (15 + 3 * (19 + 6 + 32 + inner_rest)) + (11 + 3 * (18 + 7 + 32 + inner_first)));
  CHECK(600.0 * 32 * 48 / 64 / cycles > 0.92);
}

TEST_CASE("a matmul on one tile: the vertex, the exchange of its weights and a sync", "[cost][matmul]") {
  Fixture f;
  f.ctx.tiles = 1;
  MatMulShape s;
  s.rows = 12;
  s.inputs = 16;
  s.outputs = 16;
  s.lhs_in_place = true;
  s.rhs_in_place = false;
  const MatMulPlan p = plan_matmul(f.ctx, s);
  CHECK(p.cost.compute_cycles == amp_vertex_cycles(f.ctx, DType::Float16, DType::Float16, 1, 1, 1, 12));
  CHECK(p.cost.exchange_cycles == 100 + 16 * 16 * 2 / 4);
  CHECK(p.cost.sync_cycles == 90);
  CHECK(p.cost.temp_bytes_per_tile == 12 * 16 * 2 + 16 * 16 * 2 + 12 * 16 * 2);
}

TEST_CASE("padding and partitioning make small and odd matmuls slower per MAC than large ones", "[cost][matmul]") {
  Fixture f;
  auto cycles_per_mac = [&](double g, double m, double k, double n) {
    MatMulShape s;
    s.groups = g;
    s.rows = m;
    s.inputs = k;
    s.outputs = n;
    s.lhs_in_place = true;
    s.rhs_in_place = true;
    return plan_matmul(f.ctx, s).cost.cycles() / (g * m * k * n);
  };
  const double large = cycles_per_mac(1, 4096, 1024, 1024);
  CHECK(cycles_per_mac(1, 64, 64, 64) > 10 * large);
  // 17 input channels pad to 32: nearly twice the cycles of 16 for the same work.
  CHECK(cycles_per_mac(1, 4096, 17, 1024) > 1.5 * cycles_per_mac(1, 4096, 16, 1024));
  // Large matmuls reach between 40 % and 80 % of the AMP peak (64 MACs a cycle a tile).
  const double efficiency = 1 / (large * 64 * 1472);
  CHECK(efficiency > 0.4);
  CHECK(efficiency < 0.8);
}

TEST_CASE("availableMemoryProportion trades temporaries for time", "[cost][matmul]") {
  Fixture f;
  MatMulShape s;
  s.rows = 4096;
  s.inputs = 3072;
  s.outputs = 3072;
  s.lhs_in_place = true;
  s.rhs_in_place = true;
  f.ctx.temp_budget_bytes = 0.6 * 638976;
  const MatMulPlan roomy = plan_matmul(f.ctx, s);
  f.ctx.temp_budget_bytes = 0.1 * 638976;
  const MatMulPlan tight = plan_matmul(f.ctx, s);
  CHECK(roomy.fits);
  CHECK(tight.fits);
  CHECK(tight.cost.temp_bytes_per_tile <= 0.1 * 638976);
  CHECK(tight.cost.temp_bytes_per_tile < roomy.cost.temp_bytes_per_tile);
  CHECK(tight.cost.cycles() > roomy.cost.cycles());
}

TEST_CASE("half partials halve what a split over input channels exchanges and reduces", "[cost][matmul]") {
  Fixture f;
  MatMulShape s;
  s.rows = 1024;
  s.inputs = 4096;
  s.outputs = 1024;
  s.lhs_in_place = true;
  s.rhs_in_place = true;
  f.ctx.partials = DType::Float32;
  const double single = plan_matmul(f.ctx, s).cost.cycles();
  f.ctx.partials = DType::Float16;
  CHECK(plan_matmul(f.ctx, s).cost.cycles() < single);
}

TEST_CASE("training a matmul with a weight: dX, dW and the accumulation of dW", "[cost][matmul]") {
  Fixture f;
  OpWork w;
  w.op_type = "MatMul";
  w.dtype = DType::Float16;
  w.inputs = {operand({8, 128, 1024}, DType::Float16), operand({1024, 4096}, DType::Float16, TensorKind::Weight)};
  w.outputs = {operand({8, 128, 4096}, DType::Float16)};
  const OpCost forward = matmul_family(f.ctx, w);
  w.pass = Pass::Backward;
  const OpCost backward = matmul_family(f.ctx, w);
  w.accumulates_weight_gradients = true;
  const OpCost accumulated = matmul_family(f.ctx, w);
  // Two matmuls of the forward's MACs: about twice its time.
  CHECK(backward.cycles() > 1.6 * forward.cycles());
  CHECK(backward.cycles() < 3.0 * forward.cycles());
  // The accumulation: one scaled add over the 4M weight halves (2850 a tile).
  CHECK(accumulated.cycles() - backward.cycles() ==
        vector_pass(f.ctx, VectorOp::Add, DType::Float16, 1024.0 * 4096).cycles());
  // A first layer reading a host input computes no dX.
  w.inputs[0].needs_gradient = false;
  w.accumulates_weight_gradients = false;
  CHECK(matmul_family(f.ctx, w).cycles() < 0.7 * backward.cycles());
}

TEST_CASE("a matmul's backward splits into B (dX) and W (dW and its accumulation)", "[cost][matmul]") {
  Fixture f;
  OpWork w;
  w.op_type = "MatMul";
  w.dtype = DType::Float16;
  w.pass = Pass::Backward;
  w.inputs = {operand({8, 128, 1024}, DType::Float16), operand({1024, 4096}, DType::Float16, TensorKind::Weight)};
  w.outputs = {operand({8, 128, 4096}, DType::Float16)};
  w.accumulates_weight_gradients = true;
  const OpCost both = matmul_family(f.ctx, w);
  // W alone: no dX wanted; B alone: a weight that needs no gradient.
  w.inputs[0].needs_gradient = false;
  const OpCost only_w = matmul_family(f.ctx, w);
  w.inputs[0].needs_gradient = true;
  w.inputs[1].needs_gradient = false;
  w.accumulates_weight_gradients = false;
  const OpCost only_b = matmul_family(f.ctx, w);
  CHECK(only_b.weight_gradient_cycles == 0);
  CHECK(only_w.weight_gradient_cycles == only_w.cycles());
  CHECK(both.weight_gradient_cycles == only_w.cycles());
  CHECK(both.cycles() == Approx(only_b.cycles() + only_w.cycles()).epsilon(1e-12));
  // dX and dW each have the forward's MACs: W is about half the backward.
  CHECK(both.weight_gradient_cycles > 0.35 * both.cycles());
  CHECK(both.weight_gradient_cycles < 0.65 * both.cycles());
}

TEST_CASE("a serialised matmul runs as factor parts planned alone, summing split contractions",
          "[cost][matmul]") {
  // PopART's serializeMatMul (transforms/serializematmuls.cpp): MLPerf BERT's MLM projection
  // [76 x 1024] . [1024 x 30912] over the vocabulary in 4 steps.
  Fixture f;
  OpWork w;
  w.op_type = "MatMul";
  w.dtype = DType::Float16;
  w.inputs = {operand({3, 76, 1024}, DType::Float16), operand({30912, 1024}, DType::Float16, TensorKind::Weight)};
  w.outputs = {operand({3, 76, 30912}, DType::Float16)};
  OpWork part = w;
  part.outputs = {operand({3, 76, 30912 / 4}, DType::Float16)};
  const OpCost whole = matmul_family(f.ctx, w);
  w.attributes = {{"__serialize_matmul_mode", std::string("output_channels")}, {"__serialize_matmul_factor", 4}};
  const OpCost serial = matmul_family(f.ctx, w);
  const OpCost one = matmul_family(f.ctx, part);
  CHECK(serial.cycles() == Approx(4 * one.cycles()).epsilon(1e-12));
  CHECK(serial.temp_bytes_per_tile == one.temp_bytes_per_tile);
  CHECK(serial.temp_bytes_per_tile < whole.temp_bytes_per_tile);
  // Backward: dX contracts over the vocabulary, cut in 4: 3 float adds over dX's elements.
  w.pass = part.pass = Pass::Backward;
  CHECK(matmul_family(f.ctx, w).cycles() ==
        Approx(4 * matmul_family(f.ctx, part).cycles() +
               3 * vector_pass(f.ctx, VectorOp::Add, DType::Float32, 3.0 * 76 * 1024).cycles())
            .epsilon(1e-12));
  // An unknown mode or a factor of 1 leaves the matmul whole.
  w.pass = Pass::Forward;
  w.attributes["__serialize_matmul_mode"] = std::string("rows");
  CHECK(matmul_family(f.ctx, w).cycles() == whole.cycles());
}

TEST_CASE("convolutions with few input channels fold the kernel width into them", "[cost][matmul]") {
  Fixture f;
  auto conv = [&](std::int64_t cin) {
    OpWork w;
    w.op_type = "Conv";
    w.dtype = DType::Float16;
    w.inputs = {operand({1, cin, 224, 224}, DType::Float16), operand({64, cin, 7, 7}, DType::Float16, TensorKind::Weight)};
    w.outputs = {operand({1, 64, 112, 112}, DType::Float16)};
    return matmul_family(f.ctx, w).cycles() / static_cast<double>(cin);
  };
  // 3 channels x 7 = 21 of 32 in a group, not 3 of 16: per input channel no dearer than 16 channels' 3x.
  CHECK(conv(3) < 3 * conv(16));
}

TEST_CASE("weight updates: the optimizer's passes over the state, a sync per tensor and pass", "[cost][update]") {
  Fixture f;
  // SGD on 64 halves a tile, one tensor: one scaled add.
  const OpWork sgd = weight_update_work(1472 * 64, 1472 * 64 * 2, DType::Float16, Optimizer::Sgd, DType::Float32, 1);
  CHECK(weight_update_family(f.ctx, sgd).cycles() == 6 * (26 + 3 * 3) + 90);
  // Ten tensors: nine more syncs.
  const OpWork ten = weight_update_work(1472 * 64, 1472 * 64 * 2, DType::Float16, Optimizer::Sgd, DType::Float32, 10);
  CHECK(weight_update_family(f.ctx, ten).cycles() == 6 * (26 + 3 * 3) + 10 * 90);
  // LAMB over float state: more than 8 times SGD's passes.
  const OpWork lamb =
      weight_update_work(1472 * 1000, 1472 * 1000 * 2, DType::Float16, Optimizer::Lamb, DType::Float32, 1);
  const OpWork plain =
      weight_update_work(1472 * 1000, 1472 * 1000 * 2, DType::Float16, Optimizer::Sgd, DType::Float32, 1);
  CHECK(weight_update_family(f.ctx, lamb).cycles() > 8 * weight_update_family(f.ctx, plain).cycles());
}

TEST_CASE("an embedding lookup searches the indices on every tile holding part of the table", "[cost][gather]") {
  Fixture f;
  f.ctx.tiles = 1;
  // One tile holds the whole [100 x 8] table: each of 6 lookups hits it, 19 + 2 per 2-element vector.
  OpWork w;
  w.op_type = "Gather";
  w.dtype = DType::Float16;
  w.inputs = {operand({100, 8}, DType::Float16, TensorKind::Weight), operand({1, 6}, DType::Int32)};
  w.outputs = {operand({1, 6, 8}, DType::Float16)};
  const OpCost c = data_movement_family(f.ctx, w);
  CHECK(c.compute_cycles == 6 * (30 + 1 * (19 + 4 * 2)));
}

TEST_CASE("views cost nothing; their reader pays for a rearranged layout", "[cost][views]") {
  Fixture f;
  OpWork w;
  w.op_type = "Transpose";
  w.inputs = {operand({8, 128, 16, 64}, DType::Float16)};
  w.outputs = {operand({8, 16, 128, 64}, DType::Float16)};
  CHECK(data_movement_family(f.ctx, w).cycles() == 0);
  w.pass = Pass::Backward;
  CHECK(data_movement_family(f.ctx, w).cycles() == 0);
  // An Add reading a transposed tensor receives it first.
  OpWork add;
  add.op_type = "Add";
  add.dtype = DType::Float16;
  add.inputs = {operand({8, 16, 128, 64}, DType::Float16), operand({8, 16, 128, 64}, DType::Float16)};
  add.inputs[1].rearranged = true;
  add.outputs = {operand({8, 16, 128, 64}, DType::Float16)};
  CHECK(elementwise_family(f.ctx, add).exchange_cycles > 0);
  add.inputs[1].rearranged = false;
  CHECK(elementwise_family(f.ctx, add).exchange_cycles == 0);
}

namespace {

// One BERT-Large encoder layer (hidden 1024, 16 heads) at sequence length `seq`.
Json bert_layer(int seq) {
  const int h = 1024, heads = 16, dh = 64, ffn = 4096;
  Json tensors = {{"x", {{"shape", {seq, h}}, {"dtype", "float16"}, {"kind", "input"}}}};
  Json ops = Json::array();
  auto tensor = [&](const std::string& name, std::vector<int> shape, const char* kind = "activation") {
    tensors[name] = {{"shape", shape}, {"dtype", "float16"}, {"kind", kind}};
    return name;
  };
  auto op = [&](const std::string& name, const std::string& type, std::vector<std::string> in, std::string out) {
    ops.push_back({{"name", name}, {"type", type}, {"inputs", in}, {"outputs", {out}}});
    return out;
  };
  auto dense = [&](const std::string& name, const std::string& x, int n) {
    const std::string w = tensor(name + "/w", {tensors[x]["shape"].back().get<int>(), n}, "weight");
    return op(name, "MatMul", {x, w}, tensor(name + "/out", {seq, n}));
  };
  const std::string q = dense("q", "x", h), k = dense("k", "x", h), v = dense("v", "x", h);
  const std::string qh = op("q_heads", "Transpose", {q}, tensor("qh", {heads, seq, dh}));
  const std::string kh = op("k_heads", "Transpose", {k}, tensor("kh", {heads, dh, seq}));
  const std::string vh = op("v_heads", "Transpose", {v}, tensor("vh", {heads, seq, dh}));
  std::string s = op("scores", "MatMul", {qh, kh}, tensor("scores_out", {heads, seq, seq}));
  s = op("scale", "Scale", {s}, tensor("scaled", {heads, seq, seq}));
  s = op("softmax", "Softmax", {s}, tensor("probs", {heads, seq, seq}));
  std::string c = op("context", "MatMul", {s, vh}, tensor("context_out", {heads, seq, dh}));
  c = op("merge", "Transpose", {c}, tensor("merged", {seq, h}));
  c = dense("out", c, h);
  c = op("residual", "Add", {"x", c}, tensor("residual_out", {seq, h}));
  c = op("ln1", "LayerNorm", {c}, tensor("ln1_out", {seq, h}));
  std::string f1 = dense("ffn1", c, ffn);
  f1 = op("gelu", "Gelu", {f1}, tensor("gelu_out", {seq, ffn}));
  std::string f2 = dense("ffn2", f1, h);
  f2 = op("residual2", "Add", {c, f2}, tensor("residual2_out", {seq, h}));
  op("ln2", "LayerNorm", {f2}, tensor("y", {seq, h}));
  return {{"name", "layer"}, {"tensors", tensors}, {"ops", ops}};
}

struct LayerTime {
  double total = 0, attention = 0;
};

LayerTime layer_time(int seq, int micro_batch) {
  Json config = zero_overhead_config(1);
  config["ipu"] = {{"name", "GC200"}, {"tiles", 1472}, {"clockHz", 1.325e9},
                   {"flopsPerCyclePerTile", {{"float16", 128}, {"float32", 32}}}, {"sramBytesPerTile", 638976},
                   {"exchangeBytesPerCyclePerTile", 4}, {"syncCycles", 100}, {"codeBytesPerOp", 192},
                   {"efficiency", {{"default", 0.5}}}};
  const Json execution = {{"mode", "sharded"}, {"microBatchSize", micro_batch}, {"hostIo", false},
                          {"partialsTypeMatMuls", "half"}, {"availableMemoryProportion", 0.25}};
  const Scenario sc = make_scenario(bert_layer(seq), config, execution);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  LayerTime t;
  for (std::size_t i = 0; i < sc.model.ops.size(); ++i) {
    const double seconds = plan.op_timings[i].forward.cycles() / plan.clock_hz;
    t.total += seconds;
    const std::string& name = sc.model.ops[i].name;
    if (name == "scores" || name == "scale" || name == "softmax" || name == "context") t.attention += seconds;
  }
  return t;
}

} // namespace

TEST_CASE("a layer's time follows its shapes: attention's share grows with the sequence length",
          "[cost][shapes]") {
  // The same 1024 tokens per micro-batch: 8 sequences of 128, or 2 of 512.
  const LayerTime short_seq = layer_time(128, 8), long_seq = layer_time(512, 2);
  CHECK(long_seq.attention / long_seq.total > 1.5 * (short_seq.attention / short_seq.total));
  CHECK(long_seq.total > short_seq.total);
  // Twice the micro-batch is less than twice the time: bigger matmuls use the tiles better.
  const LayerTime doubled = layer_time(128, 16);
  CHECK(doubled.total > short_seq.total);
  CHECK(doubled.total < 2 * short_seq.total);
}
