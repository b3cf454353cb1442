// Benchmark: simulate a BERT-Large-sized pipelined training step (9 stages on 4 IPUs,
// G = 2048) and compare its activity rate with a minimal SimGrid program that runs the
// same number of execs and transfers on the same number of actors, in the same run.
// Each simulation runs in its own forked process (SimGrid: one engine per process).
//
// Usage: bench_pipeline [SCENARIO] [--set path=value ...]
#include <simgrid/s4u.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/simulation.hpp"

namespace sg4 = simgrid::s4u;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Counts {
  std::vector<std::uint64_t> execs;  // per actor
  std::vector<std::uint64_t> sends;  // per actor, to the next actor in a ring
};

// The baseline: N actors on a 4-host full mesh, each running its execs and ring
// transfers in rounds, with receives posted before sends.
void raw_simgrid(const Counts& counts) {
  int argc = 1;
  char name[] = "raw";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  auto* zone = sg4::create_full_zone("raw");
  const std::size_t n = counts.execs.size();
  std::vector<sg4::Host*> hosts;
  for (std::size_t i = 0; i < n; ++i) hosts.push_back(zone->create_host("h" + std::to_string(i), 1e12));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      auto* link = zone->create_link("l" + std::to_string(a) + "_" + std::to_string(b), 32e9)->set_latency(1e-6);
      link->seal();
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(link)}, false);
    }
  zone->seal();
  for (std::size_t i = 0; i < n; ++i) {
    sg4::Actor::create("a" + std::to_string(i), hosts[i], [i, n, &counts] {
      static int payload = 0;
      auto* out = sg4::Mailbox::by_name("m" + std::to_string((i + 1) % n));
      auto* in = sg4::Mailbox::by_name("m" + std::to_string(i));
      const std::uint64_t prev = counts.sends[(i + n - 1) % n];
      const std::uint64_t rounds = std::max({counts.sends[i], prev, std::uint64_t{1}});
      std::uint64_t execs_done = 0;
      for (std::uint64_t r = 0; r < rounds; ++r) {
        const std::uint64_t exec_target = counts.execs[i] * (r + 1) / rounds;
        for (; execs_done < exec_target; ++execs_done) sg4::this_actor::execute(1e6);
        std::vector<sg4::CommPtr> comms;
        int* got = nullptr;
        if (r < prev) comms.push_back(in->get_async<int>(&got));
        if (r < counts.sends[i]) comms.push_back(out->put_async(&payload, 65536));
        sg4::Comm::wait_all(comms);
      }
    });
  }
  engine.run();
}

// Timed from the parent, fork to exit, as run_engine is: both sides pay for a process.
template <class F> double timed_in_child(F&& f) {
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? seconds_since(t0) : -1;
}

} // namespace

int main(int argc, char** argv) {
  std::string scenario_path = std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-training.json";
  std::vector<ipusim::Override> overrides;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--set" && i + 1 < argc) overrides.push_back(ipusim::parse_override(argv[++i]));
    else scenario_path = arg;
  }
  overrides.push_back(ipusim::parse_override("execution.mode=pipelined"));

  try {
    const auto t_load = Clock::now();
    const ipusim::Scenario sc = ipusim::load_scenario(scenario_path, overrides);
    const ipusim::ModelGraph graph = ipusim::build_graph(sc.model);
    const ipusim::Plan plan = ipusim::make_plan(sc, graph);
    const ipusim::Schedule schedule = ipusim::make_schedule(ipusim::Mode::Pipelined, sc, plan);
    const double plan_wall = seconds_since(t_load);

    const auto t_engine = Clock::now();
    const ipusim::RunLog log = ipusim::run_engine(schedule, sc.hardware);
    const double engine_wall = seconds_since(t_engine);  // fork, simulation, and shipping the log back
    const ipusim::RunMetrics m = ipusim::compute_metrics(ipusim::Mode::Pipelined, schedule, log, sc.execution);

    Counts counts;
    for (const auto& program : schedule.programs) {
      std::uint64_t execs = 0;
      for (const auto& step : program.steps)
        if ((step.kind == ipusim::StepKind::Compute || step.kind == ipusim::StepKind::Sync) && step.seconds > 0) ++execs;
      counts.execs.push_back(execs);
      counts.sends.push_back(0);
    }
    for (const auto& t : log.transfers) {
      const int from = t.src < 0 ? t.dst : t.src;  // host streams: charge the IPU's actor
      for (std::size_t i = 0; i < schedule.programs.size(); ++i)
        if (schedule.programs[i].ipu == from) ++counts.sends[i];
    }
    std::uint64_t raw_activities = 0;
    for (std::size_t i = 0; i < counts.execs.size(); ++i) raw_activities += counts.execs[i] + counts.sends[i];
    const double raw_wall = timed_in_child([&] { raw_simgrid(counts); });

    struct rusage usage {};
    getrusage(RUSAGE_CHILDREN, &usage);
    const double ours_rate = static_cast<double>(log.activities) / engine_wall;
    const double raw_rate = static_cast<double>(raw_activities) / raw_wall;
    std::printf("scenario                 %s\n", scenario_path.c_str());
    std::printf("stages / IPUs / G        %d / %zu / %lld\n", plan.stage_count(), plan.ipus.size(),
                static_cast<long long>(sc.execution.gradient_accumulation));
    std::printf("simulated step time      %.6f s (%lld micro-batches, %d cycles)\n", m.step_time_s,
                static_cast<long long>(m.micro_batches), m.cycles);
    std::printf("load+graph+plan+schedule %.3f s wall\n", plan_wall);
    std::printf("engine                   %.3f s wall, %llu activities, %.0f activities/s\n", engine_wall,
                static_cast<unsigned long long>(log.activities), ours_rate);
    std::printf("whole step               %.3f s wall\n", plan_wall + engine_wall);
    std::printf("raw SimGrid baseline     %.3f s wall, %llu activities, %.0f activities/s\n", raw_wall,
                static_cast<unsigned long long>(raw_activities), raw_rate);
    std::printf("ratio ipusim / raw       %.2f of raw SimGrid's activity rate\n", ours_rate / raw_rate);
    std::printf("peak child RSS           %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  } catch (const std::exception& e) {
    std::cerr << "bench_pipeline: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
