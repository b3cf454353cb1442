// The Chrome trace-event timeline (`ipusim run --trace`): processes, tracks and the
// times of its slices against hand-computed schedules on the zero-overhead system.
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/output/trace.hpp"
#include "sim/simulate/simulation.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

constexpr double ms = 1e-3;

// t0 = 1e6 FLOP / 1 GFLOP/s = 1 ms on IPU0, t1 = 3 ms on IPU1; the copy of a1 is
// 250 x 4 B = 1000 B over 1 GB/s = 1 us. batchesPerStep 4, no host streams, no syncs.
Scenario two_ipu_chain() {
  return make_scenario(chain_model({{0, 1e6}, {1, 3e6}}, 250), zero_overhead_config(2),
                       {{"training", false}, {"batchesPerStep", 4}, {"hostIo", false}, {"costModel", "compute"}});
}

struct Trace {
  Json doc;
  std::map<std::string, int> pid;                    // process name -> pid
  std::map<int, std::map<std::string, int>> tid;     // pid -> track name -> tid

  explicit Trace(Json d) : doc(std::move(d)) {
    for (const Json& e : doc.at("traceEvents")) {
      if (e.at("ph") != "M") continue;
      if (e.at("name") == "process_name") pid[e.at("args").at("name")] = e.at("pid");
      if (e.at("name") == "thread_name") tid[e.at("pid")][e.at("args").at("name")] = e.at("tid");
    }
  }
  std::vector<Json> slices(const std::string& process, const std::string& track = "") const {
    std::vector<Json> out;
    const int p = pid.at(process);
    for (const Json& e : doc.at("traceEvents"))
      if (e.at("ph") == "X" && e.at("pid") == p && (track.empty() || e.at("tid") == tid.at(p).at(track)))
        out.push_back(e);
    return out;
  }
  std::vector<Json> of_category(const std::string& process, const std::string& category) const {
    std::vector<Json> out;
    for (const Json& e : slices(process))
      if (e.at("cat") == category) out.push_back(e);
    return out;
  }
  Json named(const std::string& process, const std::string& name) const {
    Json found;
    for (const Json& e : slices(process))
      if (e.at("name") == name) {
        REQUIRE(found.is_null());  // names of compute slices are unique within a run
        found = e;
      }
    REQUIRE_FALSE(found.is_null());
    return found;
  }
  std::set<std::string> tracks(const std::string& process) const {
    std::set<std::string> out;
    for (const auto& [name, id] : tid.at(pid.at(process))) out.insert(name);
    return out;
  }
};

double ts(const Json& e) { return e.at("ts").get<double>(); }
double dur(const Json& e) { return e.at("dur").get<double>(); }

} // namespace

TEST_CASE("trace of a two-IPU chain: a process per mode, a track per IPU and used link", "[trace]") {
  const Scenario sc = two_ipu_chain();
  const Simulation sim = simulate(sc, {Mode::Sharded, Mode::Pipelined});
  const Json made = chrome_trace(sc, sim);
  // The file's text parses back to the same document.
  const Trace t(Json::parse(render_trace(made)));
  CHECK(t.doc == made);
  CHECK(t.doc.at("displayTimeUnit") == "ns");
  CHECK(t.doc.at("otherData").at("scenario") == "test");

  REQUIRE(t.pid.size() == 2);
  REQUIRE(t.pid.count("sharded") == 1);
  REQUIRE(t.pid.count("pipelined (popart)") == 1);
  const std::string P = "pipelined (popart)", S = "sharded";
  // No host streams, and nothing flows from IPU1 back to IPU0: one link track.
  CHECK(t.tracks(P) == std::set<std::string>{"IPU 0", "IPU 1", "link ipu0->ipu1"});
  CHECK(t.tracks(S) == std::set<std::string>{"IPU 0", "IPU 1", "link ipu0->ipu1"});

  // 2 stages x 4 micro-batches in each mode.
  CHECK(t.of_category(P, "compute").size() == 8);
  CHECK(t.of_category(S, "compute").size() == 8);

  SECTION("pipelined: lockstep cycles of 1 ms | 3 ms, each followed by a 1 us copy phase") {
    // Cycle starts: 0, 1.001, 4.002, 7.003, 10.004 ms; copy phases at their ends.
    const Json s1m0 = t.named(P, "stage 1 fwd mb 0");
    CHECK(s1m0.at("tid") == t.tid.at(t.pid.at(P)).at("IPU 1"));
    CHECK(ts(s1m0) == Approx(1001).epsilon(1e-12));
    CHECK(dur(s1m0) == Approx(3000).epsilon(1e-12));
    CHECK(s1m0.at("args") == Json{{"stage", 1}, {"microBatch", 0}, {"pass", "forward"}, {"work", "F"}, {"ipu", 1}});
    CHECK(s1m0.at("cname") == "good");
    CHECK(ts(t.named(P, "stage 0 fwd mb 3")) == Approx(7003).epsilon(1e-12));
    CHECK(dur(t.named(P, "stage 0 fwd mb 3")) == Approx(1000).epsilon(1e-12));
    CHECK(ts(t.named(P, "stage 1 fwd mb 3")) == Approx(10004).epsilon(1e-12));
    CHECK(t.named(P, "stage 1 fwd mb 3").at("cat") == "compute");

    // The copy phase runs in all 5 cycles, fill and flush included; the last one
    // (flush) carries no micro-batch: stage 0 has none left to send.
    const std::vector<Json> link = t.slices(P, "link ipu0->ipu1");
    REQUIRE(link.size() == 5);
    const double starts[] = {1000, 4001, 7002, 10003, 13004};
    for (std::size_t i = 0; i < link.size(); ++i) {
      CHECK(link[i].at("name") == "copy stage 0->1");
      CHECK(link[i].at("cat") == "copy");
      CHECK(ts(link[i]) == Approx(starts[i]).epsilon(1e-12));
      CHECK(dur(link[i]) == Approx(1).epsilon(1e-9));
      CHECK(link[i].at("args").at("bytes") == 1000.0);
      CHECK(link[i].at("args").at("src") == "ipu0");
      CHECK(link[i].at("args").at("dst") == "ipu1");
      if (i < 4) CHECK(link[i].at("args").at("microBatch") == static_cast<int>(i));
      else CHECK_FALSE(link[i].at("args").contains("microBatch"));
    }
    // The same copy phases on IPU0's track: it sends the 1000 B.
    std::vector<Json> phases;
    for (const Json& e : t.slices(P, "IPU 0"))
      if (e.at("name") == "copy phase") phases.push_back(e);
    REQUIRE(phases.size() == 5);
    CHECK(phases[0].at("cat") == "exchange");
    CHECK(phases[0].at("args").at("bytes") == 1000.0);
    CHECK(ts(phases[4]) == Approx(13004).epsilon(1e-12));
    CHECK(ts(phases[4]) + dur(phases[4]) == Approx(13.005 * ms * 1e6).epsilon(1e-12));
    CHECK(t.doc.at("otherData").at("stepTimeSeconds").at(P).get<double>() == Approx(13.005 * ms).epsilon(1e-12));

    // Every sync costs 0 s here and is left out: two per copy phase, per IPU.
    CHECK(t.of_category(P, "sync").empty());
    CHECK(t.doc.at("otherData").at("zeroDurationEventsLeftOut").at(P) == 2 * 5 * 2);
  }

  SECTION("sharded: one micro-batch at a time, one IPU busy at a time") {
    // Micro-batch m starts at m x (1 ms + 1 us + 3 ms) = m x 4001 us.
    CHECK(ts(t.named(S, "stage 0 fwd mb 1")) == Approx(4001).epsilon(1e-12));
    CHECK(ts(t.named(S, "stage 1 fwd mb 1")) == Approx(5002).epsilon(1e-12));
    CHECK(ts(t.named(S, "stage 1 fwd mb 3")) == Approx(3 * 4001 + 1001).epsilon(1e-12));
    std::vector<Json> compute = t.of_category(S, "compute");
    std::sort(compute.begin(), compute.end(), [](const Json& a, const Json& b) { return ts(a) < ts(b); });
    std::set<int> ipus;
    for (std::size_t i = 0; i < compute.size(); ++i) {
      ipus.insert(compute[i].at("args").at("ipu").get<int>());
      if (i > 0) CHECK(ts(compute[i]) >= ts(compute[i - 1]) + dur(compute[i - 1]) - 1e-6);
    }
    CHECK(ipus == std::set<int>{0, 1});
    const std::vector<Json> link = t.slices(S, "link ipu0->ipu1");
    REQUIRE(link.size() == 4);
    CHECK(ts(link[3]) == Approx(3 * 4001 + 1000).epsilon(1e-12));
    CHECK(link[3].at("args").at("microBatch") == 3);
    // Per micro-batch: 2 syncs framing the copy phase, 1 after stage 1; per IPU.
    CHECK(t.doc.at("otherData").at("zeroDurationEventsLeftOut").at(S) == 3 * 4 * 2);
  }

  SECTION("slices are ordered by process, track and start") {
    const Json* previous = nullptr;
    for (const Json& e : t.doc.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      if (previous) {
        const auto key = [](const Json& x) {
          return std::make_tuple(x.at("pid").get<int>(), x.at("tid").get<int>(), ts(x));
        };
        CHECK(key(*previous) <= key(e));
      }
      previous = &e;
    }
  }
}

TEST_CASE("trace flow arrows join each copy's send and receive, and link load is a counter", "[trace]") {
  const Scenario sc = two_ipu_chain();
  const Simulation sim = simulate(sc, {Mode::Sharded, Mode::Pipelined});
  const Trace t(chrome_trace(sc, sim));
  for (const std::string process : {"pipelined (popart)", "sharded"}) {
    INFO(process);
    const int pid = t.pid.at(process);
    const int ipu0 = t.tid.at(pid).at("IPU 0"), ipu1 = t.tid.at(pid).at("IPU 1");
    std::map<std::int64_t, Json> starts, finishes;
    std::vector<Json> counter;
    for (const Json& e : t.doc.at("traceEvents")) {
      if (e.at("pid") != pid) continue;
      if (e.at("ph") == "s") starts[e.at("id").get<std::int64_t>()] = e;
      if (e.at("ph") == "f") finishes[e.at("id").get<std::int64_t>()] = e;
      if (e.at("ph") == "C") counter.push_back(e);
    }
    // Four micro-batches cross ipu0->ipu1 (the pipelined flush's empty copy carries none):
    // 1000 B in 1 us each, sent from IPU 0's track, received on IPU 1's.
    REQUIRE(starts.size() == 4);
    REQUIRE(finishes.size() == 4);
    CHECK(t.doc.at("otherData").at("copyFlows").at(process) == 4);
    const bool pipelined = process != "sharded";
    std::size_t mb = 0;
    for (const auto& [id, s] : starts) {
      REQUIRE(finishes.count(id) == 1);
      const Json& f = finishes.at(id);
      CHECK(s.at("tid") == ipu0);
      CHECK(f.at("tid") == ipu1);
      CHECK(f.at("bp") == "e");
      CHECK(s.at("name") == "copy stage 0->1 mb " + std::to_string(mb));
      // Pipelined: the copy phases after cycles 0..3 start at 1000, 4001, 7002, 10003 us;
      // sharded: at m x 4001 + 1000 us.
      const double sent = pipelined ? 1000 + 3001.0 * static_cast<double>(mb) : 4001.0 * static_cast<double>(mb) + 1000;
      CHECK(ts(s) == Approx(sent).epsilon(1e-12));
      CHECK(ts(f) == Approx(sent + 1).epsilon(1e-9));
      ++mb;
    }
    if (pipelined) {
      // Idle by cause: IPU 0 (1 ms of work a 3 ms cycle) waits 2 ms in cycles 1-3
      // (imbalance) and 3 ms in the flush, 1 ms of it the work its missing stage 0 would
      // do (fill/flush); IPU 1 waits out cycle 0 (1 ms, fill). Shares of 2 x 13.005 ms.
      const Json& idle = t.doc.at("otherData").at("idleSeconds").at(process);
      REQUIRE(idle.size() == 2);
      CHECK(idle[0].at("ipu") == 0);
      CHECK(idle[0].at("fillFlushSeconds").get<double>() == Approx(1 * ms).epsilon(1e-9));
      CHECK(idle[0].at("imbalanceSeconds").get<double>() == Approx(8 * ms).epsilon(1e-9));
      CHECK(idle[1].at("fillFlushSeconds").get<double>() == Approx(1 * ms).epsilon(1e-9));
      CHECK(idle[1].at("imbalanceSeconds").get<double>() == Approx(0).margin(1e-12));
      std::string label;
      for (const Json& e : t.doc.at("traceEvents"))
        if (e.at("ph") == "M" && e.at("name") == "process_labels" && e.at("pid") == pid)
          label = e.at("args").at("labels");
      INFO(label);
      CHECK(label.find("7.7 % fill and flush, 30.8 % imbalance") != std::string::npos);  // 2 and 8 of 26.01 ms

      // The same attribution as idle slices on the IPU tracks, named by cause: IPU 1
      // waits out the fill (0-1000 us); IPU 0 waits 2 ms for IPU 1 after each of its
      // cycles 1-3 and the whole flush, its first 1000 us fill/flush.
      std::vector<std::tuple<std::string, double, double>> idle0, idle1;
      for (const std::string track : {"IPU 0", "IPU 1"})
        for (const Json& e : t.slices(process, track))
          if (e.at("cat").get<std::string>().rfind("idle-", 0) == 0)
            (track == "IPU 0" ? idle0 : idle1).emplace_back(e.at("name"), ts(e), ts(e) + dur(e));
      INFO("IPU 0 idle slices: " << idle0.size());
      REQUIRE(idle1.size() == 1);
      CHECK(std::get<0>(idle1[0]) == "idle: fill and flush");
      CHECK(std::get<1>(idle1[0]) == Approx(0).margin(1e-9));
      CHECK(std::get<2>(idle1[0]) == Approx(1000).epsilon(1e-12));
      const std::vector<std::tuple<std::string, double, double>> expected = {
          {"idle: imbalance", 2001, 4001},        {"idle: imbalance", 5002, 7002},
          {"idle: imbalance", 8003, 10003},       {"idle: fill and flush", 10004, 11004},
          {"idle: imbalance", 11004, 13004}};
      REQUIRE(idle0.size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(std::get<0>(idle0[i]) == std::get<0>(expected[i]));
        CHECK(std::get<1>(idle0[i]) == Approx(std::get<1>(expected[i])).epsilon(1e-12));
        CHECK(std::get<2>(idle0[i]) == Approx(std::get<2>(expected[i])).epsilon(1e-12));
      }
    }
    // The link's load: 1000 B / 1 us = 1e9 B/s during each transfer (5 pipelined, the
    // flush's included; 4 sharded), 0 between them.
    REQUIRE(counter.size() == (pipelined ? 10u : 8u));
    for (std::size_t i = 0; i < counter.size(); ++i) {
      CHECK(counter[i].at("name") == "link ipu0->ipu1 load");
      CHECK(counter[i].at("args").at("bytesPerSecond").get<double>() == Approx(i % 2 == 0 ? 1e9 : 0.0).margin(1e-3));
    }
  }
}

TEST_CASE("trace of two-IPU training: backward stages, gradient copies, weight updates", "[trace]") {
  // As in test_closed_forms: IPU0 1 ms forward, 2 ms backward; IPU1 (loss stage) 3 ms
  // forward + 6 ms backward; updates of 2 us (IPU0) and 1 us (IPU1); copies of 1 us.
  const Json model = two_layer_model(1e6, 3e6);
  const Scenario sc = make_scenario(model, zero_overhead_config(2),
                                    {{"training", true}, {"gradientAccumulation", 4}, {"hostIo", false}, {"costModel", "compute"}});
  const Simulation sim = simulate(sc, {Mode::Pipelined});
  const Trace t(chrome_trace(sc, sim));
  const std::string P = "pipelined (popart)";
  REQUIRE(t.pid.size() == 1);
  CHECK(t.tracks(P) == std::set<std::string>{"IPU 0", "IPU 1", "link ipu0->ipu1", "link ipu1->ipu0"});
  // 4 micro-batches x (stage 0 fwd, stage 1 fwd, stage 1 bwd, stage 2 bwd) + 2 updates.
  CHECK(t.of_category(P, "compute").size() == 4 * 4 + 2);

  // Cycles (IPU0 | IPU1): c0 1 | -; c1 1 | 3+6; c2 1+2 | 9; ... each + 1 us copy phase.
  CHECK(ts(t.named(P, "stage 1 fwd mb 0")) == Approx(1001).epsilon(1e-12));
  CHECK(ts(t.named(P, "stage 1 bwd mb 0")) == Approx(4001).epsilon(1e-12));
  CHECK(dur(t.named(P, "stage 1 bwd mb 0")) == Approx(6000).epsilon(1e-12));
  // Cycle 2 starts at 10.002 ms: IPU0 runs stage 0 for mb 2, then stage 2 for mb 0.
  CHECK(ts(t.named(P, "stage 2 bwd mb 0")) == Approx(11002).epsilon(1e-12));
  CHECK(t.named(P, "stage 2 bwd mb 0").at("args").at("pass") == "backward");

  const std::vector<Json> gradients = t.slices(P, "link ipu1->ipu0");
  REQUIRE(gradients.size() == 6);  // a copy phase in each of G+S-1 = 6 cycles
  CHECK(gradients[0].at("name") == "copy stage 1->2");
  CHECK(gradients[0].at("args").at("gradient") == true);
  CHECK_FALSE(gradients[0].at("args").contains("microBatch"));  // cycle 0: stage 1 has done nothing yet
  CHECK(ts(gradients[1]) == Approx(10001).epsilon(1e-12));
  CHECK(gradients[1].at("args").at("microBatch") == 0);

  // Serial weight update after the 6 cycles (39 ms + 6 us): IPU0 then IPU1.
  std::vector<Json> updates;
  for (const Json& e : t.of_category(P, "compute"))
    if (e.at("name") == "weight update") updates.push_back(e);
  REQUIRE(updates.size() == 2);
  CHECK(updates[0].at("args") == Json{{"pass", "update"}, {"ipu", 0}});
  CHECK(ts(updates[0]) == Approx(39006).epsilon(1e-12));
  CHECK(dur(updates[0]) == Approx(2).epsilon(1e-9));
  CHECK(ts(updates[1]) == Approx(39008).epsilon(1e-12));
  CHECK(dur(updates[1]) == Approx(1).epsilon(1e-9));
}

TEST_CASE("the same simulation gives the same trace, byte for byte", "[trace]") {
  const Scenario sc = two_ipu_chain();
  const std::string first = render_trace(chrome_trace(sc, simulate(sc, {Mode::Sharded, Mode::Pipelined})));
  const std::string second = render_trace(chrome_trace(sc, simulate(sc, {Mode::Sharded, Mode::Pipelined})));
  CHECK(first == second);
}

namespace {

// A fresh directory under the system's temporary directory, removed at the end.

int run_ipusim(const std::string& args, const TempDir& dir) {
  const std::string command = std::string("'") + IPUSIM_BINARY + "' " + args + " > '" + (dir.root() / "stdout").string() +
                              "' 2> '" + (dir.root() / "stderr").string() + "'";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

} // namespace

TEST_CASE("ipusim run --trace writes a trace beside the report, honouring --force", "[trace][cli]") {
  const TempDir dir;
  const std::string scenario = std::string("'") + IPUSIM_SOURCE_DIR + "/scenarios/mlp-inference.json'";
  const std::string trace = "'" + (dir.root() / "mlp.trace.json").string() + "'";
  const std::string report = "'" + (dir.root() / "report.json").string() + "'";

  REQUIRE(run_ipusim("run " + scenario + " --trace " + trace + " --json -o " + report, dir) == 0);
  const Json doc = read_json(dir.root() / "mlp.trace.json");
  REQUIRE(doc.contains("traceEvents"));
  std::size_t slices = 0;
  std::set<std::string> processes;
  for (const Json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") ++slices;
    if (e.at("name") == "process_name") processes.insert(e.at("args").at("name").get<std::string>());
  }
  CHECK(slices > 0);
  CHECK(processes == std::set<std::string>{"sharded", "pipelined (popart)"});
  CHECK(doc.at("otherData").at("scenario") == "mlp-inference");
  // The report was written too, and agrees on the step times.
  const Json rep = read_json(dir.root() / "report.json");
  REQUIRE(rep.at("runs").size() == 2);
  CHECK(rep.at("runs")[0].at("stepTimeSeconds") == doc.at("otherData").at("stepTimeSeconds").at("sharded"));

  // mlp.json: two stages on two IPUs, one forward copy, 64 micro-batches per step: 64
  // flow arrows per mode, each an "s" and an "f" of one id.
  std::map<std::string, std::size_t> flow_events;
  std::set<std::int64_t> ids;
  for (const Json& e : doc.at("traceEvents"))
    if (e.at("ph") == "s" || e.at("ph") == "f") {
      ++flow_events[e.at("ph").get<std::string>()];
      ids.insert(e.at("id").get<std::int64_t>());
    }
  CHECK(flow_events["s"] == 2 * 64);
  CHECK(flow_events["f"] == 2 * 64);
  CHECK(ids.size() == 2 * 64);
  CHECK(doc.at("otherData").at("copyFlows") == Json{{"sharded", 64}, {"pipelined (popart)", 64}});

  // Idle slices by cause add up to each IPU's attribution in the run document, here and
  // for an asynchronous schedule (1F1B, whose receives wait for copies) in training.
  const auto check_idle = [](const Json& timeline, const Json& run_doc) {
    std::map<std::string, std::string> process_of_pid;
    for (const Json& e : timeline.at("traceEvents"))
      if (e.at("ph") == "M" && e.at("name") == "process_name")
        process_of_pid[e.at("pid").dump()] = e.at("args").at("name");
    std::map<std::string, std::map<int, std::map<std::string, double>>> sums;  // process -> ipu -> cause -> s
    for (const Json& e : timeline.at("traceEvents"))
      if (e.at("ph") == "X" && e.at("cat").get<std::string>().rfind("idle-", 0) == 0)
        sums[process_of_pid[e.at("pid").dump()]][e.at("args").at("ipu").get<int>()][e.at("cat")] +=
            e.at("dur").get<double>() * 1e-6;
    std::size_t checked = 0;
    for (const Json& r : run_doc.at("runs")) {
      const std::string process =
          r.at("mode") == "pipelined" ? "pipelined (" + r.at("schedule").get<std::string>() + ")" : "sharded";
      for (const Json& m : r.at("ipus"))
        for (const auto& [cause, key] : std::vector<std::pair<std::string, std::string>>{
                 {"idle-fill-flush", "fillFlushSeconds"}, {"idle-imbalance", "imbalanceSeconds"},
                 {"idle-copy-wait", "copyWaitSeconds"}, {"idle-update-wait", "updateWaitSeconds"},
                 {"idle-turn-wait", "turnWaitSeconds"}}) {
          INFO(process << " IPU " << m.at("id") << " " << cause);
          CHECK(sums[process][m.at("id").get<int>()][cause] ==
                Approx(m.at("idle").at(key).get<double>()).epsilon(1e-6).margin(1e-12));
          ++checked;
        }
    }
    CHECK(checked >= 2 * 2 * 5);
  };
  check_idle(doc, rep);
  const std::string training = std::string("'") + IPUSIM_SOURCE_DIR + "/scenarios/mlp-training.json'";
  REQUIRE(run_ipusim("run " + training + " --set execution.schedule=1f1b --trace " + trace + " --json -o " + report +
                         " --force",
                     dir) == 0);
  check_idle(read_json(dir.root() / "mlp.trace.json"), read_json(dir.root() / "report.json"));
  REQUIRE(run_ipusim("run " + scenario + " --trace " + trace + " --json -o " + report + " --force", dir) == 0);

  // An existing trace is kept unless --force; the table on standard output works too.
  const auto size = std::filesystem::file_size(dir.root() / "mlp.trace.json");
  std::filesystem::resize_file(dir.root() / "mlp.trace.json", 0);
  CHECK(run_ipusim("run " + scenario + " --trace " + trace, dir) == 2);
  CHECK(std::filesystem::file_size(dir.root() / "mlp.trace.json") == 0);
  CHECK(run_ipusim("run " + scenario + " --trace " + trace + " --force", dir) == 0);
  CHECK(std::filesystem::file_size(dir.root() / "mlp.trace.json") == size);
  CHECK(std::filesystem::file_size(dir.root() / "stdout") > 0);
  // One file cannot be both.
  CHECK(run_ipusim("run " + scenario + " --trace " + trace + " -o " + trace + " --force", dir) == 2);
}
