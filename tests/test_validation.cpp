// ipusim validation: the published-results list, its checks, and the comparison it prints.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/simulate/simulation.hpp"
#include "sim/validation/published.hpp"
#include "cli_runner.hpp"
#include "sanitizer.hpp"
#include "support.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = IPUSIM_SOURCE_DIR;

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string mlp_entry(const std::string& id, double published) {
  return R"({"id": ")" + id + R"(", "workload": "MLP", "system": "IPU-M2000", "framework": "PopART", "sdk": "-",
             "published": )" + std::to_string(published) + R"(, "unit": "samples/s", "source": "a test",
             "configuration": "the shipped MLP", "scenario": ")" + (kSource / "scenarios/mlp-inference.json").string() +
         R"("})";
}

} // namespace

TEST_CASE("validation compares each entry's simulated throughput with its published one", "[validation]") {
  TempDir dir;
  const fs::path list = dir.root() / "list.json";
  // The shipped MLP inference scenario, simulated once for the reference figure.
  const Scenario sc = load_scenario((kSource / "scenarios/mlp-inference.json").string(), {});
  const double simulated = simulate(sc, {sc.execution.modes.back()}).runs.back().metrics.throughput_samples_per_s;
  write(list, R"({"entries": [)" + mlp_entry("half", simulated / 2) + "," + mlp_entry("double", simulated * 2) +
                  R"(], "ratios": [{"id": "double/half", "numerator": "double", "denominator": "half"}]})");
  const PublishedList l = load_published_list(list.string());
  const ValidationReport r = run_validation(l, {});
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].predicted == Approx(simulated).epsilon(1e-12));
  CHECK(r.rows[0].error == Approx(1.0).epsilon(1e-9));    // twice the "published" figure
  CHECK(r.rows[1].error == Approx(-0.5).epsilon(1e-9));   // half of it
  CHECK(r.mean_absolute_error == Approx(0.75).epsilon(1e-9));
  REQUIRE(r.worst_row());
  CHECK(r.worst_row()->entry->id == "half");
  REQUIRE(r.ratios.size() == 1);
  CHECK(r.ratios[0].published == Approx(4).epsilon(1e-9));
  CHECK(r.ratios[0].predicted == Approx(1).epsilon(1e-9));
  // --only runs the named entries.
  CHECK(run_validation(l, {"double"}).rows.size() == 1);
  CHECK(rule_of([&] { run_validation(l, {"nope"}); }) == "validation.unknown-entry");
  // --set reaches every entry's scenario: the FLOP-only model makes the same MLP faster.
  const ValidationReport compute = run_validation(l, {"half"}, {{"execution.costModel", "compute"}});
  REQUIRE(compute.rows.size() == 1);
  CHECK(compute.rows[0].predicted > simulated);
  const std::string table = render_validation_table(l, r);
  CHECK_THAT(table, Catch::Contains("+100.0 %") && Catch::Contains("-50.0 %") && Catch::Contains("mean absolute error 75.0 %"));
}

TEST_CASE("validation --decompose splits each step into per micro-batch and per step, exactly", "[validation]") {
  TempDir dir;
  const fs::path list = dir.root() / "list.json";
  const std::string scenario = (kSource / "scenarios/mlp-training.json").string();
  const Scenario sc = load_scenario(scenario, {});
  const RunMetrics m = simulate(sc, {sc.execution.modes.back()}).runs.back().metrics;
  std::string entry = mlp_entry("half", m.throughput_sequences_per_s / 2);
  entry.replace(entry.find("mlp-inference.json"), std::string("mlp-inference.json").size(), "mlp-training.json");
  write(list, R"({"entries": [)" + entry + "]}");
  const PublishedList l = load_published_list(list.string());
  const ValidationReport r = run_validation(l, {}, {}, true);
  REQUIRE(r.rows.size() == 1);
  REQUIRE(r.rows[0].split);
  const StepSplit& s = *r.rows[0].split;
  CHECK(s.micro_batches == static_cast<double>(m.micro_batches));
  CHECK(s.per_step_s + s.micro_batches * s.per_micro_batch_s == Approx(m.step_time_s).epsilon(1e-12));
  // The split is the engine's own: a run at 4x the micro-batches takes per_step + 4M per_micro_batch.
  const Scenario four = load_scenario(scenario, {{"execution.gradientAccumulation", 4 * sc.execution.gradient_accumulation}});
  const RunMetrics m4 = simulate(four, {four.execution.modes.back()}).runs.back().metrics;
  CHECK(m4.step_time_s == Approx(s.per_step_s + 4 * s.micro_batches * s.per_micro_batch_s).epsilon(1e-9));
  // Published at half the throughput: a step twice as long, all of the excess on the micro-batches.
  CHECK(s.published_step_s == Approx(2 * m.step_time_s).epsilon(1e-6));  // the list holds 6 decimals
  CHECK(s.implied_per_micro_batch_s == Approx((s.published_step_s - s.per_step_s) / s.micro_batches).epsilon(1e-12));
  CHECK(s.implied_per_micro_batch_s == Approx((2 * m.step_time_s - s.per_step_s) / s.micro_batches).epsilon(1e-5));
  CHECK_THAT(render_validation_markdown(l, r), Catch::Contains("| implied per micro-batch |"));
  CHECK_FALSE(run_validation(l, {}).rows[0].split);  // only when asked
}

TEST_CASE("a published-results list is checked like every input", "[validation]") {
  TempDir dir;
  const fs::path list = dir.root() / "list.json";
  write(list, R"({"entries": [)" + mlp_entry("a", 1) + "," + mlp_entry("a", 2) + "]}");
  CHECK(rule_of([&] { load_published_list(list.string()); }) == "validation.duplicate-id");
  write(list, R"({"entries": [)" + mlp_entry("a", 1) + R"(], "ratios": [{"id": "r", "numerator": "a", "denominator": "b"}]})");
  CHECK(rule_of([&] { load_published_list(list.string()); }) == "validation.unknown-entry");
  write(list, R"({"entries": [)" + mlp_entry("a", -3) + "]}");
  CHECK_FALSE(rule_of([&] { load_published_list(list.string()); }).empty());
  write(list, R"({"entries": []})");
  CHECK(rule_of([&] { load_published_list(list.string()); }) == "json.type");
}

TEST_CASE("validation finds the repository's list from any folder, and checks its output before the table",
          "[validation][cli]") {
  TempDir elsewhere;
  // From a folder outside the repository: the list is found beside the program, and an
  // unknown entry is refused naming it (before: file.missing for a relative default path).
  const Result found = run_ipusim({"validation", "--only", "no-such-entry"}, elsewhere.root().string());
  CHECK(found.exit_code == 2);
  CHECK_THAT(found.err, Catch::Matchers::Contains("scenarios/validation/published.json") &&
                            Catch::Matchers::Contains("[validation.unknown-entry]"));
  // An existing output is refused first (before: after the whole table, about 110 s of CPU).
  const std::string existing = elsewhere.path("table.md");
  std::ofstream(existing) << "the user's\n";
  const Result refused = run_ipusim({"validation", "--only", "no-such-entry", "-o", existing});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Matchers::Contains("[output.exists]"));
  std::ifstream kept(existing);
  CHECK(std::string(std::istreambuf_iterator<char>(kept), {}) == "the user's\n");
}

TEST_CASE("the shipped validation list loads, and its models are what the generators make", "[validation]") {
  const PublishedList l = load_published_list((kSource / "scenarios/validation/published.json").string());
  CHECK(l.entries.size() >= 9);
  for (const PublishedResult& e : l.entries) {
    INFO(e.id);
    CHECK(fs::exists(e.scenario));
    CHECK_FALSE(e.source.empty());
    CHECK_FALSE(e.configuration.empty());
    // Every scenario loads with every check a run makes.
    CHECK(rule_of([&] { load_scenario(e.scenario, {}); }).empty());
  }
  const std::string command = "cd '" + kSource.string() + "' && scripts/make_validation_models.sh --check";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("docs/validation.md shows what ipusim validation prints today", "[validation][costly]") {
  // The published comparison is documentation users cite: a change to the cost model that
  // moves a prediction must update the page (build/ipusim validation --markdown).
  const PublishedList l = load_published_list((kSource / "scenarios/validation/published.json").string());
  // Under AddressSanitizer the 128- and 256-IPU entries (ResNet-50's 25-50 weight updates of
  // 128-256 replicas: 36 of the release build's 40 s) would take over 25 minutes: there the
  // entries of up to 64 IPUs run, the same code paths; the release suite checks every line.
  std::vector<std::string> only;
#ifdef IPUSIM_TEST_ASAN
  for (const PublishedResult& e : l.entries)
    if (load_scenario(e.scenario, {}).hardware.ipu_count <= 64) only.push_back(e.id);
#endif
  const ValidationReport r = run_validation(l, only);
  CHECK(r.simulated == static_cast<int>(only.empty() ? l.entries.size() : only.size()));
  // Only the entries run, and scaling rows whose two entries ran, are rendered.
  const std::string table = render_validation_markdown(l, r);
  std::ifstream in(kSource / "docs/validation.md");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Compare the tables line by line, so a failure names the entry that moved.
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    INFO(line);
    CHECK(page.find(line) != std::string::npos);
  }
}

TEST_CASE("docs/validation.md's per-micro-batch split is what ipusim validation --decompose prints today",
          "[validation]") {
  // The BERT entries of up to 128 IPUs (seconds to simulate twice). Under AddressSanitizer the
  // Pod128 entry (its 16 replicas' rings share links with the pipeline copies, so each is simulated)
  // is left to the release suite: the entries of up to 64 IPUs take the same code paths. The page
  // holds every entry's row (build/ipusim validation --decompose --markdown).
  const PublishedList l = load_published_list((kSource / "scenarios/validation/published.json").string());
  std::vector<std::string> only{"bert-large-sl512-packed-bow-pod16", "bert-large-sl512-packed-bow-pod64",
                                "mlperf-v2.0-bert-closed-pod64",     "mlperf-v2.0-bert-closed-pod128",
                                "mlperf-v1.1-bert-closed-pod16",     "mlperf-v1.1-bert-closed-pod64"};
#ifdef IPUSIM_TEST_ASAN
  std::erase(only, "mlperf-v2.0-bert-closed-pod128");
#endif
  const ValidationReport r = run_validation(l, only, {}, true);
  const std::string table = render_validation_markdown(l, r);
  std::ifstream in(kSource / "docs/validation.md");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t rows = 0;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0 || line.find(" ms | ") == std::string::npos) continue;
    INFO(line);
    CHECK(page.find(line) != std::string::npos);
    ++rows;
  }
  CHECK(rows == only.size());
}

namespace {

std::string entry_of(const std::string& id, const fs::path& scenario) {
  return R"({"id": ")" + id + R"(", "workload": "MLP", "system": "IPU-M2000", "framework": "PopART", "sdk": "-",
             "published": 1000, "unit": "samples/s", "source": "a test", "configuration": "the shipped MLP",
             "scenario": ")" + scenario.string() + R"("})";
}

} // namespace

TEST_CASE("a validation entry whose worker process dies is failed, and the next entries run in a new worker",
          "[validation][cli]") {
  TempDir dir;
  // GPipe's two unequal stages at G = 10^6 are simulated nearly in full (many seconds): the
  // first entry is still running when its worker is killed. The MLP's own scenario follows twice.
  const std::string models = (kSource / "models/mlp.json").string(), config = (kSource / "configs/ipu-m2000.json").string();
  write(dir.root() / "slow.json", R"({"model": ")" + models + R"(", "config": ")" + config +
                                      R"(", "execution": {"mode": "pipelined", "schedule": "gpipe", "training": true,
                                      "microBatchSize": 16, "gradientAccumulation": 1000000}})");
  write(dir.root() / "list.json", R"({"entries": [)" + entry_of("slow", dir.root() / "slow.json") + "," +
                                      entry_of("first", kSource / "scenarios/mlp-training.json") + "," +
                                      entry_of("second", kSource / "scenarios/mlp-training.json") + R"(], "ratios": []})");
  const std::string out = (dir.root() / "out.json").string();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    const std::string list = (dir.root() / "list.json").string();
    ::execl(IPUSIM_BINARY, "ipusim", "validation", list.c_str(), "--json", "-o", out.c_str(), nullptr);
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (children_of(pid).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the slow entry's simulation
  const std::vector<pid_t> workers = children_of(pid);
  REQUIRE(workers.size() == 1);
  // A signal no handler takes (SimGrid's and AddressSanitizer's take SIGSEGV): the worker dies of it.
  ::kill(workers[0], SIGUSR1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);  // an entry failed, not for its input
  std::ifstream in(out);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const auto& rows = doc.at("entries");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].at("id") == "slow");
  CHECK_THAT(rows[0].at("failure").get<std::string>(), Catch::Matchers::Contains("died with signal " + std::to_string(SIGUSR1)));
  for (std::size_t i = 1; i < 3; ++i) {
    INFO(rows[i].dump());
    CHECK(rows[i].contains("predicted"));
    CHECK(!rows[i].contains("failure"));
  }
  CHECK(rows[1].at("predicted") == rows[2].at("predicted"));
}
