// The general lowering of the what-if schedules (sim/schedule/order_lowering.cpp): stages
// sharing an IPU, the V placement, periodic programs. With unit costs and links that cost
// nothing the engine's step is the order evaluator's makespan, the golden table of
// docs/reference/pipeline-schedules.md where the placement is the reference's.
#include <catch2/catch.hpp>

#include <set>

#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/memory/memory.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/order_stash.hpp"
#include "sim/schedule/program_cursor.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3;


// Every op costs F = B = W = `f` (its backward 2f, of which f is W); the plan's stage times
// are the sums over their ops, as make_plan adds them.
void unit_costs(Plan& plan, double f) {
  for (OpTiming& t : plan.op_timings) {
    t.forward = OpCost{};
    t.forward.compute_cycles = f * plan.clock_hz;
    t.backward = OpCost{};
    t.backward.compute_cycles = 2 * f * plan.clock_hz;
    t.backward.weight_gradient_cycles = f * plan.clock_hz;
  }
  for (PlanStage& st : plan.stages) {
    const double n = static_cast<double>(st.ops.size());
    st.forward_seconds = st.backward && st.id != plan.loss_stage ? 0 : n * f;
    const bool has_backward = st.backward || st.id == plan.loss_stage;
    st.backward_seconds = has_backward ? 2 * n * f : 0;
    st.weight_gradient_seconds = has_backward ? n * f : 0;
    st.recompute_seconds = st.backward ? n * f : 0;
  }
}

struct Lowered {
  Scenario scenario;
  Plan plan;
  Schedule schedule;
};

Lowered lower(const Json& model, const std::string& schedule, int G, double unit = 0) {
  Lowered l{make_scenario(model, zero_overhead_config(4, 1e15), pipelined_training(schedule, G)), {}, {}};
  l.plan = make_plan(l.scenario, build_graph(l.scenario.model));
  if (unit > 0) unit_costs(l.plan, unit);
  l.schedule = make_schedule(Mode::Pipelined, l.scenario, l.plan);
  return l;
}

double engine_step(const Lowered& l) { return run_engine(l.schedule, l.scenario.hardware).end_time; }

// One op per annotated stage (pipelineStage k), on the given IPUs, 1 ms forward each.
Json staged_chain(const std::vector<int>& ipus) {
  std::vector<ChainOp> ops;
  for (std::size_t k = 0; k < ipus.size(); ++k) ops.push_back({ipus[k], 1e6, static_cast<int>(k)});
  return chain_model(ops, 250);
}

const Json four = staged_chain({0, 1, 2, 3});
const Json interleaved = staged_chain({0, 1, 2, 3, 0, 1, 2, 3});
const Json v_shape = staged_chain({0, 1, 2, 3, 3, 2, 1, 0});  // the plan merges stages 3 and 4
const Json heads_back = staged_chain({0, 1, 2, 3, 0});        // BERT's and GPT-2's placement

// The program as it runs, every repeat expanded.
Schedule unrolled(Schedule s) {
  for (Program& p : s.programs) {
    std::vector<Step> steps;
    for (ProgramCursor c(p); !c.done(); c.advance()) {
      steps.push_back(c.step());
      steps.back().micro_batch = c.micro_batch();
    }
    p.steps = std::move(steps);
    p.repeats.clear();
  }
  return s;
}

} // namespace

TEST_CASE("with unit costs the engine's step is the golden table's makespan, V placement included", "[schedule][what-if]") {
  // docs/reference/pipeline-schedules.md, p = 4, m = 8, F = B = W = 1 a stage (a chunk 1/2).
  const struct {
    const char* name;
    const Json* model;
    double unit;
    double makespan;
  } table[] = {{"zb-h1", &four, 1, 27},        {"zb-h2", &four, 1, 27},       {"interleaved-1f1b", &interleaved, 0.5, 28.5},
               {"zb-v", &v_shape, 0.5, 25.5},  {"v-half", &v_shape, 0.5, 26.5}, {"v-min", &v_shape, 0.5, 29.5},
               {"dualpipev", &v_shape, 0.5, 25.5}};
  for (const auto& row : table) {
    INFO(row.name);
    const Lowered l = lower(*row.model, row.name, 8, row.unit * ms);
    // Copies of 1 kB at 1e15 B/s add picoseconds.
    CHECK(engine_step(l) == Approx(row.makespan * ms).epsilon(1e-8));
  }
  // The V's merged middle stage (annotated stages 3 and 4, one plan stage) runs as its two parts.
  const Lowered v = lower(v_shape, "zb-v", 8, 0.5 * ms);
  CHECK(v.plan.forward_stage_count == 7);
  CHECK(v.schedule.stash_depth.size() == 7u);
}

TEST_CASE("DualPipe runs each stage twice, the reverse pipeline mirrored, in the golden makespan", "[schedule][what-if]") {
  // docs/reference/pipeline-schedules.md, p = 4, m = 8, F = B = W = 1 a stage: makespan 25.
  const Lowered l = lower(four, "dualpipe", 8, 1 * ms);
  CHECK(engine_step(l) == Approx(25 * ms).epsilon(1e-8));
  // schedule-orders-p4-m8.txt, s0: "F0 F1 F2 F4 B4 W4 F5 (F3&BW5) (F6&BW0) ...": stage 0 holds
  // F0..F3 (4) before BW0; the mirrored stage 3 on IPU 0 holds one (F4 B4 W4 F5 BW5 ...).
  // Per IPU 4+1, 3+2, 2+3, 1+4: the golden peak of 5 on every device.
  CHECK(l.schedule.stash_depth == std::vector<int>{4, 3, 2, 1});
  REQUIRE(l.schedule.mirrors.size() == 4u);
  for (int d = 0; d < 4; ++d) {
    const StageMirror& mirror = l.schedule.mirrors[static_cast<std::size_t>(d)];
    CHECK(mirror.stage == 3 - d);
    CHECK(mirror.ipu == d);
    CHECK(mirror.stash_depth + l.schedule.stash_depth[static_cast<std::size_t>(d)] == 5);
  }
  // Each IPU sends its mirrored stage's activations the other way round the ring: IPU 3 runs
  // stage 0 of the reverse pipeline and sends to IPU 2, as IPU 0 sends to IPU 1 for the forward one.
  std::set<std::pair<int, int>> sends;
  for (const Program& p : l.schedule.programs)
    for (const Step& s : p.steps)
      if (s.kind == StepKind::Send)
        for (const Transfer& t : s.transfers) sends.insert({t.src_ipu, t.dst_ipu});
  CHECK(sends == std::set<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 2}, {2, 1}, {1, 0}});
}

TEST_CASE("DualPipe holds two copies of the weights and sums their gradients before the update", "[schedule][what-if]") {
  // The seed MLP: a Gemm on each of two IPUs. Under DualPipe each IPU holds both Gemms' weights.
  const std::string mlp = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/mlp-training.json";
  const Simulation one = simulate(load_scenario(mlp, {{"execution.schedule", "1f1b"}}), {Mode::Pipelined}, {});
  const Simulation dual = simulate(load_scenario(mlp, {{"execution.schedule", "dualpipe"}}), {Mode::Pipelined}, {});
  auto weights = [](const Simulation& s, std::size_t ipu) {
    for (const MemoryCategory& c : s.runs.at(0).metrics.memory.ipus.at(ipu).categories)
      if (c.name == "weights") return c.bytes;
    return -1.0;
  };
  const double both = weights(one, 0) + weights(one, 1);
  CHECK(both > 0);
  CHECK(weights(dual, 0) == Approx(both).epsilon(1e-12));
  CHECK(weights(dual, 1) == Approx(both).epsilon(1e-12));
  // One gradient sum per IPU, to its partner, of both stages' weights (fp32 here: 4 bytes each).
  const Plan& plan = dual.plan;
  const double weight_bytes = plan.ipus.at(0).weight_bytes + plan.ipus.at(1).weight_bytes;
  int sums = 0;
  for (const Program& p : dual.runs.at(0).schedule.programs)
    for (const Step& s : p.steps)
      if (s.kind == StepKind::Exchange && s.pass == Pass::AllReduce)
        for (const Transfer& t : s.transfers)
          if (t.src_ipu == p.ipu) {
            ++sums;
            CHECK(t.dst_ipu == 1 - p.ipu);
            CHECK(t.bytes == Approx(weight_bytes).epsilon(1e-12));
          }
  CHECK(sums == 2);
}

TEST_CASE("a V whose middle stage is one annotated stage runs it as chunk 0, its chunk 1 empty", "[schedule][what-if]") {
  // 7 annotated stages, stage 3 alone on IPU 3: the V's parts 3 and 4 are that stage and nothing.
  const Json v7 = staged_chain({0, 1, 2, 3, 2, 1, 0});
  OpTimes times = OpTimes::uniform(4, 2, 1 * ms, 1 * ms, 1 * ms);
  times.f[3][1] = times.b[3][1] = times.w[3][1] = 0;
  for (const char* name : {"zb-v", "v-half", "dualpipev"}) {
    INFO(name);
    const Lowered l = lower(v7, name, 8, 1 * ms);
    const OrderTiming t = evaluate(make_order(name, 4, 2, 8, times), times);
    CHECK(engine_step(l) == Approx(t.makespan).epsilon(1e-8));
    // IPU 3 computes 8 micro-batches of one stage's F, B, W; the others two stages'.
    CHECK(t.busy_seconds[3] == Approx(24 * ms));
    CHECK(t.busy_seconds[0] == Approx(48 * ms));
  }
}

TEST_CASE("stages sharing an IPU: each IPU runs its parts' ops in the evaluator's order", "[schedule][what-if]") {
  for (const char* name : {"zb-h1", "zb-h2", "1f1b"}) {
    INFO(name);
    const Lowered l = lower(heads_back, name, 8, 1 * ms);
    const OpTimes unit = OpTimes::uniform(5, 1, 1 * ms, 1 * ms, 1 * ms);
    const ScheduleOrder order = make_order(name, 5, 1, 8, unit, 0.5);  // W is half a backward here
    const OrderTiming shared = evaluate(order, unit, 0, {0, 1, 2, 3, 0});
    // IPU 0 computes stages 0 and 4 (F, B, W of 8 micro-batches each) one op at a time.
    CHECK(shared.makespan >= 2 * 8 * 3 * ms);
    CHECK(shared.makespan > evaluate(order, unit).makespan);  // the order alone overlaps them
    CHECK(engine_step(l) == Approx(shared.makespan).epsilon(1e-8));
    // 1F1B holds 5-k for stage k of the 5 parts; ZB-H1's limit is that, ZB-H2's twice that.
    for (std::size_t k = 0; k < 5; ++k) {
      if (name[1] == 'f') CHECK(l.schedule.stash_depth[k] == static_cast<int>(5 - k));
      CHECK(l.schedule.stash_depth[k] <= (std::string(name) == "zb-h2" ? 10 : 5));
    }
  }
}

TEST_CASE("a V schedule refuses a placement that is not a V, naming what to annotate", "[schedule][what-if]") {
  for (const char* name : {"zb-v", "v-half", "v-min", "dualpipev"}) {
    INFO(name);
    const InputError e = error_of([&] { lower(heads_back, name, 8); });
    CHECK(e.rule() == "pipeline.v-placement");
    CHECK_THAT(e.message(), Catch::Matchers::Contains("stage j on the IPU of stage 2p-1-j"));
    CHECK(rule_of([&] { lower(four, name, 8); }) == "pipeline.v-placement");
  }
  CHECK(rule_of([&] { lower(heads_back, "interleaved-1f1b", 10); }) == "pipeline.virtual-stages");
}

TEST_CASE("periodic programs run bit for bit as their unrolled orders", "[schedule][what-if]") {
  for (const char* name : {"zb-h1", "zb-h2", "interleaved-1f1b", "zb-v", "v-half", "v-min", "dualpipev"}) {
    INFO(name);
    const Json& model = std::string(name) == "interleaved-1f1b" ? interleaved
                        : name[0] == 'z' && name[3] == 'h'      ? heads_back
                                                                : v_shape;
    const Lowered l = lower(model, name, 96);
    const Schedule flat = unrolled(l.schedule);
    std::size_t template_steps = 0, steps = 0;
    for (std::size_t i = 0; i < flat.programs.size(); ++i)
      template_steps += l.schedule.programs[i].steps.size(), steps += flat.programs[i].steps.size();
    CHECK(template_steps * 3 < steps);  // the steady phase is a loop
    // Simulated in full, the loop runs the unrolled order's steps: the same figures, bit for bit.
    const RunLog looped = run_engine(l.schedule, l.scenario.hardware, EngineOptions{false});
    const RunLog full = run_engine(flat, l.scenario.hardware, EngineOptions{false});
    CHECK(looped.end_time == full.end_time);
    REQUIRE(looped.events.size() == full.events.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < full.events.size(); ++i)
      differ += looped.events[i].start != full.events[i].start || looped.events[i].end != full.events[i].end;
    CHECK(differ == 0);
    // With the steady state, the engine skips periods of the loop (to its own 1e-9 rounding;
    // ZB-H's greedy order repeats every 15 micro-batches here, so it skips fewer at G = 96).
    const RunMetrics fast = simulate(l.scenario, {Mode::Pipelined}, {.keep_log = false}).runs.at(0).metrics;
    CHECK(fast.simulation.steps_simulated < fast.simulation.steps_total);
    CHECK(fast.step_time_s == Approx(full.end_time).epsilon(1e-9));
  }
}

namespace {

// An order extended from shallower builds against the same order built in full: the same
// stash depths and, unrolled, the same steps on every IPU.
void check_same_programs(const Schedule& extended, const Schedule& full) {
  CHECK(extended.stash_depth == full.stash_depth);
  const Schedule a = unrolled(extended), b = unrolled(full);
  REQUIRE(a.programs.size() == b.programs.size());
  for (std::size_t i = 0; i < a.programs.size(); ++i) {
    REQUIRE(a.programs[i].steps.size() == b.programs[i].steps.size());
    std::size_t differ = 0;
    for (std::size_t k = 0; k < a.programs[i].steps.size(); ++k) {
      const Step& x = a.programs[i].steps[k];
      const Step& y = b.programs[i].steps[k];
      differ += x.kind != y.kind || x.stage != y.stage || x.micro_batch != y.micro_batch || x.pass != y.pass ||
                x.seconds != y.seconds || x.transfers.size() != y.transfers.size();
    }
    CHECK(differ == 0);
  }
}

} // namespace

TEST_CASE("past the probe depth a periodic order is extended, not built: the same programs as built in full", "[schedule][what-if]") {
  for (const char* name : {"zb-h1", "zb-h2", "interleaved-1f1b", "zb-v", "v-half", "v-min", "dualpipev", "1f1b"}) {
    INFO(name);
    const Json& model = std::string(name) == "interleaved-1f1b" ? interleaved
                        : name[0] == 'z' && name[3] == 'h'      ? heads_back
                        : std::string(name) == "1f1b"           ? heads_back
                                                                : v_shape;
    // Unequal stages (op k costs k+1 units), so the greedy orders are not the unit-slot ones.
    Lowered l = lower(model, name, 1000);
    for (OpTiming& t : l.plan.op_timings) t.backward.weight_gradient_cycles = t.backward.compute_cycles / 3;
    for (PlanStage& st : l.plan.stages) st.weight_gradient_seconds = st.backward_seconds / 3;
    const ScheduleContext ctx{l.scenario, l.plan, 0};
    // G = 1000 against a probe depth of 96 (extended past 3 x 96): built at a = 96 + (1000 - 96)
    // mod S and about 2a, and extended where the two agree. (1F1B with the head back on IPU 0 drifts until micro-batch
    // ~170 here: its 2a disagrees, and it is built in full.)
    const Schedule extended = build_from_order(ctx, 96);
    const Schedule full = build_from_order(ctx, 1 << 30);
    check_same_programs(extended, full);
  }
}

TEST_CASE("DualPipe's two pipelines are extended past the probe depth too: the same programs as built in full",
          "[schedule][what-if]") {
  // Its reverse pipeline's micro-batches are numbered from G/2, so they move with G; numbered
  // depth-free (interleaved), the order at 64 + r and about twice that extends to G (past
  // three probe depths: 192).
  for (const int G : {200, 1000, 1002}) {
    INFO("G = " << G);
    const Lowered dual = lower(four, "dualpipe", G);
    const ScheduleContext ctx{dual.scenario, dual.plan, 0};
    const Schedule extended = build_from_order(ctx, 64);
    const Schedule full = build_from_order(ctx, 1 << 30);
    check_same_programs(extended, full);
  }
  // An order that is not extended is built in full, at most 2^18 micro-batches per step (a
  // probe deeper than G stands in for an order with no steady phase).
  const Lowered deep = lower(four, "dualpipe", (1 << 18) + 2);
  const ScheduleContext deep_ctx{deep.scenario, deep.plan, 0};
  CHECK(rule_of([&] { build_from_order(deep_ctx, 1 << 30); }) == "pipeline.what-if-depth");
}

TEST_CASE("a periodic what-if order runs at G = 10^6 in memory that does not grow with G", "[schedule][what-if]") {
  // Past 2^18 micro-batches an order built in full is refused; extended, it is not.
  const Lowered l = lower(heads_back, "zb-h1", 1000000, 1 * ms);
  std::size_t steps = 0;
  for (const Program& p : l.schedule.programs) steps += p.steps.size();
  CHECK(steps < 2000);
  // 1F1B-like: the last micro-batch's ops are numbered from G.
  std::int64_t last = 0;
  for (const Program& p : l.schedule.programs)
    for (const Step& s : p.steps) last = std::max(last, s.micro_batch);
  CHECK(last == 999999);
}

TEST_CASE("BERT-Large with its heads back on IPU 0 runs the zero-bubble schedules", "[schedule][what-if][bert]") {
  for (const char* name : {"zb-h1", "zb-h2"}) {
    INFO(name);
    const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-training.json",
                                      {{"execution.schedule", name}, {"execution.gradientAccumulation", 64}});
    const Simulation sim = simulate(sc, {Mode::Pipelined}, {.keep_log = false});
    const Plan& plan = sim.plan;
    REQUIRE(plan.forward_stage_count == 5);
    REQUIRE(plan.stages[0].ipu == plan.stages[4].ipu);
    // No shorter than IPU 0's compute (stages 0 and 4, forward, backward and recomputation)
    // over 64 micro-batches, nor than the whole pipeline run through one stage at a time.
    double ipu0 = 0, all = 0;
    for (const PlanStage& st : plan.stages) {
      const double s = st.forward_seconds + st.backward_seconds + st.recompute_seconds;
      all += s;
      if (st.ipu == plan.stages[0].ipu) ipu0 += s;
    }
    const double step = sim.runs.at(0).metrics.step_time_s;
    CHECK(step > 64 * ipu0);
    CHECK(step < 64 * all);
  }
}

TEST_CASE("stash from an order: per stage at its own peak, per IPU at the moment its stages peak together",
          "[schedule][what-if][memory]") {
  // One IPU, two parts (stages 0 and 1, as a V's chunks), whole backward (BW):
  //   F0 F0 F1 F1 BW1 BW1 BW0 BW0   held after each op (stage 0, stage 1):
  //   (1,0) (2,0) (2,1) (2,2) (2,1) (2,0) (1,0) (0,0)
  // Stage 0 peaks at 2, stage 1 at 2; together the IPU holds at most (2,2) = 4. A second order
  // F0 F0 BW0 BW0 F1 F1 BW1 BW1 peaks at (2,0) and (0,2): never 4 micro-batches at once.
  PartLayout layout;
  layout.devices = 1;
  layout.chunks = 2;
  OrderPart first, second;
  first.stage = 0, second.stage = 1;
  layout.parts = {{first, second}};
  layout.ipu_of_device = {0};
  auto order_of = [](std::vector<std::pair<Pass, int>> ops) {
    ScheduleOrder o;
    o.devices = 1;
    o.chunks = 2;
    o.ops.resize(1);
    for (const auto& [pass, chunk] : ops) o.ops[0].push_back({pass, 0, chunk, false});
    return o;
  };
  // F, B, W and BW as orders write them.
  constexpr Pass F = Pass::Forward, B = Pass::InputGradient, W = Pass::WeightGradient, BW = Pass::Backward;
  const OrderStash together = stash_from_order(
      order_of({{F, 0}, {F, 0}, {F, 1}, {F, 1}, {BW, 1}, {BW, 1}, {BW, 0}, {BW, 0}}), layout, 2);
  CHECK(together.stage_depth == std::vector<int>{2, 2});
  REQUIRE(together.ipu_peaks.size() == 1);
  CHECK(together.ipu_peaks[0].ipu == 0);
  CHECK(together.ipu_peaks[0].moments == std::vector<StashMoment>{{{0, 2}, {1, 2}}});
  const OrderStash apart = stash_from_order(
      order_of({{F, 0}, {F, 0}, {BW, 0}, {BW, 0}, {F, 1}, {F, 1}, {BW, 1}, {BW, 1}}), layout, 2);
  CHECK(apart.stage_depth == std::vector<int>{2, 2});
  REQUIRE(apart.ipu_peaks.size() == 1);
  CHECK(apart.ipu_peaks[0].moments == std::vector<StashMoment>{{{0, 2}}, {{1, 2}}});
  // W's share: B then W splits a micro-batch's hold; with w_share 0.5 a part that ran B and not
  // yet W holds half a micro-batch, rounded up to one.
  layout.w_share = 0.5;
  const OrderStash split = stash_from_order(order_of({{F, 0}, {F, 1}, {B, 1}, {B, 0}, {W, 1}, {W, 0}}),
                                            layout, 2);
  CHECK(split.stage_depth == std::vector<int>{1, 1});
  CHECK(split.ipu_peaks[0].moments == std::vector<StashMoment>{{{0, 1}, {1, 1}}});
  // Two devices on one IPU (stages sharing an IPU, one device each): no moment is known.
  PartLayout shared;
  shared.devices = 2;
  shared.parts = {{first}, {second}};
  shared.ipu_of_device = {0, 0};
  ScheduleOrder two;
  two.devices = 2;
  two.ops = {{{F, 0, 0, false}, {BW, 0, 0, false}}, {{F, 0, 0, false}, {BW, 0, 0, false}}};
  const OrderStash unknown = stash_from_order(two, shared, 2);
  CHECK(unknown.stage_depth == std::vector<int>{1, 1});
  CHECK(unknown.ipu_peaks.empty());
}

TEST_CASE("the memory model stashes an IPU's moment with the most bytes, not its stages' peaks added",
          "[memory][what-if]") {
  // A V on the GPT-2 medium Bow Pod16 scenario: under ZB-V every IPU of the V holds its two
  // chunks' stashes at once at most one micro-batch below their own peaks added (the report's
  // per-stage depths are unchanged).
  Scenario sc = load_scenario(IPUSIM_SOURCE_DIR "/scenarios/gpt2-medium-v-bow-pod16.json", {});
  sc.execution.schedule = "zb-v";
  const Plan plan = make_plan(sc, build_graph(sc.model), {Mode::Pipelined});
  const Schedule s = make_schedule(Mode::Pipelined, sc, plan);
  REQUIRE_FALSE(s.stash_at_once.empty());
  const MemoryReport added = estimate_memory(sc, plan, s.stash_depth, s.recompute, s.mirrors);
  const MemoryReport at_once = estimate_memory(sc, plan, s.stash_depth, s.recompute, s.mirrors, s.stash_at_once);
  REQUIRE(added.ipus.size() == at_once.ipus.size());
  CHECK(added.stashes.size() == at_once.stashes.size());
  auto stash_bytes = [](const IpuMemory& ipu) {
    for (const MemoryCategory& c : ipu.categories)
      if (c.name == "stash") return c.bytes;
    return 0.0;
  };
  int lower = 0;
  for (std::size_t i = 0; i < added.ipus.size(); ++i) {
    CHECK(stash_bytes(at_once.ipus[i]) <= stash_bytes(added.ipus[i]));
    if (stash_bytes(at_once.ipus[i]) < stash_bytes(added.ipus[i])) ++lower;
  }
  CHECK(lower >= 6);  // the IPUs holding two chunks (the table: 34 -> 32 MiB on IPUs 1-6)
}
