// One process simulating several times, as a sweep's point processes do (each runs many
// points, sim/sweep/sweep_runner.hpp): every run gives, to the bit, the document a fresh
// process gives, and a failed run ends the process's simulations.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/base/forked.hpp"
#include "sim/base/heap.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/json_report.hpp"
#include "sim/simulate/simulation.hpp"
#include "sanitizer.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

const std::string kScenarios = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/";

std::string document(const Scenario& sc, bool in_process) {
  SimulateOptions options;
  options.in_process = in_process;
  return report_json(sc, simulate(sc, sc.execution.modes, options)).dump();
}

// IPU 0 waits for a copy nobody sends: the engine finds the deadlock.
Schedule deadlocking() {
  Schedule s;
  s.name = "deadlock";
  Step receive;
  receive.kind = StepKind::Receive;
  receive.transfers = {{0, 1, 0, 1e6}};
  Step compute;
  compute.seconds = 1e-3;
  s.programs = {Program{0, {receive}}, Program{1, {compute}}};
  return s;
}

class NullObserver : public RunObserver {
public:
  void on_event(const Event&) override {}
  void on_transfer(const TransferRecord&) override {}
};

} // namespace

TEST_CASE("a process that simulates again gives each run what a fresh process gives", "[engine][sweep]") {
  // Replicas and their collectives, host links shared behind gateways, Streaming Memory,
  // the steady state; the first again after platforms of other sizes.
  const std::vector<std::string> files = {"mlp-training.json", "bert-large-pod16.json", "bert-large-phased-pod16.json",
                                          "gpt2-medium-bow-pod16.json", "mlp-training.json"};
  std::vector<Scenario> scenarios;
  std::vector<std::string> fresh;
  for (const std::string& f : files) {
    scenarios.push_back(load_scenario(kScenarios + f));
    fresh.push_back(document(scenarios.back(), false));
  }

  std::vector<std::string> again;
  bool ready_before = false, ready_after = false, spoiled = true, refused = false;
  run_forked(
      [&](ByteWriter& out) {
        prepare_engine_for_forks();
        out.value(engine_can_simulate_again());
        for (const Scenario& sc : scenarios) out.text(document(sc, true));
        out.value(engine_can_simulate_again());
        // A run that fails leaves SimGrid with an actor blocked: no run after it.
        const HardwareConfig hw = hardware_from_json(zero_overhead_config(2), "c.json");
        NullObserver none;
        bool failed = false, refused_again = false;
        try {
          run_engine_in_process(deadlocking(), hw, none);
        } catch (const EngineError&) {
          failed = true;
        }
        try {
          run_engine_in_process(Schedule{}, hw, none);
        } catch (const EngineError&) {
          refused_again = true;
        }
        out.value(failed && !engine_can_simulate_again());
        out.value(refused_again);
      },
      [&](ByteReader& in) {
        ready_before = in.value<bool>();
        for (std::size_t i = 0; i < files.size(); ++i) again.push_back(in.text());
        ready_after = in.value<bool>();
        spoiled = in.value<bool>();
        refused = in.value<bool>();
      });
  CHECK(ready_before);
  CHECK(ready_after);
  REQUIRE(again.size() == fresh.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO(files[i] << " (run " << i + 1 << " of the process)");
    CHECK(again[i] == fresh[i]);
  }
  CHECK(spoiled);
  CHECK(refused);
}

TEST_CASE("a simulation child's heap is faulted in at once: 8 MiB asked, 8 MiB more resident", "[engine]") {
  // 300 bytes a template step of every program (simulation_heap_bytes).
  Schedule steps;
  steps.programs.resize(3);
  steps.programs[0].steps.resize(10);
  steps.programs[2].steps.resize(5);
  CHECK(simulation_heap_bytes(steps) == 300.0 * 15);
  // In a child of its own, as a simulation runs: the pages populated raise its resident memory
  // by as much and stay in its heap (keep_freed_memory) for what it allocates next.
#ifdef IPUSIM_TEST_ASAN
  WARN("a sanitizer build's allocator keeps its own heap (mallopt has no say): not checked");
#else
  double grown = 0;
  run_forked(
      [&](ByteWriter& out) {
        keep_freed_memory();
        const double before = resident_bytes();
        prefault_heap(8.0 * (1 << 20));
        out.value(resident_bytes() - before);
      },
      [&](ByteReader& in) { grown = in.value<double>(); }, "the test's child", ChildHeap::Fresh);
  CHECK(grown >= 7.5 * (1 << 20));
#endif
}
