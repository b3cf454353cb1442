// One test case per input rule of the graph, plan, schedule and route checks: each
// asserts its rule id, the JSON pointer it reports and that the message names the ops
// and tensors involved. Plus the positive annotation rules (stage := virtualGraph,
// consecutive stages on one IPU merge).
#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;

namespace {

const std::string kModelFile = "rules-model.json";


// The graph checks of a model document read from kModelFile.
InputError graph_error(const Json& model) {
  return error_of([&] { build_graph(model_from_json(model, kModelFile)); });
}

// Everything a run checks before simulating: graph, plan, routes, schedules for `modes`.
void check_scenario(const Scenario& sc, const std::vector<Mode>& modes) {
  const ModelGraph g = build_graph(sc.model);
  const Plan plan = make_plan(sc, g);
  compute_routes(sc.hardware);
  for (Mode m : modes) make_schedule(m, sc, plan);
}

InputError scenario_error(const Json& model, const Json& config, const Json& execution,
                          const std::vector<Mode>& modes = {Mode::Sharded, Mode::Pipelined}) {
  return error_of([&] { check_scenario(make_scenario(model, config, execution), modes); });
}

// The origin an inline model of make_scenario gets.
const std::string kInlineModel = "test-scenario.json#/model";

const Json kInference = {{"training", false}, {"batchesPerStep", 4}, {"costModel", "compute"}};

// A rule PopART applies only when pipelining: the sharded run accepts the model, the
// pipelined run is refused with the returned error.
InputError pipelining_error(const Json& model, int ipus = 2) {
  const Scenario sc = make_scenario(model, zero_overhead_config(ipus), kInference);
  CHECK_NOTHROW(check_scenario(sc, {Mode::Sharded}));
  const InputError e = error_of([&] { check_scenario(sc, {Mode::Pipelined}); });
  CHECK(e.file() == kInlineModel);
  CHECK_THAT(e.message(), Contains("only when pipelining") && Contains("--mode sharded"));
  return e;
}

// Two ops on two IPUs: x -> op0 (IPU0) -> a1 -> op1 (IPU1) -> a2.
Json two_ipu_chain() { return chain_model({{0, 1e6}, {1, 1e6}}, 8); }

Json act(int elements = 8) { return {{"shape", {elements}}, {"dtype", "float32"}, {"kind", "activation"}}; }

} // namespace

TEST_CASE("op.duplicate-name: two ops share a name", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][1]["name"] = "op0";
  const InputError e = graph_error(m);
  CHECK(e.rule() == "op.duplicate-name");
  CHECK(e.file() == kModelFile);
  CHECK(e.pointer() == "/ops/1/name");
  CHECK_THAT(e.message(), Contains("\"op0\""));
  CHECK_THAT(std::string(e.what()), Contains(kModelFile) && Contains("/ops/1/name") && Contains("[op.duplicate-name]"));
}

TEST_CASE("tensor.unknown: an op reads or writes an undeclared tensor", "[rules]") {
  SECTION("input side") {
    Json m = two_ipu_chain();
    m["ops"][1]["inputs"] = {"a1", "ghost"};
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.unknown");
    CHECK(e.pointer() == "/ops/1/inputs/1");
    CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("reads") && Contains("\"ghost\""));
  }
  SECTION("output side") {
    Json m = two_ipu_chain();
    m["ops"][0]["outputs"] = {"a1", "phantom"};
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.unknown");
    CHECK(e.pointer() == "/ops/0/outputs/1");
    CHECK_THAT(e.message(), Contains("\"op0\"") && Contains("writes") && Contains("\"phantom\""));
  }
}

TEST_CASE("tensor.produced-non-activation: an op writes an input or a weight", "[rules]") {
  Json m = two_ipu_chain();
  m["tensors"]["W"] = {{"shape", {8}}, {"kind", "weight"}};
  m["ops"][1]["outputs"] = {"a2", "W"};
  const InputError e = graph_error(m);
  CHECK(e.rule() == "tensor.produced-non-activation");
  CHECK(e.pointer() == "/ops/1/outputs/1");
  CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("\"W\"") && Contains("weight"));
}

TEST_CASE("tensor.multiple-producers: two ops write one tensor", "[rules]") {
  Json m = chain_model({{0, 1e6}, {1, 1e6}, {1, 1e6}}, 8);
  m["ops"][2]["inputs"] = {"a1"};
  m["ops"][2]["outputs"] = {"a2"};  // op1 writes a2 already
  m["tensors"].erase("a3");
  const InputError e = graph_error(m);
  CHECK(e.rule() == "tensor.multiple-producers");
  CHECK(e.pointer() == "/ops/2/outputs/0");
  CHECK_THAT(e.message(), Contains("\"a2\"") && Contains("\"op1\"") && Contains("\"op2\""));
}

TEST_CASE("op.no-outputs: an op writes nothing", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][1]["outputs"] = Json::array();
  m["tensors"].erase("a2");
  const InputError e = graph_error(m);
  CHECK(e.rule() == "op.no-outputs");
  CHECK(e.pointer() == "/ops/1/outputs");
  CHECK_THAT(e.message(), Contains("\"op1\""));
}

TEST_CASE("tensor.no-producer: a declared activation nobody writes", "[rules]") {
  Json m = two_ipu_chain();
  SECTION("plain name") {
    m["tensors"]["orphan"] = act();
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.no-producer");
    CHECK(e.pointer() == "/tensors/orphan");
    CHECK_THAT(e.message(), Contains("\"orphan\""));
  }
  SECTION("a name with a slash is escaped in the pointer (RFC 6901)") {
    m["tensors"]["dense1/out"] = act();
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.no-producer");
    CHECK(e.pointer() == "/tensors/dense1~1out");
    CHECK_THAT(e.message(), Contains("\"dense1/out\""));
  }
}

TEST_CASE("graph.cycle: the message lists the cycle's ops in data-flow order", "[rules]") {
  // entry: x -> e; then, in file order, C: b -> c, A: (e, c) -> a, B: a -> b. A -> B -> C -> A.
  const Json m = {{"tensors",
                   {{"x", {{"shape", {8}}, {"kind", "input"}}},
                    {"e", act()}, {"a", act()}, {"b", act()}, {"c", act()}}},
                  {"ops",
                   {{{"name", "entry"}, {"type", "Relu"}, {"inputs", {"x"}}, {"outputs", {"e"}}},
                    {{"name", "C"}, {"type", "Relu"}, {"inputs", {"b"}}, {"outputs", {"c"}}},
                    {{"name", "A"}, {"type", "Add"}, {"inputs", {"e", "c"}}, {"outputs", {"a"}}},
                    {{"name", "B"}, {"type", "Relu"}, {"inputs", {"a"}}, {"outputs", {"b"}}}}}};
  const InputError e = graph_error(m);
  CHECK(e.rule() == "graph.cycle");
  CHECK(e.pointer() == "/ops/1");  // C, the first op in the file left over by the sort
  CHECK_THAT(e.message(), Contains("\"C\" -> \"A\" -> \"B\" -> \"C\""));
  CHECK_THAT(e.message(), !Contains("entry"));

  SECTION("an op reading its own output is a cycle of one") {
    Json self = two_ipu_chain();
    self["ops"][1]["inputs"] = {"a1", "a2"};
    const InputError s = graph_error(self);
    CHECK(s.rule() == "graph.cycle");
    CHECK(s.pointer() == "/ops/1");
    CHECK_THAT(s.message(), Contains("\"op1\" -> \"op1\""));
  }
}

TEST_CASE("annotation.mixed-virtual-graph: virtualGraph on some ops only", "[rules]") {
  Json m = chain_model({{0, 1e6}, {1, 1e6}, {1, 1e6}}, 8);
  m["ops"][1].erase("virtualGraph");
  const InputError e = graph_error(m);
  CHECK(e.rule() == "annotation.mixed-virtual-graph");
  CHECK(e.pointer() == "/ops/1");
  CHECK_THAT(e.message(), Contains("2 ops have it") && Contains("\"op1\""));
  CHECK_THAT(e.message(), !Contains("\"op2\""));
}

TEST_CASE("annotation.mixed-pipeline-stage: pipelineStage on some ops only (pipelined runs)", "[rules]") {
  Json m = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {1, 1e6}}, 8);
  const InputError e = pipelining_error(m);
  CHECK(e.rule() == "annotation.mixed-pipeline-stage");
  CHECK(e.pointer() == "/ops/2");
  CHECK_THAT(e.message(), Contains("pipelineStage") && Contains("\"op2\""));
}

TEST_CASE("annotation.stage-without-virtual-graph: pipelineStage everywhere, virtualGraph nowhere (pipelined runs)",
          "[rules]") {
  Json m = chain_model({{0, 1e6, 0}, {1, 1e6, 1}}, 8);
  for (auto& op : m["ops"]) op.erase("virtualGraph");
  const InputError e = pipelining_error(m);
  CHECK(e.rule() == "annotation.stage-without-virtual-graph");
  CHECK(e.pointer() == "/ops/0/pipelineStage");
  CHECK_THAT(e.message(), Contains("\"op0\""));
}

TEST_CASE("annotation.stage-gap: stage ids must be dense from 0 (pipelined runs)", "[rules]") {
  SECTION("pipelineStage 0 and 2") {
    const InputError e = pipelining_error(chain_model({{0, 1e6, 0}, {1, 1e6, 2}}, 8));
    CHECK(e.rule() == "annotation.stage-gap");
    CHECK(e.pointer() == "/ops/1/pipelineStage");
    CHECK_THAT(e.message(), Contains("\"op1\" is in stage 2") && Contains("no op is in stage 1"));
  }
  SECTION("virtualGraph only, used as the stage: IPUs 0 and 2") {
    const InputError e = pipelining_error(chain_model({{0, 1e6}, {2, 1e6}}, 8), 3);
    CHECK(e.rule() == "annotation.stage-gap");
    CHECK(e.pointer() == "/ops/1/virtualGraph");
    CHECK_THAT(e.message(), Contains("virtualGraph (used as the stage)") && Contains("\"op1\""));
  }
  SECTION("a huge stage id fails at once, naming the whole gap") {
    const InputError e = pipelining_error(chain_model({{0, 1e6, 0}, {1, 1e6, 2000000000}}, 8));
    CHECK(e.rule() == "annotation.stage-gap");
    CHECK(e.pointer() == "/ops/1/pipelineStage");
    CHECK_THAT(e.message(), Contains("stages 1..1999999999"));
  }
}

TEST_CASE("annotation.stage-on-several-ipus: one stage, two virtual graphs (pipelined runs)", "[rules]") {
  const InputError e = pipelining_error(chain_model({{0, 1e6, 0}, {1, 1e6, 0}}, 8));
  CHECK(e.rule() == "annotation.stage-on-several-ipus");
  CHECK(e.pointer() == "/ops/1/virtualGraph");
  CHECK_THAT(e.message(), Contains("stage 0") && Contains("\"op0\"") && Contains("\"op1\""));
}

TEST_CASE("annotation.consumed-before-produced: a tensor read in an earlier stage (pipelined runs)", "[rules]") {
  SECTION("pipelineStage: op0 writes a1 in stage 1 (IPU1); op1 reads it in stage 0 (IPU0)") {
    const InputError e = pipelining_error(chain_model({{1, 1e6, 1}, {0, 1e6, 0}}, 8));
    CHECK(e.rule() == "annotation.consumed-before-produced");
    CHECK(e.pointer() == "/ops/1/inputs/0");
    CHECK_THAT(e.message(),
               Contains("\"a1\"") && Contains("\"op0\" in stage 1") && Contains("\"op1\" in the earlier stage 0"));
  }
  SECTION("virtualGraph only, going back to IPU0: 0 -> 1 -> 0 runs sharded") {
    const InputError e = pipelining_error(chain_model({{0, 1e6}, {1, 1e6}, {0, 1e6}}, 8));
    CHECK(e.rule() == "annotation.consumed-before-produced");
    CHECK(e.pointer() == "/ops/2/inputs/0");
    CHECK_THAT(e.message(), Contains("\"a2\"") && Contains("\"op1\" in stage 1") && Contains("\"op2\" in the earlier stage 0"));
  }
}

TEST_CASE("annotation.input-on-several-ipus: one host input feeds two IPUs (pipelined runs)", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][1]["inputs"] = {"a1", "x"};
  const InputError e = pipelining_error(m);
  CHECK(e.rule() == "annotation.input-on-several-ipus");
  CHECK(e.pointer() == "/ops/1");
  CHECK_THAT(e.message(), Contains("\"x\"") && Contains("\"op0\" on IPU 0") && Contains("\"op1\" on IPU 1"));
}

// executionPhase: PopART checks and uses it only under VirtualGraphMode::ExecutionPhases
// and clears it otherwise, so sharded and pipelined runs accept a model whose phases break
// a rule; the graph keeps the first broken rule, and runs warn that they ignore the phases.
TEST_CASE("executionPhase: counted, its rules kept, and named by the warning of runs that ignore it", "[rules]") {
  const auto phased = [](const std::vector<int>& phases) {
    Json m = chain_model({{0, 1e6}, {0, 1e6}, {1, 1e6}, {1, 1e6}}, 8);
    for (std::size_t i = 0; i < phases.size(); ++i)
      if (phases[i] >= 0) m["ops"][i]["executionPhase"] = phases[i];
    return model_from_json(m, kModelFile);
  };
  SECTION("four phases: counted, and a run says it ignores them") {
    const Model m = phased({0, 1, 2, 3});
    const ModelGraph g = build_graph(m);
    CHECK(g.phase_count == 4);
    CHECK(!g.phasing_refused);
    const auto warning = unused_phases_warning(m, g);
    REQUIRE(warning);
    CHECK_THAT(*warning, Contains("4 ops carry executionPhase (4 phases)") &&
                             Contains("VirtualGraphMode::ExecutionPhases") && Contains("virtualGraph and pipelineStage"));
    // The sharded and pipelined runs place the ops as without the annotation.
    const Scenario sc = make_scenario(Json::parse(model_to_json_text(m, "")), zero_overhead_config(2), kInference);
    CHECK_NOTHROW(check_scenario(sc, {Mode::Sharded, Mode::Pipelined}));
  }
  SECTION("annotation.mixed-execution-phase: on some ops only") {
    const ModelGraph g = build_graph(phased({0, 1, -1, 3}));
    REQUIRE(g.phasing_refused);
    CHECK(g.phasing_refused->rule() == "annotation.mixed-execution-phase");
    CHECK(g.phasing_refused->pointer() == "/ops/2");
    CHECK(g.phase_count == 0);
    CHECK_THAT(*unused_phases_warning(phased({0, 1, -1, 3}), g),
               Contains("[annotation.mixed-execution-phase]") && Contains("\"op2\""));
  }
  SECTION("annotation.phase-order: a tensor read in an earlier phase than the one making it") {
    const ModelGraph g = build_graph(phased({0, 2, 1, 3}));
    REQUIRE(g.phasing_refused);
    CHECK(g.phasing_refused->rule() == "annotation.phase-order");
    CHECK(g.phasing_refused->pointer() == "/ops/2/inputs/0");
    CHECK_THAT(g.phasing_refused->message(),
               Contains("\"a2\"") && Contains("\"op1\" in executionPhase 2") && Contains("\"op2\" in the earlier phase 1"));
  }
  SECTION("no phases: no warning") {
    const Model m = phased({});
    CHECK(!unused_phases_warning(m, build_graph(m)));
  }
}

TEST_CASE("tensor.bad-anchor: an anchor that no op produces", "[rules]") {
  SECTION("a host input") {
    Json m = two_ipu_chain();
    m["anchors"] = {"a2", "x"};
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.bad-anchor");
    CHECK(e.pointer() == "/anchors/1");
    CHECK_THAT(e.message(), Contains("\"x\""));
  }
  SECTION("an undeclared tensor") {
    Json m = two_ipu_chain();
    m["anchors"] = {"nowhere"};
    const InputError e = graph_error(m);
    CHECK(e.rule() == "tensor.bad-anchor");
    CHECK(e.pointer() == "/anchors/0");
    CHECK_THAT(e.message(), Contains("\"nowhere\""));
  }
}

TEST_CASE("model.empty: a model without ops", "[rules]") {
  const Json m = {{"tensors", Json::object()}, {"ops", Json::array()}};
  const InputError e = graph_error(m);
  CHECK(e.rule() == "model.empty");
  CHECK(e.file() == kModelFile);
  CHECK(e.pointer() == "/ops");
}

TEST_CASE("annotation.not-integer: virtualGraph as a string or a fraction", "[rules]") {
  Json m = two_ipu_chain();
  SECTION("the string \"1\"") { m["ops"][1]["virtualGraph"] = "1"; }
  SECTION("1.5") { m["ops"][1]["virtualGraph"] = 1.5; }
  SECTION("pipelineStage 1.0 (PopART stores an integer)") { m["ops"][1]["pipelineStage"] = 1.0; }
  const InputError e = error_of([&] { model_from_json(m, kModelFile); });
  CHECK(e.rule() == "annotation.not-integer");
  CHECK(e.file() == kModelFile);
  CHECK_THAT(e.pointer(), Contains("/ops/1/"));
  CHECK((e.pointer() == "/ops/1/virtualGraph" || e.pointer() == "/ops/1/pipelineStage"));
  CHECK_THAT(e.message(), Contains("\"op1\""));
}

TEST_CASE("annotation.negative: a negative virtualGraph or pipelineStage", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][0]["pipelineStage"] = 0;
  m["ops"][1]["pipelineStage"] = -1;
  const InputError e = error_of([&] { model_from_json(m, kModelFile); });
  CHECK(e.rule() == "annotation.negative");
  CHECK(e.pointer() == "/ops/1/pipelineStage");
  CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("-1"));
}

TEST_CASE("annotation.too-large: an id that does not fit an int is not silently truncated", "[rules]") {
  // 2^32 + 1 would become IPU 1 if cast to int.
  Json m = two_ipu_chain();
  m["ops"][1]["virtualGraph"] = 4294967297ULL;
  const InputError e = error_of([&] { model_from_json(m, kModelFile); });
  CHECK(e.rule() == "annotation.too-large");
  CHECK(e.pointer() == "/ops/1/virtualGraph");
  CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("4294967297"));
}

TEST_CASE("annotation.virtual-graph-out-of-range: an op on an IPU the system lacks", "[rules]") {
  const Json m = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}}, 8);
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Sharded});
  CHECK(e.rule() == "annotation.virtual-graph-out-of-range");
  CHECK(e.file() == kInlineModel);
  CHECK(e.pointer() == "/ops/2/virtualGraph");
  CHECK_THAT(e.message(), Contains("\"op2\"") && Contains("virtualGraph 2") && Contains("has 2 IPUs"));
  // The same model on three IPUs passes.
  CHECK_NOTHROW(check_scenario(make_scenario(m, zero_overhead_config(3), kInference), {Mode::Sharded}));
}

TEST_CASE("annotation.weight-on-several-ipus: one weight read on two IPUs", "[rules]") {
  Json m = two_ipu_chain();
  m["tensors"]["W"] = {{"shape", {8}}, {"kind", "weight"}};
  m["ops"][0]["inputs"] = {"x", "W"};
  m["ops"][1]["inputs"] = {"a1", "W"};
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Sharded});
  CHECK(e.rule() == "annotation.weight-on-several-ipus");
  CHECK(e.pointer() == "/ops/1");
  CHECK_THAT(e.message(), Contains("\"W\"") && Contains("\"op0\" on IPU 0") && Contains("\"op1\" on IPU 1"));
}

TEST_CASE("op.flops-underivable: an unknown op type without flops", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][1]["type"] = "MysteryOp";
  m["ops"][1].erase("flops");
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Sharded});
  CHECK(e.rule() == "op.flops-underivable");
  CHECK(e.file() == kInlineModel);
  CHECK(e.pointer() == "/ops/1");
  CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("MysteryOp") && Contains("\"flops\""));
}

TEST_CASE("op.flops-underivable: a known op type that lost its inputs (a run campaign's exit 3)", "[rules]") {
  Json m = two_ipu_chain();
  m["ops"][1]["type"] = "Softmax";
  m["ops"][1].erase("flops");
  m["ops"][1]["inputs"] = Json::array();
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Sharded});
  CHECK(e.rule() == "op.flops-underivable");
  CHECK(e.pointer() == "/ops/1");
  CHECK_THAT(e.message(), Contains("\"op1\"") && Contains("no input"));
}

TEST_CASE("scenario.unknown-cost-model", "[rules]") {
  Json ex = kInference;
  ex["costModel"] = "magic";
  const InputError e = scenario_error(two_ipu_chain(), zero_overhead_config(2), ex);
  CHECK(e.rule() == "scenario.unknown-cost-model");
  CHECK(e.file() == "test-scenario.json");
  CHECK(e.pointer() == "/execution/costModel");
  CHECK_THAT(e.message(), Contains("\"magic\"") && Contains("tile") && Contains("compute"));
}

TEST_CASE("scenario.unknown-schedule", "[rules]") {
  Json ex = kInference;
  SECTION("a name nobody registered") {
    ex["schedule"] = "zigzag";
    const InputError e = scenario_error(two_ipu_chain(), zero_overhead_config(2), ex);
    CHECK(e.rule() == "scenario.unknown-schedule");
    CHECK(e.pointer() == "/execution/schedule");
    CHECK_THAT(e.message(), Contains("\"zigzag\"") && Contains("popart"));
  }
  SECTION("\"sharded\" is a mode, not a pipeline schedule") {
    ex["schedule"] = "sharded";
    const InputError e = scenario_error(two_ipu_chain(), zero_overhead_config(2), ex, {Mode::Pipelined});
    CHECK(e.rule() == "scenario.unknown-schedule");
    CHECK(e.pointer() == "/execution/schedule");
    CHECK_THAT(e.message(), Contains("mode"));
  }
}

TEST_CASE("pipeline.needs-virtual-graphs: pipelining an unannotated model", "[rules]") {
  Json m = two_ipu_chain();
  for (auto& op : m["ops"]) op.erase("virtualGraph");
  // Sharded is fine (all on IPU 0); pipelined is not.
  CHECK_NOTHROW(check_scenario(make_scenario(m, zero_overhead_config(2), kInference), {Mode::Sharded}));
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Pipelined});
  CHECK(e.rule() == "pipeline.needs-virtual-graphs");
  CHECK(e.file() == kInlineModel);
  CHECK(e.pointer() == "/ops");
  CHECK_THAT(e.message(), Contains("virtualGraph"));
}

TEST_CASE("pipeline.single-ipu: every op on one virtual graph", "[rules]") {
  const Json m = chain_model({{0, 1e6}, {0, 1e6}}, 8);
  const InputError e = scenario_error(m, zero_overhead_config(2), kInference, {Mode::Pipelined});
  CHECK(e.rule() == "pipeline.single-ipu");
  CHECK(e.pointer() == "/ops");
  CHECK_THAT(e.message(), Contains("virtualGraph 0"));
}

TEST_CASE("pipeline.depth: G >= S, on both sides of the boundary", "[rules]") {
  const auto pipelined = [](const Json& model, int ipus, const Json& execution) {
    const Scenario sc = make_scenario(model, zero_overhead_config(ipus), execution);
    const Plan plan = make_plan(sc, build_graph(sc.model));
    return make_schedule(Mode::Pipelined, sc, plan);
  };
  SECTION("inference: batchesPerStep >= P") {
    const Json m = chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}}, 8);
    const Json too_shallow = {{"batchesPerStep", 2}, {"costModel", "compute"}};
    const InputError e = error_of([&] { pipelined(m, 3, too_shallow); });
    CHECK(e.rule() == "pipeline.depth");
    CHECK(e.file() == "test-scenario.json");
    CHECK(e.pointer() == "/execution/batchesPerStep");
    CHECK_THAT(e.message(), Contains("batchesPerStep >= S: 2 < 3"));
    const Schedule ok = pipelined(m, 3, {{"batchesPerStep", 3}, {"costModel", "compute"}});
    CHECK(ok.cycles == 3 + 3 - 1);
    CHECK(ok.micro_batches == 3);
  }
  SECTION("training on 2 IPUs: G = 2 fails, G = 3 = 2P-1 passes") {
    const Json m = two_ipu_chain();
    const Json g2 = {{"training", true}, {"gradientAccumulation", 2}, {"costModel", "compute"}};
    const InputError e = error_of([&] { pipelined(m, 2, g2); });
    CHECK(e.rule() == "pipeline.depth");
    CHECK(e.pointer() == "/execution/gradientAccumulation");
    CHECK_THAT(e.message(), Contains("G >= S: 2 < 3") && Contains("2*2-1"));
    const Schedule ok = pipelined(m, 2, {{"training", true}, {"gradientAccumulation", 3}, {"costModel", "compute"}});
    CHECK(ok.cycles == 3 + 3 - 1);
    CHECK(ok.micro_batches == 3);
  }
  SECTION("training without gradient accumulation (G = 1): batchesPerStep >= S, one fill and flush per step") {
    // PopART's PipelineInfo: mainCycles = batchesPerStep - (S-1) when accumulation is off.
    const Json m = two_ipu_chain();
    for (const int batches : {1, 2}) {
      const Json shallow = {{"training", true}, {"batchesPerStep", batches}, {"costModel", "compute"}};
      const InputError e = error_of([&] { pipelined(m, 2, shallow); });
      CHECK(e.rule() == "pipeline.depth");
      CHECK(e.pointer() == "/execution/batchesPerStep");
      CHECK_THAT(e.message(), Contains("batchesPerStep >= S: " + std::to_string(batches) + " < 3") &&
                                  Contains("without gradient accumulation (G = 1) the depth is batchesPerStep"));
    }
    for (const int batches : {3, 5}) {
      const Schedule ok = pipelined(m, 2, {{"training", true}, {"batchesPerStep", batches}, {"costModel", "compute"}});
      CHECK(ok.cycles == batches + 3 - 1);
      CHECK(ok.micro_batches == batches);
    }
    // With accumulation each of the batchesPerStep weight updates has its own fill and flush.
    const Schedule accumulating =
        pipelined(m, 2, {{"training", true}, {"gradientAccumulation", 3}, {"batchesPerStep", 5}, {"costModel", "compute"}});
    CHECK(accumulating.cycles == 3 + 3 - 1);
    CHECK(accumulating.micro_batches == 15);
  }
  SECTION("the rule counts stages after merging") {
    // Stages 0 and 1 on IPU0 merge: S = 2, so batchesPerStep 2 is deep enough.
    const Json m = chain_model({{0, 1e6, 0}, {0, 1e6, 1}, {1, 1e6, 2}}, 8);
    const Schedule ok = pipelined(m, 2, {{"batchesPerStep", 2}, {"costModel", "compute"}});
    CHECK(ok.cycles == 3);
    const InputError e = error_of([&] { pipelined(m, 2, {{"batchesPerStep", 1}, {"costModel", "compute"}}); });
    CHECK(e.rule() == "pipeline.depth");
    CHECK_THAT(e.message(), Contains("1 < 2"));
  }
  SECTION("sharded runs have no depth rule") {
    const Json m = two_ipu_chain();
    const Json g1 = {{"training", true}, {"gradientAccumulation", 1}, {"costModel", "compute"}};
    CHECK_NOTHROW(check_scenario(make_scenario(m, zero_overhead_config(2), g1), {Mode::Sharded}));
  }
}

TEST_CASE("link.disconnected: an IPU the links do not reach", "[rules]") {
  Json config = zero_overhead_config(3);
  config["links"] = {{{"ipus", {0, 1}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}}};
  SECTION("a three-IPU system with one link") {
    const HardwareConfig hw = hardware_from_json(config, "rules-config.json");
    const InputError e = error_of([&] { compute_routes(hw); });
    CHECK(e.rule() == "link.disconnected");
    CHECK(e.file() == "rules-config.json");
    CHECK(e.pointer() == "/links");
    CHECK_THAT(e.message(), Contains("IPU 0 cannot reach IPU 2"));
  }
  SECTION("a huge ipuCount with few links fails fast") {
    config["ipuCount"] = 1000000;
    const HardwareConfig hw = hardware_from_json(config, "rules-config.json");
    const InputError e = error_of([&] { compute_routes(hw); });
    CHECK(e.rule() == "link.disconnected");
    CHECK_THAT(e.message(), Contains("IPU 0 cannot reach IPU 2"));
  }
  SECTION("checked before simulating a scenario") {
    const InputError e = scenario_error(two_ipu_chain(), config, kInference, {Mode::Sharded});
    CHECK(e.rule() == "link.disconnected");
    CHECK(e.file() == "test-scenario.json#/config");
  }
}

TEST_CASE("link.bad-ends: a link must join two existing, different IPUs", "[rules]") {
  Json config = zero_overhead_config(2);
  std::string expected;
  SECTION("a loop") {
    config["links"][0]["ipus"] = {1, 1};
    expected = "got [1,1]";
  }
  SECTION("one end") {
    config["links"][0]["ipus"] = {0};
    expected = "got [0]";
  }
  SECTION("an IPU beyond ipuCount") {
    config["links"][0]["ipus"] = {0, 5};
    expected = "IPU 5 does not exist (ipuCount is 2)";
  }
  const InputError e = error_of([&] { hardware_from_json(config, "rules-config.json"); });
  CHECK(e.rule() == "link.bad-ends");
  CHECK(e.file() == "rules-config.json");
  CHECK(e.pointer() == "/links/0/ipus");
  CHECK_THAT(e.message(), Contains(expected));
}

TEST_CASE("link.duplicate: two links between the same IPUs", "[rules]") {
  Json config = zero_overhead_config(3);
  config["links"].push_back({{"ipus", {1, 0}}, {"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}});
  const InputError e = error_of([&] { hardware_from_json(config, "rules-config.json"); });
  CHECK(e.rule() == "link.duplicate");
  CHECK(e.pointer() == "/links/3");
  CHECK_THAT(e.message(), Contains("IPUs 1 and 0"));
}

TEST_CASE("without pipelineStage, each op's stage is its virtualGraph", "[rules][positive]") {
  const ModelGraph g = build_graph(model_from_json(chain_model({{0, 1e6}, {0, 1e6}, {1, 1e6}, {2, 1e6}}, 8), kModelFile));
  CHECK(g.has_virtual_graphs);
  CHECK_FALSE(g.has_pipeline_stages);
  CHECK(g.ipu_of_op == std::vector<int>{0, 0, 1, 2});
  CHECK(g.stage_of_op == std::vector<int>{0, 0, 1, 2});
  CHECK(g.stage_count == 3);
  // Unannotated: everything on IPU 0, stage 0.
  Json bare = two_ipu_chain();
  for (auto& op : bare["ops"]) op.erase("virtualGraph");
  const ModelGraph b = build_graph(model_from_json(bare, kModelFile));
  CHECK_FALSE(b.has_virtual_graphs);
  CHECK(b.ipu_of_op == std::vector<int>{0, 0});
  CHECK(b.stage_of_op == std::vector<int>{0, 0});
  CHECK(b.stage_count == 1);
}

TEST_CASE("consecutive stages on one IPU merge: stages 0,1 on IPU0 and 2 on IPU1 give 2 stages", "[rules][positive]") {
  const Json m = chain_model({{0, 1e6, 0}, {0, 1e6, 1}, {1, 1e6, 2}}, 8);
  const Scenario sc = make_scenario(m, zero_overhead_config(2), kInference);
  const ModelGraph g = build_graph(sc.model);
  CHECK(g.stage_count == 3);
  const Plan plan = make_plan(sc, g);
  REQUIRE(plan.stage_count() == 2);
  CHECK(plan.forward_stage_count == 2);
  CHECK(plan.stages[0].ipu == 0);
  CHECK(plan.stages[0].annotated_stages == std::vector<int>{0, 1});
  CHECK(plan.stages[0].ops == std::vector<std::size_t>{0, 1});
  CHECK(plan.stages[1].ipu == 1);
  CHECK(plan.stages[1].annotated_stages == std::vector<int>{2});
  CHECK(plan.stages[1].ops == std::vector<std::size_t>{2});
  // op0 and op1 take 1 ms each at 1 GFLOP/s (micro-batch 1): the merged stage sums them.
  CHECK(plan.stages[0].forward_seconds == Approx(2e-3).epsilon(1e-12));
  // One copy, IPU0 -> IPU1, carrying a2 (8 float32 = 32 B); none between the merged stages.
  REQUIRE(plan.copies.size() == 1);
  CHECK(plan.copies[0].tensors == std::vector<std::string>{"a2"});
  CHECK(plan.copies[0].bytes == 32);
  // A stage that wraps back to IPU0 (BERT) does not merge: 0 (IPU0), 1 (IPU1), 2 (IPU0).
  const Scenario wrap = make_scenario(chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 8),
                                      zero_overhead_config(2), kInference);
  const Plan wrapped = make_plan(wrap, build_graph(wrap.model));
  CHECK(wrapped.stage_count() == 3);
  CHECK(wrapped.ipus.size() == 2);
}

TEST_CASE("pipeline.one-stage-per-ipu: asynchronous schedules need one forward stage per IPU", "[rules]") {
  // BERT-style wrap: stage 0 on IPU0, 1 on IPU1, 2 back on IPU0.
  const Json wrap = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 8);
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    INFO(schedule);
    Json ex = kInference;
    ex["schedule"] = schedule;
    const InputError e = scenario_error(wrap, zero_overhead_config(2), ex, {Mode::Pipelined});
    CHECK(e.rule() == "pipeline.one-stage-per-ipu");
    CHECK(e.file() == kInlineModel);
    CHECK(e.pointer() == "/ops");
    CHECK_THAT(e.message(), Contains(schedule) && Contains("IPU 0"));
    // Without the wrap it is fine.
    CHECK_NOTHROW(check_scenario(make_scenario(chain_model({{0, 1e6}, {1, 1e6}, {2, 1e6}}, 8),
                                               zero_overhead_config(3), ex),
                                 {Mode::Pipelined}));
  }
}

TEST_CASE("pipeline.interleaved-shared-ipu: TF Interleaved cannot train with several stages on an IPU", "[rules]") {
  const Json wrap = chain_model({{0, 1e6, 0}, {1, 1e6, 1}, {0, 1e6, 2}}, 8);
  const Json ex = {{"training", true}, {"gradientAccumulation", 6}, {"costModel", "compute"}, {"schedule", "tf-interleaved"}};
  const InputError e = scenario_error(wrap, zero_overhead_config(2), ex, {Mode::Pipelined});
  CHECK(e.rule() == "pipeline.interleaved-shared-ipu");
  CHECK(e.pointer() == "/ops");
  CHECK_THAT(e.message(), Contains("IPU 0 holds 2"));
  // tf-grouped accepts the same model (G = 6 is a multiple of 2N = 6).
  Json grouped = ex;
  grouped["schedule"] = "tf-grouped";
  CHECK_NOTHROW(check_scenario(make_scenario(wrap, zero_overhead_config(2), grouped), {Mode::Pipelined}));
}

TEST_CASE("pipeline.depth for the TensorFlow schedules: multiples of N (2N when Grouped trains)", "[rules]") {
  const Json m = two_ipu_chain();  // N = 2
  const auto depth_rule = [&](const std::string& schedule, bool training, int depth) {
    Json ex = {{"training", training}, {"costModel", "compute"}, {"schedule", schedule}};
    ex[training ? "gradientAccumulation" : "batchesPerStep"] = depth;
    return rule_of([&] { check_scenario(make_scenario(m, zero_overhead_config(2), ex), {Mode::Pipelined}); });
  };
  // Grouped, training: a multiple of, and at least, 2N = 4.
  CHECK(depth_rule("tf-grouped", true, 3) == "pipeline.depth");
  CHECK(depth_rule("tf-grouped", true, 4) == "");
  CHECK(depth_rule("tf-grouped", true, 6) == "pipeline.depth");
  CHECK(depth_rule("tf-grouped", true, 8) == "");
  // Grouped, inference: N = 2.
  CHECK(depth_rule("tf-grouped", false, 1) == "pipeline.depth");
  CHECK(depth_rule("tf-grouped", false, 2) == "");
  // Interleaved: a multiple of N.
  CHECK(depth_rule("tf-interleaved", false, 3) == "pipeline.depth");
  CHECK(depth_rule("tf-interleaved", false, 4) == "");
  CHECK(depth_rule("tf-interleaved", true, 2) == "");
  // Sequential runs like sharding: any depth.
  CHECK(depth_rule("tf-sequential", true, 1) == "");

  Json ex = {{"training", true}, {"gradientAccumulation", 6}, {"costModel", "compute"}, {"schedule", "tf-grouped"}};
  const InputError e = scenario_error(m, zero_overhead_config(2), ex, {Mode::Pipelined});
  CHECK(e.pointer() == "/execution/gradientAccumulation");
  CHECK_THAT(e.message(), Contains("2N = 4") && Contains("got 6"));
}

TEST_CASE("scenario.no-streaming-memory: optimizer state off chip on a system without it", "[rules]") {
  const Json ex = {{"training", true},
                   {"gradientAccumulation", 3},
                   {"costModel", "compute"},
                   {"optimizer", {{"type", "adam"}, {"stateLocation", "streaming-memory"}}}};
  Json m = two_ipu_chain();
  m["tensors"]["W"] = {{"shape", {8}}, {"kind", "weight"}};
  m["ops"][0]["inputs"] = {"x", "W"};
  const InputError e = scenario_error(m, zero_overhead_config(2), ex, {Mode::Sharded});
  CHECK(e.rule() == "scenario.no-streaming-memory");
  CHECK(e.file() == "test-scenario.json");
  CHECK(e.pointer() == "/execution/optimizer/stateLocation");
  CHECK_THAT(e.message(), Contains("\"test system\"") && Contains("streamingMemory"));
  Json config = zero_overhead_config(2);
  config["streamingMemory"] = {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}};
  CHECK_NOTHROW(check_scenario(make_scenario(m, config, ex), {Mode::Sharded}));
}

TEST_CASE("scenario.not-enough-ipus: replicas x pipeline width beyond the system", "[rules]") {
  Json ex = kInference;
  ex["replicas"] = 2;  // 2 replicas of a 2-IPU pipeline: 4 IPUs
  const InputError e = scenario_error(two_ipu_chain(), zero_overhead_config(3), ex, {Mode::Sharded});
  CHECK(e.rule() == "scenario.not-enough-ipus");
  CHECK(e.file() == "test-scenario.json");
  CHECK(e.pointer() == "/execution/replicas");
  CHECK_THAT(e.message(), Contains("need 4 IPUs") && Contains("\"test system\" has 3"));
  // What to do: 3 IPUs hold one replica of the 2-IPU pipeline.
  CHECK_THAT(e.message(), Contains("give replicas 1 or less, or choose a larger system"));
  CHECK_NOTHROW(check_scenario(make_scenario(two_ipu_chain(), zero_overhead_config(4), ex), {Mode::Sharded}));
  SECTION("a count beyond an int is refused by its range, not truncated (2^32 + 2 would become 2)") {
    ex["replicas"] = 4294967298LL;
    const InputError big = scenario_error(two_ipu_chain(), zero_overhead_config(4), ex, {Mode::Sharded});
    CHECK(big.rule() == "value.too-large");
    CHECK(big.pointer() == "/execution/replicas");
    CHECK_THAT(big.message(), Contains("4294967298"));
  }
}

TEST_CASE("scenario.bad-placement: placement must list each replica's IPUs once, on real IPUs", "[rules]") {
  Json ex = kInference;
  ex["replicas"] = 2;
  std::string pointer, expected;
  SECTION("wrong length") {
    ex["placement"] = {0, 1, 2};
    pointer = "/execution/placement";
    expected = "lists 3 IPUs";
  }
  SECTION("an IPU beyond the system") {
    ex["placement"] = {0, 7, 2, 3};
    pointer = "/execution/placement/1";
    expected = "IPU 7 does not exist";
  }
  SECTION("an IPU placed twice") {
    ex["placement"] = {3, 2, 3, 0};
    pointer = "/execution/placement/2";
    expected = "IPU 3 is placed twice";
  }
  SECTION("an IPU id beyond an int is not truncated (2^32 would become IPU 0)") {
    ex["placement"] = {4294967296LL, 1, 2, 3};
    pointer = "/execution/placement/0";
    expected = "got 4294967296; must lie in [0, 999999]";
  }
  const InputError e = scenario_error(two_ipu_chain(), zero_overhead_config(4), ex, {Mode::Sharded});
  CHECK(e.rule() == "scenario.bad-placement");
  CHECK(e.pointer() == pointer);
  CHECK_THAT(e.message(), Contains(expected));
  // A valid permutation passes.
  ex["placement"] = {3, 2, 1, 0};
  CHECK_NOTHROW(check_scenario(make_scenario(two_ipu_chain(), zero_overhead_config(4), ex), {Mode::Sharded}));
}
