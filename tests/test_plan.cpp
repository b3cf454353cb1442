// Lowering without an engine: FLOP derivation, the tile cost model, stage merging,
// copies and host streams, checked against hand-computed values.
#include <catch2/catch.hpp>

#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

Model model_of(const Json& doc) { return model_from_json(doc, "m.json"); }

Json one_op(const std::string& type, const Json& inputs, const Json& tensors, const Json& out_shape) {
  Json t = tensors;
  t["out"] = {{"shape", out_shape}, {"kind", "activation"}};
  std::vector<std::string> names;
  for (const auto& i : inputs) names.push_back(i.get<std::string>());
  return {{"tensors", t}, {"ops", {{{"name", "op"}, {"type", type}, {"inputs", names}, {"outputs", {"out"}}}}}};
}

} // namespace

TEST_CASE("derived FLOPs follow the op type and shapes", "[cost]") {
  SECTION("Gemm: 2 x outputs x contracted dimension, plus the bias") {
    const Model m = model_of(one_op("Gemm", {"x", "W", "b"},
                                    {{"x", {{"shape", {128, 784}}, {"kind", "input"}}},
                                     {"W", {{"shape", {784, 512}}, {"kind", "weight"}}},
                                     {"b", {{"shape", {512}}, {"kind", "weight"}}}},
                                    {128, 512}));
    CHECK(derived_flops_per_sample(m, m.ops[0]) == 2.0 * 128 * 512 * 784 + 128 * 512);
  }
  SECTION("Conv: 2 x outputs x Cin/group x kernel") {
    const Model m = model_of(one_op("Conv", {"x", "W"},
                                    {{"x", {{"shape", {3, 224, 224}}, {"kind", "input"}}},
                                     {"W", {{"shape", {64, 3, 7, 7}}, {"kind", "weight"}}}},
                                    {64, 112, 112}));
    CHECK(derived_flops_per_sample(m, m.ops[0]) == 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
  }
  SECTION("elementwise, activations, normalisation and softmax per output element") {
    const Json x = {{"x", {{"shape", {10, 10}}, {"kind", "input"}}}};
    const Model relu = model_of(one_op("Relu", {"x"}, x, {10, 10}));
    CHECK(derived_flops_per_sample(relu, relu.ops[0]) == 100);
    const Model gelu = model_of(one_op("Gelu", {"x"}, x, {10, 10}));
    CHECK(derived_flops_per_sample(gelu, gelu.ops[0]) == 800);
    const Model ln = model_of(one_op("LayerNorm", {"x"}, x, {10, 10}));
    CHECK(derived_flops_per_sample(ln, ln.ops[0]) == 800);
    const Model sm = model_of(one_op("Softmax", {"x"}, x, {10, 10}));
    CHECK(derived_flops_per_sample(sm, sm.ops[0]) == 500);
    const Model gather = model_of(one_op("Gather", {"x"}, x, {4, 10}));
    CHECK(derived_flops_per_sample(gather, gather.ops[0]) == 40);
  }
  SECTION("an unknown type without flops is an error naming the op") {
    const Model m = model_of(one_op("Frobnicate", {"x"}, {{"x", {{"shape", {4}}, {"kind", "input"}}}}, {4}));
    CHECK(rule_of([&] { derived_flops_per_sample(m, m.ops[0]); }) == "op.flops-underivable");
  }
}

TEST_CASE("tile cost model: compute over usable tiles + exchange + sync", "[cost]") {
  IpuSpec ipu;
  ipu.tiles = 1000;
  ipu.clock_hz = 1e9;
  ipu.flops_per_cycle_per_tile_f16 = 64;
  ipu.flops_per_cycle_per_tile_f32 = 16;
  ipu.exchange_bytes_per_cycle_per_tile = 4;
  ipu.sync_cycles = 100;
  ipu.min_elements_per_tile = 10;
  ipu.default_efficiency = 0.5;
  ipu.efficiency["MatMul"] = 0.8;
  OpWork w;
  w.op_type = "MatMul";
  w.dtype = DType::Float16;
  w.flops = 64e6;
  w.input_bytes = 4e6;
  w.parallel_elements = 5000;  // 500 tiles usable
  // compute 64e6 / (500 * 64 * 0.8) = 2500 cycles; exchange 4e6 / 500 / 4 = 2000; sync 100.
  CHECK(tiles_used(w, ipu) == 500);
  CHECK(make_cost_model("tile", ipu)->seconds(w) == Approx((2500 + 2000 + 100) / 1e9).epsilon(1e-12));
  CHECK(make_cost_model("compute", ipu)->seconds(w) == Approx(2500 / 1e9).epsilon(1e-12));
  w.parallel_elements = 1e9;  // capped at all 1000 tiles
  CHECK(tiles_used(w, ipu) == 1000);
  w.parallel_elements = 3;  // at least one tile
  CHECK(tiles_used(w, ipu) == 1);
  CHECK(make_cost_model("roofline-that-does-not-exist", ipu) == nullptr);
}

TEST_CASE("plan: merged stages, hop-by-hop copies, host streams, backward stages", "[plan]") {
  // Stages 0,1 on IPU0 merge; stage 2 on IPU1; stage 3 on IPU2. a1 (produced in stage 0)
  // is read in stage 3, so it travels 0->1->2 hop by hop.
  Json model = chain_model({{0, 1e6, 0}, {0, 1e6, 1}, {1, 1e6, 2}, {2, 1e6, 3}}, 250);
  model["ops"][3]["inputs"].push_back("a1");
  const Scenario sc = make_scenario(model, zero_overhead_config(3),
                                    {{"training", true}, {"gradientAccumulation", 8}, {"microBatchSize", 2},
                                     {"costModel", "compute"}});
  const Plan plan = make_plan(sc, build_graph(sc.model));
  REQUIRE(plan.forward_stage_count == 3);
  REQUIRE(plan.stage_count() == 5);
  CHECK(plan.stages[0].annotated_stages == std::vector<int>{0, 1});
  CHECK(plan.stages[0].forward_seconds == Approx(2 * 2e6 / 1e9));  // two ops of 1e6 FLOP x micro-batch 2
  // Backward stage 2L-s on the forward stage's IPU: L = 2, so stage 3 <- 1 (IPU1), stage 4 <- 0 (IPU0).
  CHECK(plan.stages[3].ipu == 1);
  CHECK(plan.stages[3].forward_stage == 1);
  CHECK(plan.stages[4].ipu == 0);
  CHECK(plan.stages[2].backward_seconds == Approx(2 * 2e6 / 1e9));  // loss stage: 2x forward
  // Forward copies: boundary 0->1 carries a2 and a1 (2 x 1000 B x 2 samples), 1->2 carries a3 and a1.
  REQUIRE(plan.copies.size() == 4);
  CHECK(plan.copies[0].from_stage == 0);
  CHECK(plan.copies[0].bytes == 2 * 1000.0 * 2);
  CHECK(plan.copies[1].from_stage == 1);
  CHECK(plan.copies[1].bytes == 2 * 1000.0 * 2);
  // Gradient copies mirror them: 2->3 (IPU2->IPU1) and 3->4 (IPU1->IPU0).
  CHECK(plan.copies[2].gradient);
  CHECK(plan.copies[2].from_stage == 2);
  CHECK(plan.copies[2].src_ipu == 2);
  CHECK(plan.copies[2].dst_ipu == 1);
  CHECK(plan.copies[3].from_stage == 3);
  CHECK(plan.copies[3].bytes == 2 * 1000.0 * 2);
  // Host input x enters at stage 0 (1000 B x 2 samples); the graph output a4 leaves from stage 2.
  CHECK(plan.stages[0].host_input_bytes == 2000);
  CHECK(plan.stages[2].host_output_bytes == 2000);
}

TEST_CASE("routes take the fewest hops, ties to lower IPU ids", "[plan]") {
  Json config = zero_overhead_config(4);
  config["links"] = {{{"ipus", {0, 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}},
                     {{"ipus", {1, 2}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}},
                     {{"ipus", {2, 3}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}},
                     {{"ipus", {3, 0}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}}};
  const HardwareConfig hw = hardware_from_json(config, "ring.json");
  const auto routes = compute_routes(hw);
  REQUIRE(routes[0][2].size() == 2);  // 0->1->2 and 0->3->2 tie; via IPU1
  CHECK(directed_link_name(hw, routes[0][2][0]) == "ipu0->ipu1");
  CHECK(directed_link_name(hw, routes[0][2][1]) == "ipu1->ipu2");
  REQUIRE(routes[0][3].size() == 1);
  CHECK(directed_link_name(hw, routes[0][3][0]) == "ipu0->ipu3");
  CHECK_FALSE(routes[0][3][0].forward);  // link 3 is declared [3, 0]
}

TEST_CASE("a schedule that cannot finish fails loudly instead of returning", "[engine]") {
  // IPU1 waits for a copy that IPU0 never sends.
  Schedule s;
  s.name = "broken";
  Step recv;
  recv.kind = StepKind::Exchange;
  recv.transfers = {{0, 0, 1, 1000}};
  s.programs = {Program{0, {}}, Program{1, {recv}}};
  const HardwareConfig hw = hardware_from_json(zero_overhead_config(2), "c.json");
  try {
    run_engine(s, hw);
    FAIL("the engine returned from a deadlock");
  } catch (const EngineError& e) {
    CHECK_THAT(e.what(), Catch::Contains("deadlock") && Catch::Contains("IPU 1 at step 0"));
  }
}
