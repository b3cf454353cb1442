// The shipped configs (configs/**/*.json): every one loads and routes, every number in
// it is cited, and the catalogue and topologies match figures computed by hand
// (docs/systems.md draws each topology).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "sim/io/hardware_loader.hpp"
#include "sim/plan/routes.hpp"

using namespace ipusim;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kConfigs = fs::path(IPUSIM_SOURCE_DIR) / "configs";

std::string config(const std::string& relative) { return (kConfigs / relative).string(); }

std::vector<fs::path> all_configs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

// The document the loader sees, "extends" merged in.
Json resolved(const fs::path& path) { return ipusim::resolve_config_extends(read_json(path), path.string()); }

std::string escape(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// JSON pointers of every number in `doc` outside "sources".
std::vector<std::string> numeric_leaves(const Json& doc) {
  std::vector<std::string> out;
  std::function<void(const Json&, const std::string&)> walk = [&](const Json& j, const std::string& at) {
    if (j.is_number()) out.push_back(at);
    else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it)
        if (!(at.empty() && it.key() == "sources")) walk(it.value(), at + "/" + escape(it.key()));
    } else if (j.is_array()) {
      for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], at + "/" + std::to_string(i));
    }
  };
  walk(doc, "");
  return out;
}

// A citation at the pointer itself or at one of its ancestors ("/links" covers "/links/3/ipus/0").
bool cited(const Json& sources, std::string pointer) {
  while (!pointer.empty()) {
    if (sources.contains(pointer)) return true;
    pointer.erase(pointer.rfind('/'));
  }
  return false;
}

double peak_f16(const IpuSpec& ipu) { return static_cast<double>(ipu.tiles) * ipu.flops_per_cycle_per_tile_f16 * ipu.clock_hz; }
double peak_f32(const IpuSpec& ipu) { return static_cast<double>(ipu.tiles) * ipu.flops_per_cycle_per_tile_f32 * ipu.clock_hz; }

struct System {
  HardwareConfig hw;
  std::vector<std::vector<Route>> routes;
  explicit System(const std::string& relative) : hw(load_hardware(config(relative))), routes(compute_routes(hw)) {}
  std::size_t hops(int a, int b) const { return routes.at(a).at(b).size(); }
  std::size_t diameter() const {
    std::size_t d = 0;
    for (const auto& row : routes)
      for (const auto& r : row) d = std::max(d, r.size());
    return d;
  }
  const LinkSpec& link_of(const Hop& h) const { return hw.links.at(h.link); }
};

} // namespace

TEST_CASE("every shipped config loads and every IPU reaches every other", "[configs]") {
  const auto files = all_configs();
  // The catalogue, the M2000 and the generated systems are all there.
  std::set<std::string> names;
  for (const auto& f : files) names.insert(fs::relative(f, kConfigs).generic_string());
  for (const char* expected : {"ipus/gc2.json", "ipus/gc200.json", "ipus/bow.json", "ipus/c600.json", "ipu-m2000.json",
                               "ipu-pod16.json", "ipu-pod64.json", "ipu-pod128.json", "dss8440-c2.json"})
    CHECK(names.count(expected) == 1);
  for (const auto& f : files) {
    INFO(f.string());
    const HardwareConfig hw = load_hardware(f.string());
    // hardware_from_json on the document read by hand gives the same system.
    CHECK(hardware_from_json(read_json(f), f.string()).ipu_count == hw.ipu_count);
    const auto routes = compute_routes(hw);
    REQUIRE(routes.size() == static_cast<std::size_t>(hw.ipu_count));
    for (int a = 0; a < hw.ipu_count; ++a)
      for (int b = 0; b < hw.ipu_count; ++b) CHECK(routes[a][b].empty() == (a == b));
  }
}

TEST_CASE("every number in every shipped config is cited", "[configs]") {
  for (const auto& f : all_configs()) {
    INFO(f.string());
    // After "extends" is resolved: each figure the loader sees has a citation at its pointer
    // or an ancestor's (the base's citations come along with its figures).
    const Json merged = resolved(f);
    REQUIRE(merged.contains("sources"));
    for (const auto& pointer : numeric_leaves(merged)) {
      INFO("merged figure " << pointer);
      CHECK(cited(merged["sources"], pointer));
    }
    // A file that sets a figure cites it itself, so an override never inherits the citation
    // of the value it replaced.
    const Json own = read_json(f);
    const Json own_sources = own.value("sources", Json::object());
    for (const auto& pointer : numeric_leaves(own)) {
      INFO("own figure " << pointer);
      CHECK(cited(own_sources, pointer));
    }
  }
}

TEST_CASE("IPU catalogue: single-IPU systems with the published figures", "[configs]") {
  for (const char* f : {"ipus/gc2.json", "ipus/gc200.json", "ipus/bow.json", "ipus/c600.json"}) {
    INFO(f);
    const HardwareConfig hw = load_hardware(config(f));
    CHECK(hw.ipu_count == 1);
    CHECK(hw.links.empty());
    CHECK(hw.host_link.bandwidth_bytes_per_s > 0);
    CHECK(hw.host_link.shared_by == 1);
  }
  SECTION("GC200: 1472 tiles x 128 FLOP/cycle x 1.325 GHz = 250 TFLOPS FP16, 62.5 FP32") {
    const HardwareConfig hw = load_hardware(config("ipus/gc200.json"));
    CHECK(hw.ipu.tiles == 1472);
    CHECK(hw.ipu.sram_bytes_per_tile == 624 * 1024);
    CHECK(peak_f16(hw.ipu) == Approx(250e12).epsilon(0.01));
    CHECK(peak_f32(hw.ipu) == Approx(62.5e12).epsilon(0.01));
    CHECK(hw.host_link.bandwidth_bytes_per_s == 7.06e9);
    CHECK_FALSE(hw.streaming_memory.present);
  }
  SECTION("GC2: 1216 tiles, 256 KiB per tile (304 MiB), 124.5 TFLOPS FP16 at 1.6 GHz") {
    const HardwareConfig hw = load_hardware(config("ipus/gc2.json"));
    CHECK(hw.ipu.tiles == 1216);
    CHECK(hw.ipu.sram_bytes_per_tile == 256 * 1024);
    CHECK(hw.ipu.sram_bytes_per_tile * hw.ipu.tiles == 304LL * 1024 * 1024);
    CHECK(hw.ipu.clock_hz == 1.6e9);
    CHECK(peak_f16(hw.ipu) == Approx(124.5e12).epsilon(0.01));
    CHECK(peak_f32(hw.ipu) == Approx(31.1e12).epsilon(0.01));
    // PCIe Gen3 x8: 8 lanes x 8 GT/s x 128/130 / 8 bits.
    CHECK(hw.host_link.bandwidth_bytes_per_s == Approx(8 * 8e9 * 128 / 130 / 8).epsilon(0.001));
  }
  SECTION("Bow: the GC200 at 1.85 GHz, ~348 TFLOPS FP16") {
    const HardwareConfig bow = load_hardware(config("ipus/bow.json"));
    const HardwareConfig gc200 = load_hardware(config("ipus/gc200.json"));
    CHECK(bow.ipu.clock_hz == 1.85e9);
    CHECK(bow.ipu.name == "Bow IPU");
    CHECK(bow.ipu.tiles == gc200.ipu.tiles);
    CHECK(bow.ipu.sram_bytes_per_tile == gc200.ipu.sram_bytes_per_tile);
    CHECK(bow.ipu.efficiency == gc200.ipu.efficiency);
    CHECK(peak_f16(bow.ipu) == Approx(348e12).epsilon(0.01));
    CHECK(peak_f32(bow.ipu) == Approx(87e12).epsilon(0.01));
    CHECK(bow.sources.at("/ipu/clockHz").find("1.85 GHz") != std::string::npos);
  }
  SECTION("C600: 280 TFLOPS FP16 and 70 FP32 from 1472 tiles, host 2 x PCIe Gen4 x8") {
    const HardwareConfig hw = load_hardware(config("ipus/c600.json"));
    CHECK(hw.ipu.tiles == 1472);
    CHECK(peak_f16(hw.ipu) == Approx(280e12).epsilon(0.01));
    CHECK(peak_f32(hw.ipu) == Approx(70e12).epsilon(0.01));
    CHECK(hw.host_link.bandwidth_bytes_per_s == Approx(2 * 8 * 16e9 * 128 / 130 / 8).epsilon(0.001));
  }
}

TEST_CASE("IPU-M2000 extends the GC200 and keeps its figures", "[configs]") {
  CHECK(read_json(kConfigs / "ipu-m2000.json").value("extends", "") == "ipus/gc200.json");
  const HardwareConfig hw = load_hardware(config("ipu-m2000.json"));
  CHECK(hw.name == "IPU-M2000 (4 x GC200)");
  CHECK(hw.ipu.name == "GC200");
  CHECK(hw.ipu.tiles == 1472);
  CHECK(hw.ipu.clock_hz == 1.325e9);
  CHECK(hw.ipu.sram_bytes_per_tile == 638976);
  CHECK(hw.ipu.code_bytes_per_op == 192);
  CHECK(hw.ipu.min_elements_per_tile == 16);
  CHECK(hw.ipu.efficiency_for("MatMul") == 0.6);
  CHECK(hw.ipu.efficiency_for("Relu") == 0.5);
  CHECK(hw.ipu_count == 4);
  REQUIRE(hw.links.size() == 6);
  for (const auto& l : hw.links) CHECK(l.bandwidth_bytes_per_s == 32e9);
  CHECK(hw.host_link.bandwidth_bytes_per_s == 7.06e9);
  CHECK(hw.host_link.latency_s == 5e-6);
  CHECK(hw.host_link.shared_by == 1);  // sharedBy 4 would change the shipped scenarios' results
  CHECK(hw.streaming_memory.bandwidth_bytes_per_s == 38.4e9);
  CHECK(hw.sync_seconds(4) == Approx(2 * 2 * 15e-9));
}

TEST_CASE("IPU-POD16: 4 M2000s, IPU columns in rings of 4", "[configs]") {
  const System s("ipu-pod16.json");
  CHECK(s.hw.ipu_count == 16);
  CHECK(s.hw.links.size() == 4 * 6 + 4 * 4);  // 6 pairs per M2000, 4 rails per ring edge, 4 ring edges
  CHECK(s.hw.host_link.shared_by == 4);
  CHECK(s.hw.host_link.bandwidth_bytes_per_s == 7.06e9);
  CHECK(s.hw.streaming_memory.present);
  // IPU 0 (M2000 0) -> IPU 12 (M2000 3): the wrap-around rail, one 16 GB/s IPU-Link.
  REQUIRE(s.hops(0, 12) == 1);
  CHECK(s.link_of(s.routes[0][12][0]).bandwidth_bytes_per_s == 16e9);
  // IPU 0 -> IPU 8 (M2000 2, same column): two rails either way round the ring of 4.
  CHECK(s.hops(0, 8) == 2);
  // IPU 0 -> IPU 9 (M2000 2, IPU 1): two rails and one hop inside an M2000.
  CHECK(s.hops(0, 9) == 3);
  // IPU 1 -> IPU 14 (M2000 3, IPU 2): the wrap rail and one hop inside.
  CHECK(s.hops(1, 14) == 2);
  // Inside one M2000 every pair is a hop.
  CHECK(s.hops(5, 7) == 1);
  CHECK(s.diameter() == 3);
}

TEST_CASE("IPU-POD64: a 4 x 16 torus", "[configs]") {
  const System s("ipu-pod64.json");
  CHECK(s.hw.ipu_count == 64);
  CHECK(s.hw.links.size() == 16 * 6 + 16 * 4);
  CHECK(s.hw.host_link.shared_by == 4);
  // IPU 0 (M2000 0) -> IPU 34 (M2000 8, IPU 2): M2000 8 is halfway round the ring of 16,
  // 8 rails either way, plus one hop inside M2000 8: 9, the farthest any two IPUs are.
  CHECK(s.hops(0, 34) == 9);
  CHECK(s.hops(0, 32) == 8);
  // IPU 0 -> IPU 60 (M2000 15): the wrap rail.
  CHECK(s.hops(0, 60) == 1);
  // IPU 5 (M2000 1, IPU 1) -> IPU 47 (M2000 11, IPU 3): min(10, 16 - 10) = 6 rails down through the wrap, +1.
  CHECK(s.hops(5, 47) == 7);
  CHECK(s.diameter() == 9);
}

TEST_CASE("IPU-POD128: two POD64 racks over GW-Links", "[configs]") {
  const System s("ipu-pod128.json");
  CHECK(s.hw.ipu_count == 128);
  CHECK(s.hw.links.size() == 2 * 160 + 64);
  CHECK(s.hw.host_link.shared_by == 4);
  // IPU 0 -> IPU 64 (the same IPU of the same M2000 in rack 1): one GW-Link share,
  // 2 GW-Links x 100 Gbit/s / 8 / 4 IPUs = 6.25 GB/s per direction.
  REQUIRE(s.hops(0, 64) == 1);
  const LinkSpec& gw = s.link_of(s.routes[0][64][0]);
  CHECK(gw.name == "gw-link-m0");
  CHECK(gw.bandwidth_bytes_per_s == 2 * 100e9 / 8 / 4);
  CHECK(gw.latency_s == 5e-6);
  // IPU 0 -> IPU 98 (rack 1, M2000 8, IPU 2): 9 hops inside a rack plus the GW-Link.
  CHECK(s.hops(0, 98) == 10);
  // Within one rack, as the POD64.
  CHECK(s.hops(64, 98) == 9);
  CHECK(s.diameter() == 10);
  int gw_links = 0;
  for (const auto& l : s.hw.links)
    if (l.name.rfind("gw-link", 0) == 0) {
      ++gw_links;
      CHECK(l.b - l.a == 64);
    }
  CHECK(gw_links == 64);
}

TEST_CASE("DSS8440: 8 C2 cards in a ladder", "[configs]") {
  const System s("dss8440-c2.json");
  CHECK(s.hw.ipu.name == "GC2");
  CHECK(s.hw.ipu_count == 16);
  CHECK(s.hw.links.size() == 8 + 2 * 7);  // a rung per card, two rails between neighbouring cards
  CHECK(s.hw.host_link.shared_by == 1);
  // 128 Gbit/s per link at 0.85: a rung is 6 links, a rail 2.
  const double link = 128e9 / 8 * 0.85;
  for (const auto& l : s.hw.links) {
    const bool rung = l.b == l.a + 1 && l.a % 2 == 0;
    CHECK(l.bandwidth_bytes_per_s == Approx(rung ? 6 * link : 2 * link));
  }
  // IPU 0 (card 0) -> IPU 15 (card 7, other side): 7 rails and 1 rung, no wrap to shorten it.
  REQUIRE(s.hops(0, 15) == 8);
  int rungs = 0;
  for (const Hop& h : s.routes[0][15]) rungs += s.link_of(h).bandwidth_bytes_per_s > 50e9;
  CHECK(rungs == 1);
  CHECK(s.hops(0, 14) == 7);
  CHECK(s.hops(1, 2) == 2);
  CHECK(s.hops(0, 1) == 1);
  CHECK(s.diameter() == 8);
  // Graphcore's sync model: 1 + 16/4 hops of 15 ns, there and back = 240 cycles at 1.6 GHz.
  CHECK(s.hw.sync_seconds(16) * 1.6e9 == Approx(240));
}

TEST_CASE("scripts/make_system_config.py reproduces the committed system configs", "[configs]") {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = "cd '" + std::string(IPUSIM_SOURCE_DIR) + "' && " + python +
                              " scripts/make_system_config.py --check";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("every IPU's AMP units reach its datasheet peak", "[configs]") {
  // units x inputs per cycle x 2 FLOP (a multiply-add) = FLOP per cycle per tile, for both dtypes.
  for (const auto& path : all_configs()) {
    INFO(path.string());
    const HardwareConfig hw = load_hardware(path.string());
    const TileArchitecture& t = hw.ipu.tile;
    CHECK(t.conv_units(DType::Float16) * t.input_load_elements(DType::Float16) * 2 ==
          hw.ipu.flops_per_cycle_per_tile_f16);
    CHECK(t.conv_units(DType::Float32) * t.input_load_elements(DType::Float32) * 2 ==
          hw.ipu.flops_per_cycle_per_tile_f32);
  }
}

TEST_CASE("Bow systems: the M2000 chassis and pods with Bow IPUs at 1.85 GHz; racks joined over GW-Links",
          "[configs]") {
  const HardwareConfig bow2000 = load_hardware(config("bow-2000.json"));
  const HardwareConfig m2000 = load_hardware(config("ipu-m2000.json"));
  CHECK(bow2000.ipu.clock_hz == 1.85e9);
  CHECK(bow2000.ipu_count == 4);
  CHECK(bow2000.links.size() == m2000.links.size());
  CHECK(bow2000.streaming_memory.shared_by == 4);
  for (const char* f : {"bow-pod16.json", "bow-pod64.json", "bow-pod256.json"}) {
    INFO(f);
    CHECK(load_hardware(config(f)).ipu.clock_hz == 1.85e9);
  }
  const HardwareConfig pod256 = load_hardware(config("bow-pod256.json"));
  CHECK(pod256.ipu_count == 256);
  CHECK(pod256.rack_ipus == 64);
  // Racks in a ring: rack r joined to rack r+1 for every IPU of a rack, 64 x 4 GW-Link shares.
  const auto gw = std::count_if(pod256.links.begin(), pod256.links.end(),
                                [](const LinkSpec& l) { return l.name.rfind("gw-link", 0) == 0; });
  CHECK(gw == 4 * 64);
  CHECK(load_hardware(config("bow-pod64.json")).rack_ipus == 64);
}
