// The gradient collectives replayed apart from the network simulation
// (sim/schedule/collective_dataflow.hpp): CM02's weighted max-min sharing on a hand-computed
// case, and which schedules' collectives can be replayed (the rest are simulated, and say why).
// tests/test_steady_state.cpp compares the replay with SimGrid's transfers on real pods.
#include <catch2/catch.hpp>

#include "sim/io/hardware_loader.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/collective_dataflow.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double us = 1e-6;

DataflowSend send_to(std::uint32_t member, std::uint32_t route, double bytes) {
  DataflowSend s;
  s.to_member = member;
  s.route = route;
  s.bytes = bytes;
  return s;
}

// Two members, one step each, sending each other one transfer: A (member 0 -> 1) over link 0
// with 1 us of latency, B (1 -> 0) over links 0 and 1 with 2 us; every link 1 GB/s.
CollectiveGroup two_flows(double a_bytes, double b_bytes) {
  CollectiveGroup g;
  g.link_bandwidth = {1e9, 1e9};
  g.routes = {{0}, {0, 1}};
  g.route_latency = {1 * us, 2 * us};
  g.route_bandwidth = {1e9, 1e9};
  g.members.resize(2);
  g.send_store = {send_to(1, 0, a_bytes), send_to(0, 1, b_bytes)};
  g.receive_store = {{1, 0, 0}, {0, 0, 0}};
  for (std::size_t m = 0; m < 2; ++m) {
    DataflowStep& step = g.members[m].steps.emplace_back();
    step.sends = {&g.send_store[m], 1};
    step.receives = {&g.receive_store[m], 1};
    step.first_flow = m;
  }
  g.flows = 2;
  return g;
}

// Three IPUs in a ring (every pair linked, 1 GB/s, no latency), each running one all-reduce
// block of `steps` steps: at step k IPU i sends 1 MB to IPU i + 1 as copy i (one copy serves
// every step of its sender's block, as a ring's neighbour copy does) and receives copy i - 1.
Schedule ring_blocks(int steps) {
  Schedule s;
  s.name = "ring";
  for (int ipu = 0; ipu < 3; ++ipu) {
    std::vector<Step> block(static_cast<std::size_t>(steps));
    for (Step& step : block) {
      step.kind = StepKind::Exchange;
      step.pass = Pass::AllReduce;
      step.transfers = {{ipu, ipu, (ipu + 1) % 3, 1e6}, {(ipu + 2) % 3, (ipu + 2) % 3, ipu, 1e6}};
    }
    s.programs.push_back(Program{ipu, std::move(block)});
  }
  return s;
}

} // namespace

TEST_CASE("a ring's blocks are matched copy by copy into one group, and bad copies say why",
          "[collectives]") {
  const HardwareConfig hw = hardware_from_json(zero_overhead_config(3), "c.json");
  // 10 steps: each copy has 20 ends, and IPU 0 receives copy 2 from a block listed after its own.
  const CollectiveBlocks blocks = find_collective_blocks(ring_blocks(10), hw);
  REQUIRE(blocks.not_timed.empty());
  REQUIRE(blocks.groups.size() == 1);
  const CollectiveGroup& group = blocks.groups[0];
  REQUIRE(group.members.size() == 3);
  CHECK(group.flows == 30);
  for (std::uint32_t m = 0; m < 3; ++m) {
    REQUIRE(group.members[m].steps.size() == 10);
    for (std::uint32_t k = 0; k < 10; ++k) {
      const DataflowStep& step = group.members[m].steps[k];
      REQUIRE(step.sends.size() == 1);
      REQUIRE(step.receives.size() == 1);
      CHECK(step.sends[0].to_member == (m + 1) % 3);
      CHECK(step.sends[0].to_step == k);  // the n-th receive of a copy takes its n-th send
      CHECK(step.receives[0].member == (m + 2) % 3);
      CHECK(step.receives[0].step == k);
    }
  }
  // Each step moves 1 MB over a link of its own at 1 GB/s: 1 ms a step, 10 ms the block.
  CollectiveTimes times;
  group.evaluate({0.0, 0.0, 0.0}, times);
  for (std::size_t m = 0; m < 3; ++m) CHECK(times.end[m].back() == Approx(10e-3).epsilon(1e-12));

  Schedule unsent = ring_blocks(10);  // IPU 0 no longer sends its last copy; IPU 1 still receives it
  unsent.programs[0].steps.back().transfers.erase(unsent.programs[0].steps.back().transfers.begin());
  CHECK(find_collective_blocks(unsent, hw).not_timed ==
        "an all-reduce copy is sent and received a different number of times");
  Schedule two_receivers = ring_blocks(10);  // IPU 0's last send of copy 0 goes to IPU 2 instead
  two_receivers.programs[0].steps.back().transfers[0].dst_ipu = 2;
  two_receivers.programs[1].steps.back().transfers.pop_back();
  two_receivers.programs[2].steps.back().transfers.push_back({0, 0, 2, 1e6});
  CHECK(find_collective_blocks(two_receivers, hw).not_timed == "an all-reduce copy has two receivers");
  Schedule outside = ring_blocks(10);  // copy 0 also carried by an exchange after the block
  Step after;
  after.kind = StepKind::Exchange;
  after.transfers = {{0, 0, 1, 1e6}};
  outside.programs[0].steps.push_back(after);
  outside.programs[1].steps.push_back(after);
  CHECK(find_collective_blocks(outside, hw).not_timed == "an all-reduce copy is also sent outside the all-reduce steps");
}

TEST_CASE("a ring replayed one member a class times every member as the whole ring does; classes that could "
          "run apart are refused",
          "[collectives]") {
  const HardwareConfig hw = hardware_from_json(zero_overhead_config(3), "c.json");
  const CollectiveBlocks blocks = find_collective_blocks(ring_blocks(10), hw);
  REQUIRE(blocks.groups.size() == 1);
  const CollectiveGroup& ring = blocks.groups[0];
  // One class of all three IPUs: each link carries one 1 GB/s transfer at a time.
  CollectiveQuotient one;
  REQUIRE(quotient_of(ring, {0, 0, 0}, one) == "");
  REQUIRE(one.group.members.size() == 1);
  CHECK(one.member_class == std::vector<std::uint32_t>{0, 0, 0});
  CHECK(one.group.flows == 10);
  // Member 0 receives at step k the transfer of its own class's step k, one of them.
  CHECK(one.group.settles == std::vector<std::uint32_t>(10, 1));
  CollectiveTimes classes, whole;
  one.group.evaluate({0.0}, classes, false);
  ring.evaluate({0.0, 0.0, 0.0}, whole, false);
  CHECK(classes.end[0][0] == Approx(10e-3).epsilon(1e-12));  // 1 MB at 1 GB/s, ten steps
  for (std::size_t m = 0; m < 3; ++m) CHECK(whole.end[m][0] == classes.end[0][0]);

  // Classes must cover the members with representatives of their own.
  CHECK(quotient_of(ring, {0, 0}, one) == "the classes do not cover the group's members");
  CHECK(quotient_of(ring, {1, 0, 0}, one) == "member 0 has no representative of its class");
  // IPU 2's link to IPU 0 at a tenth of the speed: IPU 2 sends otherwise than IPU 0.
  Json slow = zero_overhead_config(3);
  for (Json& link : slow["links"])
    if (link["ipus"][0] == 0 && link["ipus"][1] == 2) link["bandwidthBytesPerSecond"] = 1e8;
  const HardwareConfig slow_hw = hardware_from_json(slow, "slow.json");
  const CollectiveBlocks slow_blocks = find_collective_blocks(ring_blocks(10), slow_hw);
  REQUIRE(slow_blocks.groups.size() == 1);
  CHECK(quotient_of(slow_blocks.groups[0], {0, 0, 0}, one) == "member 2 step 0 sends otherwise than its class");
  // Two transfers that may share a link (two_flows' link 0) could slow each other: refused.
  const CollectiveGroup shared = two_flows(3000, 2000);
  CHECK(quotient_of(shared, {0, 1}, one) == "group link 0 could be asked for 2e+09 B/s, above its 1e+09");
}

TEST_CASE("a collective's transfers share a link in proportion to the inverse of their routes' latency",
          "[collectives]") {
  // A runs alone at 1 GB/s from 1 to 2 us (1,000 of its 3,000 bytes). From 2 us B shares link 0:
  // with penalties 1 and 2 us, A gets 2/3 GB/s and B 1/3; A's last 2,000 bytes take 3 us (it
  // arrives at 5 us), when B has moved 1,000 of its 2,000; B then runs alone: 1 us more, 6 us.
  CollectiveGroup g = two_flows(3000, 2000);
  CollectiveTimes t;
  g.evaluate({0.0, 0.0}, t);
  CHECK(t.arrival[0] == Approx(5 * us).epsilon(1e-12));
  CHECK(t.arrival[1] == Approx(6 * us).epsilon(1e-12));
  CHECK(t.end[0][0] == Approx(6 * us).epsilon(1e-12));  // member 0 waits for B too
  CHECK(t.end[1][0] == Approx(6 * us).epsilon(1e-12));

  // The same, member 1 arriving 10 us later: no overlap, each alone (latency + bytes / 1 GB/s).
  g.evaluate({0.0, 10 * us}, t);
  CHECK(t.arrival[0] == Approx(4 * us).epsilon(1e-12));
  CHECK(t.arrival[1] == Approx(14 * us).epsilon(1e-12));
  CHECK(t.start[1][0] == 10 * us);

  // A step's own seconds come after its transfers.
  g.members[0].steps[0].seconds = 1 * us;
  g.evaluate({0.0, 10 * us}, t);
  CHECK(t.end[0][0] == Approx(15 * us).epsilon(1e-12));
  CHECK(t.end[1][0] == Approx(14 * us).epsilon(1e-12));
}

TEST_CASE("the ring of every replica's IPU forms one group; a shared link with other copies is simulated",
          "[collectives]") {
  // 16 replicas of ResNet-50 on a Bow Pod16: one ring, 2 x 15 steps, each sending two halves.
  SimulateOptions lean;
  lean.keep_log = false;
  const Scenario resnet = load_scenario(std::string(IPUSIM_SOURCE_DIR) +
                                        "/scenarios/validation/mlperf-v2.0-resnet50-pod16.json",
                                        {parse_override("execution.batchesPerStep=1")});
  const Simulation sim = simulate(resnet, {Mode::Pipelined}, lean);
  const CollectiveBlocks blocks = find_collective_blocks(sim.runs.at(0).schedule, resnet.hardware);
  REQUIRE(blocks.groups.size() == 1);
  const CollectiveGroup& ring = blocks.groups.front();
  CHECK(ring.members.size() == 16);
  for (const CollectiveMember& m : ring.members) {
    REQUIRE(m.steps.size() == 30);
    for (const DataflowStep& s : m.steps) {
      CHECK(s.sends.size() == 2);
      CHECK(s.receives.size() == 2);
    }
  }
  CHECK(ring.flows == 16 * 30 * 2);
  // Its routes share links (docs/systems.md): 3 -> 4 and 15 -> 0 both take 3 -> 0, ties going to
  // the lower IPU; the replay shares it as CM02 does (the replay is checked against SimGrid in
  // tests/test_steady_state.cpp).
  RouteFinder finder(resnet.hardware);
  auto names = [&](int a, int b) {
    std::vector<std::string> out;
    for (const Hop& hop : finder.route(a, b)) out.push_back(directed_link_name(resnet.hardware, hop));
    return out;
  };
  CHECK(names(3, 4) == std::vector<std::string>{"ipu3->ipu0", "ipu0->ipu4"});
  CHECK(names(15, 0) == std::vector<std::string>{"ipu15->ipu3", "ipu3->ipu0"});

  // BERT-Large on 4 IPUs x 4 replicas of an IPU-POD16 with replicated tensor sharding: each
  // IPU's reduce-scatter and, after the update, its all-gather ride the same ring links; where
  // replicas run apart one's all-gather could meet another's reduce-scatter, so both are left
  // to SimGrid.
  const Scenario bert = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json",
                                      {parse_override("execution.gradientAccumulation=16")});
  const Simulation bert_sim = simulate(bert, {Mode::Pipelined}, lean);
  const SimulationStats& stats = bert_sim.runs.at(0).metrics.simulation;
  CHECK(stats.collective_groups == 0);
  CHECK(stats.collectives_simulated_because ==
        "two collectives at different steps of a program (a reduce-scatter and its all-gather) share a link");
  CHECK(find_collective_blocks(bert_sim.runs.at(0).schedule, bert.hardware).not_timed ==
        stats.collectives_simulated_because);
}

TEST_CASE("a timed all-reduce block reported as one event gives the figures its steps give",
          "[collectives]") {
  // The metrics take a replica's 30 ring steps as one exchange event (they follow one another
  // without a gap); a trace (the log) still gets every step. Same step, exchange and all-reduce
  // time, link bytes and counts either way, every IPU's and link's included.
  const Scenario resnet = load_scenario(std::string(IPUSIM_SOURCE_DIR) +
                                        "/scenarios/validation/mlperf-v2.0-resnet50-pod16.json",
                                        {parse_override("execution.batchesPerStep=2")});
  SimulateOptions lean;
  lean.keep_log = false;
  SimulateOptions traced;
  traced.keep_log = true;
  const Simulation whole = simulate(resnet, {Mode::Pipelined}, lean);
  const Simulation stepwise = simulate(resnet, {Mode::Pipelined}, traced);
  const RunMetrics& a = whole.runs.at(0).metrics;
  const RunMetrics& b = stepwise.runs.at(0).metrics;
  REQUIRE(a.simulation.collective_groups == 1);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.allreduce_s == Approx(b.allreduce_s).epsilon(1e-12));
  CHECK(a.allreduce_s > 0);
  CHECK(a.activities == b.activities);
  // The trace simulates all four M2000s; the metrics alone simulate the first and report the
  // three alike from it (sim/schedule/replica_mirrors.hpp).
  CHECK(a.simulation.steps_total == b.simulation.steps_total);
  CHECK(4 * a.simulation.steps_simulated == b.simulation.steps_simulated);
  REQUIRE(a.ipus.size() == b.ipus.size());
  for (std::size_t i = 0; i < a.ipus.size(); ++i)
    CHECK(a.ipus[i].exchange_s == Approx(b.ipus[i].exchange_s).epsilon(1e-12));
  REQUIRE(a.links.size() == b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) CHECK(a.links[i].bytes == Approx(b.links[i].bytes).epsilon(1e-12));
  // The log has every ring step: 2 weight updates x 2 x 15 all-reduce exchanges on IPU 0.
  std::size_t ring_steps = 0;
  for (const Event& e : stepwise.runs.at(0).log.events)
    if (e.ipu == 0 && e.kind == EventKind::Exchange && e.pass == Pass::AllReduce) ++ring_steps;
  CHECK(ring_steps == 2 * 30);
}
