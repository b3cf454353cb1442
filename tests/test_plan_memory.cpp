// The planner's memory estimate: the bound of each table against the bytes the table holds
// when every block has been asked for, and `plan` announcing it and refusing a search too
// large for the machine (issue 23: "plan announces and bounds its memory like run").
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/io/scenario_loader.hpp"
#include "sim/search/transfer_timer.hpp"
#include "sim/search/planner.hpp"
#include "sim/search/split_costs.hpp"
#include "sim/search/split_search.hpp"
#include "cli_runner.hpp"
#include "temp_dir.hpp"

using namespace ipusim;
using namespace ipusim::test;

namespace {

const std::vector<double> kAmps{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6};

// Asks the table for every block alone, with and without recomputation, at every value, and
// for IPU 0's blocks with the heads beside them (heads on IPU 0): all it can hold.
void fill(const SplitCosts& table) {
  const int U = table.units();
  std::vector<int> every(kAmps.size());
  for (std::size_t a = 0; a < every.size(); ++a) every[a] = static_cast<int>(a);
  for (bool recompute : {false, true}) {
    MemorySettings settings;
    settings.recompute = recompute;
    for (int first = 0; first < U; ++first)
      for (int last = first; last < U; ++last) {
        IpuBlocks alone;
        alone.count = 1, alone.block[0] = {first, last}, alone.stash_depth[0] = 2;
        table.footprints(alone, settings, every);
      }
    for (int last = 0; last + 1 < U; ++last) {
      IpuBlocks with_heads;
      with_heads.count = 2, with_heads.block[0] = {0, last}, with_heads.block[1] = {U - 1, U - 1};
      with_heads.stash_depth[0] = 3, with_heads.stash_depth[1] = 1, with_heads.loss[1] = true;
      table.footprints(with_heads, settings, every);
    }
  }
}

} // namespace

TEST_CASE("Plan memory: a cost table filled in full holds less than its bound (BERT-tiny, BERT-Large, ResNet-50)",
          "[planner]") {
  for (const char* name : {"bert-tiny-training", "bert-large-pod16", "resnet50-training"}) {
    INFO(name);
    const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/" + name + ".json");
    const LayerStructure layers = detect_layers(sc.model);
    const SplitCosts table(sc, layers, sc.execution.micro_batch_size, true, kAmps);
    REQUIRE(table.usable());
    const double empty = table.bytes_held();
    fill(table);
    const double full = table.bytes_held();
    const double bound = SplitCosts::memory_bound(sc.model, layers, kAmps.size());
    // The fill reached the blocks' lists (BERT-Large: 26 units, 351 blocks of up to 554 ops).
    CHECK(full > empty);
    CHECK(full <= bound);
  }
}

TEST_CASE("Plan memory: a refined point holds less than its bound (BERT-Large on 4 and 8 IPUs)", "[planner]") {
  const Scenario sc = load_scenario(std::string(IPUSIM_SOURCE_DIR) + "/scenarios/bert-large-pod16.json");
  const LayerStructure layers = detect_layers(sc.model);
  const int units = static_cast<int>(layers.names.size()) + 2;
  PlanRequest request;
  request.amps = kAmps;
  const PlanSpace space = make_plan_space(sc, request, static_cast<int>(layers.names.size()));
  const SplitCosts table(sc, layers, 1, true, space.amps);
  RouteTable routes(sc.hardware);
  for (int ipus : {4, 8})
    for (bool heads_on_last : {true, false}) {
      INFO(ipus << " IPUs, heads on last " << heads_on_last);
      PlanSettings st;
      st.ipus = ipus, st.micro_batch = 1, st.depth = 64, st.heads_on_last = heads_on_last;
      SplitSearch point(sc, space, table, st, Objective::Throughput, true, routes);
      const double resident = point.bytes_held();
      CHECK(resident <= SplitSearch::resident_bound(ipus + 1, units, space.amps.size()));
      SearchCounts counts;
      point.refine(counts);
      CHECK(point.bytes_held() > resident);
      CHECK(point.bytes_held() <= SplitSearch::resident_bound(ipus + 1, units, space.amps.size()) +
                                      SplitSearch::tables_bound(ipus + 1, units, space.amps.size()));
    }
}

TEST_CASE("plan: announces its search's memory and its engine runs', and refuses a search beyond the machine",
          "[planner][cli]") {
  const Result ok = run_ipusim({"plan", std::string(IPUSIM_SOURCE_DIR) + "/scenarios/mlp-training.json", "--top", "1",
                                "--quiet"});
  REQUIRE(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("memory: the search needs at most ") &&
                         Catch::Contains("memory: each engine run above needs at most "));

  // 3,000 layers: the block tables alone grow with the cube of the units (every block lists
  // its ops), far beyond any machine's memory; refused at once, pointing at the model's ops.
  TempDir dir;
  nlohmann::json tensors = {{"x", {{"shape", {64}}, {"dtype", "float16"}, {"kind", "input"}}}};
  nlohmann::json ops = nlohmann::json::array();
  std::string previous = "x";
  for (int i = 0; i < 3000; ++i) {
    const std::string w = "W" + std::to_string(i), h = "h" + std::to_string(i);
    tensors[w] = {{"shape", {64, 64}}, {"dtype", "float16"}, {"kind", "weight"}};
    tensors[h] = {{"shape", {64}}, {"dtype", "float16"}, {"kind", "activation"}};
    ops.push_back({{"name", "layer" + std::to_string(i) + "/MatMul"}, {"type", "MatMul"}, {"inputs", {previous, w}},
                   {"outputs", {h}}});
    previous = h;
  }
  dir.write("deep.json", nlohmann::json{{"name", "deep"}, {"tensors", tensors}, {"ops", ops}}.dump());
  dir.write("s.json", nlohmann::json{{"model", "deep.json"},
                                     {"config", std::string(IPUSIM_SOURCE_DIR) + "/configs/ipu-pod16.json"},
                                     {"execution", {{"microBatchSize", 1}}}}
                          .dump());
  const Result big = run_ipusim({"plan", dir / "s.json", "--quiet", "--ipus", "4", "--replicas", "1"});
  CHECK(big.exit_code == 2);
  CHECK_THAT(big.err, Catch::Contains("deep.json: at /ops") && Catch::Contains("[plan.too-large]"));
  CHECK(big.out.empty());
}
