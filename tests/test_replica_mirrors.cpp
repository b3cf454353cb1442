// Replicas simulated once (sim/schedule/replica_mirrors.hpp): which units of IPUs mirror the
// first, why the others do not, and a mirrored run against the same run simulated in full.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "sim/base/forked.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/simulate/simulation.hpp"
#include "sim/schedule/replica_mirrors.hpp"
#include "same_metrics.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr int kPerUnit = 4;  // IPUs behind one host link (an M2000's gateway)
constexpr double ms = 1e-3;

// `units` M2000s, every pair of IPUs linked at 1 GB/s; the link between IPU 0 and the last
// unit's first IPU at `last_link` bytes/s.
HardwareConfig m2000s(int units, double last_link = 1e9) {
  Json config = zero_overhead_config(units * kPerUnit);
  config["hostLink"]["sharedBy"] = kPerUnit;
  for (Json& link : config["links"])
    if (link["ipus"][0] == 0 && link["ipus"][1] == (units - 1) * kPerUnit) link["bandwidthBytesPerSecond"] = last_link;
  return hardware_from_json(config, "m2000s.json");
}

// Twenty iterations of: IPU p of each M2000 computes (p + 1) / 2 ms, then reads 1 MB from the host
// over its M2000's shared link; the M2000s' first IPUs then pass 1 MB round a ring, four
// all-reduce steps (copy u from unit u to unit u + 1), and every IPU syncs.
Schedule ring_of_units(int units) {
  Schedule s;
  s.name = "units";
  for (int ipu = 0; ipu < units * kPerUnit; ++ipu) {
    const int unit = ipu / kPerUnit, position = ipu % kPerUnit;
    std::vector<Step> steps(2);
    steps[0].seconds = (position + 1) * 0.5 * ms;
    steps[0].stage = 0;
    steps[1].kind = StepKind::HostInput;
    steps[1].bytes = 1e6;
    if (position == 0) {
      const int next = (unit + 1) % units, previous = (unit + units - 1) % units;
      for (int k = 0; k < 4; ++k) {
        Step ring;
        ring.kind = StepKind::Exchange;
        ring.pass = Pass::AllReduce;
        ring.transfers = {{unit, ipu, next * kPerUnit, 1e6}, {previous, previous * kPerUnit, ipu, 1e6}};
        steps.push_back(ring);
      }
    }
    Step sync;
    sync.kind = StepKind::Sync;
    steps.push_back(sync);
    const std::size_t length = steps.size();
    s.programs.push_back(Program{ipu, std::move(steps), {Repeat{0, length, 20, 1, 0}}});
  }
  s.loops = {"iterations"};
  return s;
}

// Per IPU, each kind's time added up, and the last moment it was busy.
class Totals : public RunObserver {
public:
  void on_event(const Event& e) override {
    seconds[{e.ipu, static_cast<int>(e.kind)}] += e.end - e.start;
    last[e.ipu] = std::max(last[e.ipu], e.end);
  }
  void on_transfer(const TransferRecord&) override {}
  bool wants_transfers() const override { return false; }
  bool wants_every_step() const override { return false; }
  std::map<std::pair<int, int>, double> seconds;
  std::map<int, double> last;
};

struct Outcome {
  RunSummary summary;
  std::map<std::pair<int, int>, double> seconds;
  std::map<int, double> last;
  bool diverged = false;
};

// Runs the schedule mirrored, then in full, in one child process.
std::vector<Outcome> mirrored_and_full(const Schedule& schedule, const HardwareConfig& hw) {
  std::vector<Outcome> outcomes(2);
  run_forked(
      [&](ByteWriter& out) {
        prepare_engine_for_forks();
        for (bool mirror : {true, false}) {
          EngineOptions options;
          options.mirror_replicas = mirror;
          Totals totals;
          Outcome o;
          try {
            o.summary = run_engine_in_process(schedule, hw, totals, options);
          } catch (const MirrorsDiverged&) {
            o.diverged = true;
          }
          out.value(o.diverged);
          out.value(o.summary.end_time);
          out.value(o.summary.activities);
          out.value(o.summary.steps_total);
          out.value(o.summary.steps_simulated);
          out.value(totals.seconds.size());
          for (const auto& [key, value] : totals.seconds) {
            out.value(key.first);
            out.value(key.second);
            out.value(value);
          }
          out.value(totals.last.size());
          for (const auto& [ipu, value] : totals.last) {
            out.value(ipu);
            out.value(value);
          }
          out.value(o.summary.links.size());
          for (const LinkTraffic& link : o.summary.links) out.value(link.bytes);
        }
      },
      [&](ByteReader& in) {
        for (Outcome& o : outcomes) {
          o.diverged = in.value<bool>();
          o.summary.end_time = in.value<double>();
          o.summary.activities = in.value<std::uint64_t>();
          o.summary.steps_total = in.value<std::int64_t>();
          o.summary.steps_simulated = in.value<std::int64_t>();
          for (auto n = in.value<std::size_t>(); n > 0; --n) {
            const int ipu = in.value<int>();
            const int kind = in.value<int>();
            o.seconds[{ipu, kind}] = in.value<double>();
          }
          for (auto n = in.value<std::size_t>(); n > 0; --n) {
            const int ipu = in.value<int>();
            o.last[ipu] = in.value<double>();
          }
          for (auto n = in.value<std::size_t>(); n > 0; --n) o.summary.links.push_back({"", in.value<double>()});
        }
      });
  return outcomes;
}

} // namespace

TEST_CASE("units of IPUs that run the first one's programs mirror it; what differs says why", "[mirrors]") {
  const HardwareConfig hw = m2000s(3);
  const Schedule alike = ring_of_units(3);
  const CollectiveBlocks blocks = find_collective_blocks(alike, hw);
  REQUIRE(blocks.not_timed.empty());
  REQUIRE(blocks.groups.size() == 1);
  const ReplicaMirrors mirrors = find_replica_mirrors(alike, hw, blocks);
  CHECK(mirrors.not_mirrored.empty());
  CHECK(mirrors.units == 3);
  CHECK(mirrors.programs_per_unit == 4);
  CHECK(mirrors.ipus_per_unit == 4);
  // The ring's members are the M2000s' first IPUs, in program order: member 0 is mirrored by 1 and 2.
  REQUIRE(mirrors.member_mirrors.size() == 1);
  CHECK(mirrors.member_mirrors[0][0] == std::vector<std::uint32_t>{1, 2});

  Schedule slower = alike;  // IPU 5 computes 1 ms longer than IPU 1
  slower.programs[5].steps[0].seconds += ms;
  CHECK(find_replica_mirrors(slower, hw, find_collective_blocks(slower, hw)).not_mirrored ==
        "step 0 of IPU 5 differs from IPU 1's");
  Schedule crossing = alike;  // after the loop each M2000's last IPU sends the next M2000's first a copy
  for (int unit = 0; unit < 3; ++unit) {
    Step send;
    send.kind = StepKind::Exchange;
    send.transfers = {{99 + unit, unit * kPerUnit + 3, (unit + 1) % 3 * kPerUnit, 1e6}};
    crossing.programs[static_cast<std::size_t>(unit * kPerUnit + 3)].steps.push_back(send);
    crossing.programs[static_cast<std::size_t>((unit + 1) % 3 * kPerUnit)].steps.push_back(send);
  }
  CHECK(find_replica_mirrors(crossing, hw, find_collective_blocks(crossing, hw)).not_mirrored ==
        "copy 101 leaves its unit outside a timed collective");  // IPU 11's to IPU 0, found first
  Json one_gateway = zero_overhead_config(3 * kPerUnit);  // all twelve IPUs behind one host link
  one_gateway["hostLink"]["sharedBy"] = 3 * kPerUnit;
  const HardwareConfig one_unit = hardware_from_json(one_gateway, "one.json");
  CHECK(find_replica_mirrors(alike, one_unit, find_collective_blocks(alike, one_unit)).not_mirrored ==
        "no unit of 12 IPUs repeats the first one's programs");
  CollectiveBlocks simulated = find_collective_blocks(alike, hw);  // blocks, as above (a group is not copied)
  simulated.not_timed = "an all-reduce copy has two receivers";
  CHECK(find_replica_mirrors(alike, hw, simulated).not_mirrored ==
        "the collectives are simulated transfer by transfer (an all-reduce copy has two receivers)");
}

TEST_CASE("a mirrored run gives every IPU and link what the full simulation gives, simulating one unit",
          "[mirrors][engine]") {
  const std::vector<Outcome> runs = mirrored_and_full(ring_of_units(3), m2000s(3));
  const Outcome& mirrored = runs[0];
  const Outcome& full = runs[1];
  REQUIRE_FALSE(mirrored.diverged);
  REQUIRE_FALSE(full.diverged);
  // One iteration, hand-computed: the M2000's IPUs begin their 1 MB reads at 0.5, 1, 1.5 and
  // 2 ms and share the 1 GB/s host link fairly; IPU 0's read left 0.5 MB alone, 1/4 MB while
  // sharing with IPU 1, 1/6 MB with IPUs 1 and 2, and ends at 2 + (1/12) / (1/4) = 7/3 ms. The
  // ring's four steps each move 1 MB over a link of its own (1 ms each) and end at 19/3 ms,
  // after the last read (4 MB from 0.5 ms: 4.5 ms). 19/3 ms, twenty times.
  CHECK(full.summary.end_time == Approx(20 * 19.0 / 3 * ms).epsilon(1e-12));
  CHECK(mirrored.summary.end_time == full.summary.end_time);
  CHECK(mirrored.summary.activities == full.summary.activities);
  CHECK(mirrored.summary.steps_total == full.summary.steps_total);
  CHECK(3 * mirrored.summary.steps_simulated == full.summary.steps_simulated);
  REQUIRE(mirrored.seconds.size() == full.seconds.size());
  for (const auto& [key, value] : full.seconds) {
    INFO("IPU " << key.first << ", event kind " << key.second);
    CHECK(mirrored.seconds.at(key) == Approx(value).epsilon(1e-12));
  }
  for (const auto& [ipu, value] : full.last) CHECK(mirrored.last.at(ipu) == Approx(value).epsilon(1e-12));
  REQUIRE(mirrored.summary.links.size() == full.summary.links.size());
  for (std::size_t i = 0; i < full.summary.links.size(); ++i)
    CHECK(mirrored.summary.links[i].bytes == full.summary.links[i].bytes);
}

TEST_CASE("a ring whose members leave apart ends a mirrored run in MirrorsDiverged, and the full run stands",
          "[mirrors][engine]") {
  // The link between the last M2000 and the first is 10x slower: each ring step of IPU 0 waits
  // 10 ms for its receive, while IPU 4 (its mirror) receives 1 ms after IPU 0 sends, so it
  // leaves the block 9 ms before IPU 0.
  const std::vector<Outcome> runs = mirrored_and_full(ring_of_units(3), m2000s(3, 1e8));
  CHECK(runs[0].diverged);
  REQUIRE_FALSE(runs[1].diverged);
  CHECK(runs[1].summary.steps_total == 20 * (3 * 7 + 9 * 3));  // 7 steps on a ring member, 3 elsewhere
}

TEST_CASE("a run whose mirrors diverge is simulated again without them, wherever it runs", "[mirrors]") {
  // ResNet-50 on a Pod16 whose IPU 0 has links at a tenth of their speed: the M2000s no longer
  // run alike (IPU 0's ring steps wait longer than IPU 4's), so the mirrored run is refused
  // and the figures are those of the run that simulates every IPU (the trace's).
  Scenario resnet = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/validation/mlperf-v2.0-resnet50-pod16.json",
                                  {parse_override("execution.batchesPerStep=2")});
  for (LinkSpec& link : resnet.hardware.links)
    if (link.a == 0 || link.b == 0) link.bandwidth_bytes_per_s /= 10;
  SimulateOptions traced;
  traced.keep_log = true;
  const RunMetrics full = simulate(resnet, {Mode::Pipelined}, traced).runs.at(0).metrics;
  // In a child process of its own; in this process (a sweep's point), with SimGrid's engine
  // started for this run alone (the run again in a child) or ready to run again (again here).
  for (int where = 0; where < 3; ++where) {
    INFO("variant " << where);
    double step_time = 0;
    std::int64_t simulated = 0;
    run_forked(
        [&](ByteWriter& out) {
          SimulateOptions lean;
          lean.keep_log = false;
          lean.in_process = where > 0;
          if (where == 2) prepare_engine_for_forks();
          const RunMetrics m = simulate(resnet, {Mode::Pipelined}, lean).runs.at(0).metrics;
          out.value(m.step_time_s);
          out.value(m.simulation.steps_simulated);
        },
        [&](ByteReader& in) {
          step_time = in.value<double>();
          simulated = in.value<std::int64_t>();
        });
    CHECK(step_time == full.step_time_s);
    CHECK(simulated == full.simulation.steps_simulated);
  }
}

TEST_CASE("a mirrored run's metrics give every IPU its source's figures, as the full simulation has them",
          "[mirrors][metrics]") {
  // ResNet-50 on a Pod16: four M2000s alike. Kept in the log, every IPU is simulated (a log
  // takes each IPU's events); without it the first M2000 alone, and the metrics copy its
  // IPUs' figures, idle causes and all, to the three others.
  const Scenario resnet = load_scenario(
      std::string(IPUSIM_SOURCE_DIR) + "/scenarios/validation/mlperf-v2.0-resnet50-pod16.json",
      {parse_override("execution.batchesPerStep=2")});
  SimulateOptions traced;
  traced.keep_log = true;
  SimulateOptions lean;
  lean.keep_log = false;
  const RunMetrics full = simulate(resnet, {Mode::Pipelined}, traced).runs.at(0).metrics;
  const RunMetrics mirrored = simulate(resnet, {Mode::Pipelined}, lean).runs.at(0).metrics;
  CHECK(full.simulation.ipus_simulated == 16);
  CHECK(mirrored.simulation.ipus_simulated == 4);
  const auto same = [&](double a, double b) { return std::fabs(a - b) <= 1e-9 * full.step_time_s; };
  CHECK(same(mirrored.step_time_s, full.step_time_s));
  CHECK(same(mirrored.allreduce_s, full.allreduce_s));
  CHECK(same(mirrored.latency_s.mean, full.latency_s.mean));
  CHECK(std::fabs(mirrored.bubble_fraction - full.bubble_fraction) <= 1e-9);
  REQUIRE(full.ipus.size() == 16);
  check_same_ipus_and_links(mirrored, full);
}
