// Benchmark: what users wait for. Wall time, CPU time and peak memory of `ipusim run`
// (BERT-Large on 4 IPUs, an IPU-POD16, POD64 and POD128 across G; every schedule across
// G), of sweeps (points per second), and the full simulation's activity rate against a
// fair raw-SimGrid baseline running the same schedule. Prints Markdown tables for
// docs/benchmark.md. Each measured run is its own process, timed from fork to exit.
//
// Usage: bench_pipeline [--ipusim BIN] [--before BIN] [--runs N] [SECTION...]
//   SECTION: breakdown systems schedules what-if memory sweep baseline (default: all)
//   --before BIN  also time another ipusim binary (the version before a change) where it can finish
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "raw_baseline.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kSource = IPUSIM_SOURCE_DIR;

struct Measure {
  double wall = 0, cpu = 0, rss_mib = 0;
  bool ok = false, timed_out = false;
};

// Waits for `pid` at most `timeout` seconds (then kills it); wall from `t0`, CPU and peak
// RSS from wait4 (the process and the children it waited for).
Measure reap(pid_t pid, Clock::time_point t0, double timeout) {
  Measure m;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  pollfd p{pidfd, POLLIN, 0};
  if (pidfd >= 0 && ::poll(&p, 1, static_cast<int>(timeout * 1000)) == 0) {
    ::kill(pid, SIGKILL);
    m.timed_out = true;
  }
  if (pidfd >= 0) ::close(pidfd);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  m.wall = std::chrono::duration<double>(Clock::now() - t0).count();
  m.cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
          static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  m.rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  m.ok = !m.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return m;
}

Measure in_child(const std::function<void()>& work, double timeout = 3600) {
  std::cout.flush();
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    work();
    _exit(0);
  }
  return reap(pid, t0, timeout);
}

Measure run_binary(const std::string& binary, const std::vector<std::string>& args, double timeout) {
  std::vector<std::string> strings{binary};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cout.flush();
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int quiet = ::open("/dev/null", O_WRONLY);
    ::dup2(quiet, 1);
    ::dup2(quiet, 2);
    ::execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return reap(pid, t0, timeout);
}

// The fastest of `runs` (the machine is shared: the minimum is the least disturbed).
Measure best_of(int runs, const std::function<Measure()>& once) {
  Measure best;
  for (int i = 0; i < runs; ++i) {
    const Measure m = once();
    if (!m.ok) return m;
    if (!best.ok || m.wall < best.wall) best = m;
  }
  return best;
}

std::string seconds(const Measure& m) {
  if (m.timed_out) return "> timeout";
  if (!m.ok) return "failed";
  char text[64];
  if (m.wall < 1) std::snprintf(text, sizeof text, "%.0f ms (%.0f)", m.wall * 1e3, m.cpu * 1e3);
  else std::snprintf(text, sizeof text, "%.2f s (%.2f)", m.wall, m.cpu);
  return text;
}

std::string mib(const Measure& m) {
  if (!m.ok) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", m.rss_mib);
  return text;
}

struct Options {
  std::string ipusim = std::string(IPUSIM_BINARY_DIR) + "/ipusim";
  std::string before;
  int runs = 3;
  fs::path work;
};

// A scenario file in the work folder: `base` with its model and config made absolute and `edit` applied.
std::string scenario_variant(const Options& o, const std::string& base, const std::string& name,
                             const std::function<void(Json&)>& edit) {
  Json doc = Json::parse(std::ifstream(kSource + "/scenarios/" + base));
  for (const char* key : {"model", "config"}) doc[key] = fs::weakly_canonical(kSource + "/scenarios/" + doc[key].get<std::string>()).string();
  edit(doc);
  const std::string path = (o.work / (name + ".json")).string();
  std::ofstream(path) << doc.dump(2);
  return path;
}

std::vector<std::string> run_args(const Options& o, const std::string& scenario, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"run", scenario, "--json", "-o", (o.work / "out.json").string(), "--force"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Fields of the last run's first mode's `simulation` (from its JSON report), joined by " / ".
std::string simulated_of(const Options& o, std::initializer_list<const char*> fields) {
  try {
    const Json doc = Json::parse(std::ifstream(o.work / "out.json"));
    const Json& s = doc.at("runs").at(0).at("simulation");
    std::string out;
    for (const char* field : fields) out += (out.empty() ? "" : " / ") + std::to_string(s.at(field).get<long long>());
    return out;
  } catch (const std::exception&) {
    return "-";
  }
}

// Simulated and total steps of the last run's first mode.
std::string steps_of(const Options& o) { return simulated_of(o, {"simulatedSteps", "programSteps"}); }

void systems(const Options& o) {
  struct System {
    const char* name;
    std::string scenario;
  };
  const std::vector<System> list = {
      {"4 IPUs (M2000)", kSource + "/scenarios/bert-large-training.json"},
      {"POD16 (4 x 4)", kSource + "/scenarios/bert-large-pod16.json"},
      {"POD64 (4 x 16)", scenario_variant(o, "bert-large-pod16.json", "pod64", [](Json& d) {
         d["config"] = kSource + "/configs/ipu-pod64.json";
         d["execution"]["replicas"] = 16;
       })},
      {"POD128 (4 x 32)", scenario_variant(o, "bert-large-pod16.json", "pod128", [](Json& d) {
         d["config"] = kSource + "/configs/ipu-pod128.json";
         d["execution"]["replicas"] = 32;
       })}};
  std::cout << "\n### BERT-Large pipelined training (popart), `ipusim run --mode pipelined`\n\n"
            << "| system | G | steps simulated / total | steady state: wall (CPU) | peak RSS | `--exact-full` | peak RSS |"
            << (o.before.empty() ? "" : " before: wall (CPU) | before: peak RSS |") << "\n|---|---|---|---|---|---|---|"
            << (o.before.empty() ? "" : "---|---|") << "\n";
  for (const System& s : list)
    // A step may hold at most 1e6 micro-batches over all replicas (scenario.too-large).
    for (long long G : {512LL, 2048LL, 8192LL, s.name[3] == '6' || s.name[3] == '1' ? 16384LL : 65536LL}) {
      std::cerr << "systems: " << s.name << " G=" << G << "\n";
      const std::vector<std::string> sets = {"--mode", "pipelined", "--set",
                                             "execution.gradientAccumulation=" + std::to_string(G)};
      const Measure fast = best_of(o.runs, [&] { return run_binary(o.ipusim, run_args(o, s.scenario, sets), 600); });
      const std::string steps = steps_of(o);
      auto full_args = sets;
      full_args.push_back("--exact-full");
      const bool big = s.name[0] == 'P' && s.name[3] != '1';  // POD64 and POD128: full runs only up to G = 2048
      const Measure full = (big && G > 2048) || G > 8192
                               ? Measure{}
                               : run_binary(o.ipusim, run_args(o, s.scenario, full_args), 900);
      std::cout << "| " << s.name << " | " << G << " | " << steps << " | " << seconds(fast) << " | " << mib(fast) << " | "
                << (full.ok || full.timed_out ? seconds(full) : "-") << " | " << mib(full) << " |";
      if (!o.before.empty()) {
        const Measure before = G > 8192 ? Measure{} : run_binary(o.before, run_args(o, s.scenario, sets), 900);
        std::cout << " " << (before.ok || before.timed_out ? seconds(before) : "-") << " | " << mib(before) << " |";
      }
      std::cout << "\n";
    }
}

// Where the time of one `ipusim run` goes: process start-up, loading, planning, the
// schedule, and the simulation process (steady state), each measured on its own.
void breakdown(const Options& o) {
  std::cout << "\n### Where the time goes (steady state, pipelined)\n\n"
            << "| case | start-up (`ipusim list`) | load scenario | graph + plan | schedule | simulation process | `ipusim run` |\n"
            << "|---|---|---|---|---|---|---|\n";
  struct Case {
    const char* name;
    std::string scenario;
  };
  const std::vector<Case> cases = {
      {"BERT-Large, 4 IPUs, G = 2048", kSource + "/scenarios/bert-large-training.json"},
      {"BERT-Large, POD16, G = 2048", kSource + "/scenarios/bert-large-pod16.json"},
      {"BERT-Large, POD64, G = 2048", scenario_variant(o, "bert-large-pod16.json", "pod64", [](Json& d) {
         d["config"] = kSource + "/configs/ipu-pod64.json";
         d["execution"]["replicas"] = 16;
       })}};
  const Measure startup = best_of(o.runs, [&] { return run_binary(o.ipusim, {"list"}, 60); });
  for (const Case& c : cases) {
    std::cerr << "breakdown: " << c.name << "\n";
    double load = 1e9, plan_time = 1e9, schedule_time = 1e9;
    ipusim::Scenario sc;
    ipusim::Plan plan;
    ipusim::Schedule schedule;
    for (int i = 0; i < o.runs; ++i) {
      auto t0 = Clock::now();
      sc = ipusim::load_scenario(c.scenario, {ipusim::parse_override("execution.mode=pipelined")});
      auto t1 = Clock::now();
      plan = ipusim::make_plan(sc, ipusim::build_graph(sc.model));
      auto t2 = Clock::now();
      schedule = ipusim::make_schedule(ipusim::Mode::Pipelined, sc, plan);
      auto t3 = Clock::now();
      load = std::min(load, std::chrono::duration<double>(t1 - t0).count());
      plan_time = std::min(plan_time, std::chrono::duration<double>(t2 - t1).count());
      schedule_time = std::min(schedule_time, std::chrono::duration<double>(t3 - t2).count());
    }
    const Measure sim = best_of(o.runs, [&] {
      return in_child([&] {
        ipusim::MetricsAccumulator metrics(ipusim::Mode::Pipelined, schedule, sc.execution);
        metrics.finish(ipusim::run_engine_in_process(schedule, sc.hardware, metrics));
      });
    });
    const Measure whole =
        best_of(o.runs, [&] { return run_binary(o.ipusim, run_args(o, c.scenario, {"--mode", "pipelined"}), 600); });
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %s | %.0f ms | %.0f ms | %.1f ms | %s | %s |\n", c.name,
                  seconds(startup).c_str(), load * 1e3, plan_time * 1e3, schedule_time * 1e3, seconds(sim).c_str(),
                  seconds(whole).c_str());
    std::cout << line;
  }
}

// BERT-Large from scripts/make_bert_model.py, `layers` per virtual IPU, heads on the last one.
bool make_bert(const std::string& path, const std::string& layers, const std::string& size = "") {
  const std::string make = "python3 '" + kSource + "/scripts/make_bert_model.py' --layers-per-ipu " + layers + size +
                           " --heads-on last -o '" + path + "' > /dev/null";
  if (std::system(make.c_str()) == 0) return true;
  std::cerr << "bench: cannot generate " << path << "\n";
  return false;
}

// The shipped BERT-Large scenario with its model as 6,6,6,6 layers and the heads on the last
// IPU, so that the GPU-style schedules (GPipe, TensorFlow's) accept it; empty when the model
// cannot be written.
std::string bert_heads_last(const Options& o) {
  const std::string model = (o.work / "bert-large-heads-last.json").string();
  if (!make_bert(model, "6,6,6,6")) return "";
  return scenario_variant(o, "bert-large-training.json", "bert-large-heads-last-scenario", [&](Json& d) {
    d["model"] = model;
    d["execution"]["availableMemoryProportion"] = 0.25;
  });
}

void schedules(const Options& o) {
  std::cout << "\n### The seed MLP's training step by schedule and G, `ipusim run --mode pipelined`\n\n"
            << "| schedule | G | steps simulated / total | steady state: wall (CPU) | peak RSS | `--exact-full` |"
            << (o.before.empty() ? "" : " before |") << "\n|---|---|---|---|---|---|" << (o.before.empty() ? "" : "---|")
            << "\n";
  const std::string mlp = kSource + "/scenarios/mlp-training.json";
  for (const char* schedule : {"popart", "gpipe", "1f1b", "tf-grouped", "tf-interleaved", "tf-sequential", "sharded"})
    for (long long G : {1024LL, 4096LL, 16384LL, 65536LL}) {
      std::cerr << "schedules: " << schedule << " G=" << G << "\n";
      const bool sharded = std::string(schedule) == "sharded";
      std::vector<std::string> sets = {"--mode", sharded ? "sharded" : "pipelined", "--set",
                                       "execution.gradientAccumulation=" + std::to_string(G)};
      if (!sharded) sets.insert(sets.end(), {"--set", std::string("execution.schedule=") + schedule});
      const Measure fast = best_of(o.runs, [&] { return run_binary(o.ipusim, run_args(o, mlp, sets), 600); });
      const std::string steps = steps_of(o);
      auto full_args = sets;
      full_args.push_back("--exact-full");
      const Measure full = run_binary(o.ipusim, run_args(o, mlp, full_args), 600);
      std::cout << "| " << schedule << " | " << G << " | " << steps << " | " << seconds(fast) << " | " << mib(fast)
                << " | " << seconds(full) << " |";
      if (!o.before.empty()) std::cout << " " << seconds(run_binary(o.before, run_args(o, mlp, sets), 120)) << " |";
      std::cout << "\n";
    }

  const std::string scenario = bert_heads_last(o);
  if (scenario.empty()) return;
  std::cout << "\n### BERT-Large (6,6,6,6, heads on the last IPU) at G = 65,536, `ipusim run --mode pipelined`\n\n"
            << "| schedule | steps simulated / total | steady state: wall (CPU) | peak RSS | `--exact-full` | peak RSS |\n"
            << "|---|---|---|---|---|---|\n";
  for (const char* schedule : {"popart", "gpipe", "1f1b"}) {
    std::cerr << "schedules: BERT-Large " << schedule << "\n";
    const std::vector<std::string> sets = {"--mode", "pipelined", "--set", "execution.gradientAccumulation=65536",
                                           "--set", std::string("execution.schedule=") + schedule};
    const Measure fast = best_of(o.runs, [&] { return run_binary(o.ipusim, run_args(o, scenario, sets), 900); });
    const std::string steps = steps_of(o);
    auto full_args = sets;
    full_args.push_back("--exact-full");
    const Measure full = run_binary(o.ipusim, run_args(o, scenario, full_args), 900);
    std::cout << "| " << schedule << " | " << steps << " | " << seconds(fast) << " | " << mib(fast) << " | "
              << seconds(full) << " | " << mib(full) << " |\n";
  }
}

// The placements the what-if schedules run on: the shipped BERT-Large scenario (heads back on
// IPU 0) for the zero-bubble ones; the same model re-annotated as 8 stages of 3 layers, stage
// k on IPU k mod 4 (interleaved) or min(k, 7-k) (the V), for the others; BERT-Base with its
// heads last for DualPipe. Empty when a model cannot be written.
struct PlacedSchedule {
  std::string placement, scenario, schedule;
};

std::vector<PlacedSchedule> what_if_rows(const Options& o) {
  const std::string bert = kSource + "/scenarios/bert-large-training.json";
  const std::string eight = (o.work / "bert-large-8-stages.json").string();
  if (!make_bert(eight, "3,3,3,3,3,3,3,3")) return {};
  auto placed = [&](const std::string& name, int (*ipu_of_stage)(int)) {
    Json model = Json::parse(std::ifstream(eight));
    for (Json& op : model.at("ops")) {
      const int k = op.at("virtualGraph").get<int>();
      op["pipelineStage"] = k;
      op["virtualGraph"] = ipu_of_stage(k);
    }
    const std::string path = (o.work / (name + "-model.json")).string();
    std::ofstream(path) << model.dump();
    return scenario_variant(o, "bert-large-training.json", name, [&](Json& d) {
      d["model"] = path;
      // 0.15 fits IPU 0's embedding and head together (0.25 does not; the run would then
      // add the memory advice's re-planned runs to the time).
      d["execution"]["availableMemoryProportion"] = 0.15;
    });
  };
  const std::string interleaved = placed("bert-large-interleaved", [](int k) { return k % 4; });
  const std::string v = placed("bert-large-v", [](int k) { return std::min(k, 7 - k); });
  // DualPipe needs one forward stage per IPU: BERT-Base with its heads last (two copies of
  // BERT-Large's weights do not fit an M2000), docs/schedules.md's DualPipe table.
  const std::string base_model = (o.work / "bert-base-heads-last-model.json").string();
  if (!make_bert(base_model, "2,3,3,4", " --hidden 768 --heads 12")) return {};
  const std::string base = scenario_variant(o, "bert-large-training.json", "bert-base-heads-last",
                                            [&](Json& d) { d["model"] = base_model; });
  const std::string shipped = "shipped (heads on IPU 0)", k_mod_4 = "8 stages, k mod 4", as_v = "8 stages as a V",
                    base_last = "BERT-Base, heads last";
  return {{shipped, bert, "popart"},        {shipped, bert, "zb-h1"},
          {shipped, bert, "zb-h2"},         {k_mod_4, interleaved, "popart"},
          {k_mod_4, interleaved, "interleaved-1f1b"}, {as_v, v, "popart"},
          {as_v, v, "zb-v"},                {as_v, v, "v-half"},
          {as_v, v, "v-min"},               {as_v, v, "dualpipev"},
          {base_last, base, "popart"},      {base_last, base, "dualpipe"}};
}

// The what-if schedules on BERT-Large at G = 2048 against popart's run on the same placement.
void what_if(const Options& o) {
  const std::vector<PlacedSchedule> rows = what_if_rows(o);
  if (rows.empty()) return;
  std::cout << "\n### What-if schedules: BERT-Large, 4 IPUs, G = 2048, `ipusim run --mode pipelined`\n\n"
            << "| placement | schedule | steps simulated / total | wall (CPU) | peak RSS | step (simulated) |\n"
            << "|---|---|---|---|---|---|\n";
  for (const auto& row : rows) {
    std::cerr << "what-if: " << row.placement << " " << row.schedule << "\n";
    const std::vector<std::string> sets = {"--mode", "pipelined", "--set", "execution.schedule=" + row.schedule};
    const Measure m = best_of(o.runs, [&] { return run_binary(o.ipusim, run_args(o, row.scenario, sets), 900); });
    std::string step = "-";
    try {
      const Json doc = Json::parse(std::ifstream(o.work / "out.json"));
      char text[32];
      std::snprintf(text, sizeof text, "%.4g s", doc.at("runs").at(0).at("stepTimeSeconds").get<double>());
      step = text;
    } catch (const std::exception&) {
    }
    std::cout << "| " << row.placement << " | " << row.schedule << " | " << steps_of(o) << " | " << seconds(m) << " | "
              << mib(m) << " | " << step << " |\n";
  }
}

// Every schedule at G = 10^6 against its own G = 2048 (issue 37: within 1.5x), by CPU time,
// the least of `runs`. TensorFlow's Grouped needs G a multiple of 2N (10 on the shipped
// placement's 5 stages), its Interleaved of N: 2040 for both. "out of memory" sets micro-batch 64 on the shipped scenario, which does not
// fit, so each run also evaluates the memory advice's fixes.
void depth(const Options& o) {
  std::vector<PlacedSchedule> rows = what_if_rows(o);
  if (rows.empty()) return;
  const std::string heads_last = bert_heads_last(o);
  if (heads_last.empty()) return;
  const std::string bert = kSource + "/scenarios/bert-large-training.json";
  for (const char* schedule : {"1f1b", "tf-grouped", "tf-sequential"})
    rows.push_back({"shipped (heads on IPU 0)", bert, schedule});
  for (const char* schedule : {"gpipe", "tf-interleaved"}) rows.push_back({"BERT-Large [6,6,6,6], heads last", heads_last, schedule});
  for (const char* schedule : {"popart", "1f1b", "tf-grouped", "zb-h1", "zb-h2"})
    rows.push_back({"shipped, out of memory", bert, schedule});
  std::cout << "\n### Every schedule at G = 10^6 against G = 2048: BERT-Large, 4 IPUs, `ipusim run --mode pipelined`, CPU\n\n"
            << "| placement | schedule | G = 2048 | G = 10^6 | ratio |\n|---|---|---|---|---|\n";
  auto least_cpu = [&](const PlacedSchedule& row, long long G) {
    std::vector<std::string> sets = {"--mode", "pipelined", "--set", "execution.schedule=" + row.schedule, "--set",
                                     "execution.gradientAccumulation=" + std::to_string(G)};
    if (row.placement == "shipped, out of memory") sets.insert(sets.end(), {"--set", "execution.microBatchSize=64"});
    Measure least;
    for (int i = 0; i < o.runs; ++i) {
      const Measure m = run_binary(o.ipusim, run_args(o, row.scenario, sets), 900);
      if (!m.ok) return m;
      if (!least.ok || m.cpu < least.cpu) least = m;
    }
    return least;
  };
  for (const auto& row : rows) {
    std::cerr << "depth: " << row.placement << " " << row.schedule << "\n";
    const bool tensorflow_lockstep = row.schedule == "tf-grouped" || row.schedule == "tf-interleaved";
    const long long small = tensorflow_lockstep ? 2040 : 2048;
    const Measure shallow = least_cpu(row, small), deep = least_cpu(row, 1000000);
    char cpu[2][32], ratio[32] = "-";
    std::snprintf(cpu[0], sizeof cpu[0], shallow.ok ? "%.2f s" : "failed", shallow.cpu);
    std::snprintf(cpu[1], sizeof cpu[1], deep.ok ? "%.2f s" : "refused", deep.cpu);
    if (shallow.ok && deep.ok) std::snprintf(ratio, sizeof ratio, "%.2fx", deep.cpu / shallow.cpu);
    std::cout << "| " << row.placement << " | " << row.schedule << (small != 2048 ? " (G 2040)" : "") << " | "
              << cpu[0] << " | " << cpu[1] << " | " << ratio << " |\n";
  }
}

void memory(const Options& o) {
  std::cout << "\n### Peak memory of `ipusim run` without `--trace`, BERT-Large on 4 IPUs\n\n"
            << "| mode | G | steps simulated / total | wall (CPU) | peak RSS |" << (o.before.empty() ? "" : " before: peak RSS |")
            << "\n|---|---|---|---|---|" << (o.before.empty() ? "" : "---|") << "\n";
  const std::string bert = kSource + "/scenarios/bert-large-training.json";
  for (const char* mode : {"pipelined", "sharded"})
    for (long long G : {2048LL, 65536LL, 131072LL, 1000000LL}) {
      std::cerr << "memory: " << mode << " G=" << G << "\n";
      const std::vector<std::string> sets = {"--mode", mode, "--set", "execution.gradientAccumulation=" + std::to_string(G)};
      const Measure m = run_binary(o.ipusim, run_args(o, bert, sets), 900);
      std::cout << "| " << mode << " | " << G << " | " << steps_of(o) << " | " << seconds(m) << " | " << mib(m) << " |";
      if (!o.before.empty()) std::cout << " " << (G <= 65536 ? mib(run_binary(o.before, run_args(o, bert, sets), 900)) : "-") << " |";
      std::cout << "\n";
    }
  // A schedule whose first stage runs ahead of the second for the whole step: its copies back up.
  std::cout << "\n### Peak memory where copies back up: 1F1B inference on the MLP, 2 replicas, micro-batch 1\n\n"
            << "| G | wall (CPU) | peak RSS |\n|---|---|---|\n";
  const std::string mlp = kSource + "/scenarios/mlp-inference.json";
  for (long long G : {16384LL, 262144LL, 1048576LL}) {
    std::cerr << "memory: mlp-inference 1f1b G=" << G << "\n";
    const std::vector<std::string> sets = {"--mode", "pipelined", "--set", "execution.schedule=1f1b", "--set",
                                           "execution.replicas=2", "--set", "execution.microBatchSize=1", "--set",
                                           "execution.batchesPerStep=" + std::to_string(G)};
    const Measure m = run_binary(o.ipusim, run_args(o, mlp, sets), 900);
    std::cout << "| " << G << " | " << seconds(m) << " | " << mib(m) << " |\n";
  }
}

// A model of `tensors` tensors written as a user's tool would (one line per tensor): the
// input, a chain of Add ops over the first 2,000 weights, the rest weights of their own.
std::string big_model(const Options& o, long tensors) {
  const std::string path = (o.work / ("model-" + std::to_string(tensors) + ".json")).string();
  std::ofstream f(path);
  f << "{\"name\": \"parse\", \"tensors\": {\n  \"x\": {\"shape\": [64], \"dtype\": \"float16\", \"kind\": \"input\"}";
  const long chain = std::min(2000L, tensors / 2);
  for (long i = 0; i < chain; ++i)
    f << ",\n  \"a" << i << "\": {\"shape\": [64], \"dtype\": \"float16\", \"kind\": \"activation\"}";
  for (long i = 0; i < tensors - 1 - chain; ++i)
    f << ",\n  \"w" << i << "\": {\"shape\": [64], \"dtype\": \"float16\", \"kind\": \"weight\"}";
  f << "\n}, \"ops\": [";
  for (long i = 0; i < chain; ++i)
    f << (i ? ",\n" : "\n") << "  {\"name\": \"add" << i << "\", \"type\": \"Add\", \"inputs\": [\""
      << (i ? "a" + std::to_string(i - 1) : std::string("x")) << "\", \"w" << i << "\"], \"outputs\": [\"a" << i << "\"]}";
  f << "\n]}\n";
  return path;
}

// Reading documents: `validate` on models of 10^4 to 9 x 10^5 tensors (issue 39: the parser
// was quadratic in the siblings of an object).
void parse(const Options& o) {
  std::cout << "\n### `ipusim validate` on large model files\n\n| tensors | file | wall (CPU) | peak RSS |"
            << (o.before.empty() ? "" : " before: wall (CPU) |") << "\n|---|---|---|---|" << (o.before.empty() ? "" : "---|")
            << "\n";
  for (long n : {10000L, 40000L, 200000L, 900000L}) {
    std::cerr << "parse: " << n << " tensors\n";
    const std::string model = big_model(o, n);
    const Measure m = best_of(o.runs, [&] { return run_binary(o.ipusim, {"validate", model}, 600); });
    std::cout << "| " << n << " | " << std::fixed << std::setprecision(1)
              << static_cast<double>(fs::file_size(model)) / 1e6 << " MB | " << seconds(m) << " | " << mib(m) << " |";
    std::cout.unsetf(std::ios::floatfield);
    if (!o.before.empty())
      std::cout << " " << (n <= 40000 ? seconds(run_binary(o.before, {"validate", model}, 600)) : "-") << " |";
    std::cout << "\n";
    fs::remove(model);
  }
}

void sweep(const Options& o) {
  // points/s of CPU: the points over half the CPU time, the rate two cores give when the
  // sweep has them to itself (wall time on a shared machine is not).
  std::cout << "\n### Sweeps, `ipusim sweep -j2`\n\n| sweep | points | wall (CPU) | points/s | points/s of CPU on 2 cores |"
            << (o.before.empty() ? "" : " before: wall | before: points/s of CPU |") << "\n|---|---|---|---|---|"
            << (o.before.empty() ? "" : "---|---|") << "\n";
  // The shipped MLP sweep, and the same over 400 depths (a steadier rate).
  Json big = Json::parse(std::ifstream(kSource + "/sweeps/mlp-depth.json"));
  big["name"] = "mlp-depth-400";
  big["scenario"] = kSource + "/scenarios/mlp-inference.json";
  big["axes"] = {{{"path", "execution.batchesPerStep"}, {"values", Json::array()}}};
  for (int d = 2; d < 402; ++d) big["axes"][0]["values"].push_back(d);
  const std::string big_file = (o.work / "mlp-depth-400.json").string();
  std::ofstream(big_file) << big.dump(2);
  struct SweepRun {
    std::string file;
    int points;
    bool fast;  // --fast: the exact evaluators answer what they can
  };
  for (const auto& [file, points, fast] : {SweepRun{kSource + "/sweeps/mlp-depth.json", 7, false}, SweepRun{big_file, 400, false},
                                           SweepRun{big_file, 400, true}}) {
    std::cerr << "sweep: " << file << (fast ? " --fast" : "") << "\n";
    auto once = [&, file = file, fast = fast](const std::string& binary) {
      const fs::path out = o.work / "sweep-out";
      fs::remove_all(out);
      std::vector<std::string> args = {"sweep", file, "-o", out.string(), "-j", "2"};
      if (fast) args.push_back("--fast");
      return run_binary(binary, args, 900);
    };
    const Measure m = best_of(o.runs, [&] { return once(o.ipusim); });
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.0f", points / m.wall);
    std::cout << "| " << fs::path(file).filename().string() << (fast ? " --fast" : "") << " | " << points << " | "
              << seconds(m) << " | " << rate << " |";
    std::snprintf(rate, sizeof rate, "%.0f", points / (m.cpu / 2));
    std::cout << " " << rate << " |";
    if (!o.before.empty() && fast) {
      std::cout << " - | - |";  // a binary from before --fast has no such flag
    } else if (!o.before.empty()) {
      const Measure b = best_of(o.runs, [&] { return once(o.before); });
      std::snprintf(rate, sizeof rate, "%.0f", points / (b.cpu / 2));
      std::cout << " " << seconds(b) << " | " << rate << " |";
    }
    std::cout << "\n";
  }
}

// ResNet-50 as MLPerf v2.0 ran it, one IPU per replica, Pod16 to Pod256 (issue 37's target: the
// Pod256 within 2x the CPU of the Pod16): the replicas' cost, with the IPUs simulated.
void replicas(const Options& o) {
  std::cout << "\n### ResNet-50, `ipusim run scenarios/validation/mlperf-v2.0-resnet50-podN.json`\n\n"
            << "| system | wall (CPU) | CPU / Pod16's | IPUs simulated | steps simulated / total |"
            << (o.before.empty() ? "" : " before: wall (CPU) |") << "\n|---|---|---|---|---|" << (o.before.empty() ? "" : "---|")
            << "\n";
  double pod16 = 0;
  for (int n : {16, 64, 128, 256}) {
    const std::string name = "mlperf-v2.0-resnet50-pod" + std::to_string(n);
    std::cerr << "replicas: " << name << "\n";
    const std::vector<std::string> args = run_args(o, kSource + "/scenarios/validation/" + name + ".json", {});
    const Measure m = best_of(o.runs, [&] { return run_binary(o.ipusim, args, 900); });
    if (n == 16) pod16 = m.cpu;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2fx", pod16 > 0 ? m.cpu / pod16 : 0.0);
    std::cout << "| Bow Pod" << n << " | " << seconds(m) << " | " << ratio << " | " << simulated_of(o, {"simulatedIpus"}) << " | "
              << steps_of(o) << " |";
    if (!o.before.empty()) std::cout << " " << seconds(best_of(o.runs, [&] { return run_binary(o.before, args, 900); })) << " |";
    std::cout << "\n";
  }
}

// `ipusim plan` over each shipped pod case's whole default space (issue 21's target: under
// a minute of CPU for BERT-Large or GPT-2 medium on a Pod16; issue 37's: under a minute for
// MLPerf BERT on the Bow Pod256), the engine runs included.
void plan(const Options& o) {
  std::cout << "\n### `ipusim plan SCENARIO --quiet`, the default space\n\n| scenario | wall (CPU) | peak RSS |"
            << (o.before.empty() ? "" : " before: wall (CPU) |") << "\n|---|---|---|" << (o.before.empty() ? "" : "---|") << "\n";
  for (const char* name : {"gpt2-medium-bow-pod16", "bert-large-pod16", "bert-large-mlperf-pod16", "bert-large-mlperf-pod64",
                           "validation/mlperf-v2.0-bert-closed-pod256"}) {
    std::cerr << "plan: " << name << "\n";
    const std::vector<std::string> args{"plan", kSource + "/scenarios/" + name + ".json", "--quiet"};
    const Measure m = best_of(o.runs, [&] { return run_binary(o.ipusim, args, 900); });
    std::cout << "| " << name << " | " << seconds(m) << " | " << mib(m) << " |";
    if (!o.before.empty()) std::cout << " " << seconds(best_of(o.runs, [&] { return run_binary(o.before, args, 900); })) << " |";
    std::cout << "\n";
  }
}

// ipusim's full simulation (engine and metrics, as `run --exact-full` does in its
// simulation process) against the raw baseline on the same schedule, alternating.
void baseline(const Options& o) {
  struct Case {
    const char* name;
    std::string scenario;
    std::vector<std::string> sets;
    ipusim::Mode mode;
  };
  const std::vector<Case> cases = {
      {"BERT-Large, 4 IPUs, popart, G = 2048", kSource + "/scenarios/bert-large-training.json", {}, ipusim::Mode::Pipelined},
      {"BERT-Large, POD16, popart, G = 512", kSource + "/scenarios/bert-large-pod16.json",
       {"execution.gradientAccumulation=512"}, ipusim::Mode::Pipelined},
      {"BERT-Large, 4 IPUs, sharded, G = 256", kSource + "/scenarios/bert-large-training.json",
       {"execution.gradientAccumulation=256"}, ipusim::Mode::Sharded},
      {"MLP, 1f1b, G = 16384", kSource + "/scenarios/mlp-training.json",
       {"execution.gradientAccumulation=16384", "execution.schedule=1f1b"}, ipusim::Mode::Pipelined},
      {"MLP, gpipe, G = 16384", kSource + "/scenarios/mlp-training.json",
       {"execution.gradientAccumulation=16384", "execution.schedule=gpipe"}, ipusim::Mode::Pipelined},
  };
  std::cout << "\n### Full simulation against raw SimGrid on the same schedule (engine process only)\n\n"
            << "| case | activities | ipusim `--exact-full`: wall (CPU) | raw SimGrid: wall (CPU) | rate ratio, wall | rate ratio, CPU | same step end and activities |\n"
            << "|---|---|---|---|---|---|---|\n";
  for (const Case& c : cases) {
    std::cerr << "baseline: " << c.name << "\n";
    std::vector<ipusim::Override> overrides;
    for (const std::string& s : c.sets) overrides.push_back(ipusim::parse_override(s));
    const ipusim::Scenario sc = ipusim::load_scenario(c.scenario, overrides);
    const ipusim::Plan plan = ipusim::make_plan(sc, ipusim::build_graph(sc.model));
    const ipusim::Schedule schedule = ipusim::make_schedule(c.mode, sc, plan);
    Measure ours, raw;
    for (int i = 0; i < o.runs; ++i) {
      const Measure a = in_child([&] {
        ipusim::MetricsAccumulator metrics(c.mode, schedule, sc.execution);
        ipusim::EngineOptions options;
        options.steady_state = false;
        metrics.finish(ipusim::run_engine_in_process(schedule, sc.hardware, metrics, options));
      });
      const Measure b = in_child([&] { bench::run_raw(schedule, sc.hardware); });
      if (!ours.ok || a.wall < ours.wall) ours = a;
      if (!raw.ok || b.wall < raw.wall) raw = b;
    }
    // The activity counts and simulated step ends, to show both did the same work.
    int fds[2];
    if (::pipe(fds) != 0) return;
    in_child([&] {
      const bench::RawResult r = bench::run_raw(schedule, sc.hardware);
      [[maybe_unused]] const auto n = ::write(fds[1], &r, sizeof r);
    });
    in_child([&] {
      ipusim::MetricsAccumulator metrics(c.mode, schedule, sc.execution);
      ipusim::EngineOptions options;
      options.steady_state = false;
      const ipusim::RunSummary s = ipusim::run_engine_in_process(schedule, sc.hardware, metrics, options);
      const bench::RawResult r{s.activities, s.end_time};
      [[maybe_unused]] const auto n = ::write(fds[1], &r, sizeof r);
    });
    bench::RawResult r{}, mine{};
    [[maybe_unused]] const auto n = ::read(fds[0], &r, sizeof r);
    [[maybe_unused]] const auto m = ::read(fds[0], &mine, sizeof mine);
    ::close(fds[0]);
    ::close(fds[1]);
    const bool same = r.activities == mine.activities && r.end_time == mine.end_time;
    char line[320];
    std::snprintf(line, sizeof line, "| %s | %llu | %s | %s | %.2f | %.2f | %s |\n", c.name,
                  static_cast<unsigned long long>(r.activities), seconds(ours).c_str(), seconds(raw).c_str(),
                  raw.wall / ours.wall, raw.cpu / ours.cpu,
                  same ? "yes" : ("no: " + std::to_string(mine.activities) + " / " + std::to_string(mine.end_time)).c_str());
    std::cout << line;
  }
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ipusim" && i + 1 < argc) o.ipusim = argv[++i];
    else if (a == "--before" && i + 1 < argc) o.before = argv[++i];
    else if (a == "--runs" && i + 1 < argc) o.runs = std::max(1, std::atoi(argv[++i]));
    else sections.push_back(a);
  }
  if (sections.empty())
    sections = {"breakdown", "systems", "replicas", "schedules", "what-if", "depth", "memory", "sweep", "plan", "baseline", "parse"};
  o.work = fs::temp_directory_path() / ("ipusim-bench-" + std::to_string(::getpid()));
  fs::create_directories(o.work);
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  std::cout << "ipusim benchmark: best of " << o.runs << " runs, times wall (CPU), load average " << load[0] << "\n";
  try {
    for (const std::string& s : sections) {
      if (s == "systems") systems(o);
      else if (s == "breakdown") breakdown(o);
      else if (s == "replicas") replicas(o);
      else if (s == "schedules") schedules(o);
      else if (s == "what-if") what_if(o);
      else if (s == "depth") depth(o);
      else if (s == "memory") memory(o);
      else if (s == "sweep") sweep(o);
      else if (s == "plan") plan(o);
      else if (s == "baseline") baseline(o);
      else if (s == "parse") parse(o);
      else throw std::runtime_error("unknown section " + s);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_pipeline: " << e.what() << "\n";
    fs::remove_all(o.work);
    return 2;
  }
  ::getloadavg(load, 3);
  std::cout << "\nload average at the end " << load[0] << "\n";
  fs::remove_all(o.work);
  return 0;
}
