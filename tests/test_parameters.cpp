// The declared parameters (sim/io/parameters.hpp) against the loaders that read them and the
// page that shows them: every declared field is read, every field a shipped file holds is
// declared, the defaults are the structs', and docs/formats.md's tables are the declaration's.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/io/hardware_loader.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/parameters.hpp"
#include "sim/io/scenario_loader.hpp"

using namespace ipusim;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = IPUSIM_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Json read_json(const fs::path& path) { return Json::parse(read(path)); }

bool is_pattern(const std::string& pointer) { return pointer.find('*') != std::string::npos; }

// A value the field accepts on its own: its range's lower end, the first value its type lists,
// or its default; nullopt for objects and arrays (their members are rows of their own).
std::optional<Json> accepted_value(const Parameter& p) {
  if (p.range) {
    const double v = p.range->lower == Lower::Open ? p.range->max : p.range->min;
    if (p.type.rfind("integer", 0) == 0) return Json(static_cast<std::int64_t>(v));
    return Json(v);
  }
  if (p.type == "boolean") return Json(true);
  static const std::regex first_value("^`\"([^\"]+)\"`");
  std::smatch m;
  if (std::regex_search(p.type, m, first_value)) return Json(m[1].str());
  if (p.type == "string") return Json(p.default_text.size() > 4 ? p.default_text.substr(2, p.default_text.size() - 4) : "x");
  if (p.type == "number in (0, 1], or an array of them, one per virtual IPU") return Json(0.5);
  return std::nullopt;
}

// The error loading `document` raises, or "" when it loads.
template <typename Load>
std::string load_error(Load load) {
  try {
    load();
    return "";
  } catch (const InputError& e) {
    return std::string("[") + e.rule() + "] at " + e.pointer() + ": " + e.message();
  }
}

// The required fields beside `row` (its siblings) the document lacks, so that a missing one does not stop the
// loader before it reaches `row`.
void add_required_siblings(Json& document, const Parameter& row) {
  const std::string parent = row.pointer.substr(0, row.pointer.rfind('/'));
  for (const Parameter& p : parameters())
    if (p.format == row.format && p.required && !is_pattern(p.pointer) && p.pointer != row.pointer &&
        p.pointer.substr(0, p.pointer.rfind('/')) == parent)
      if (auto v = accepted_value(p); v && !document.contains(Json::json_pointer(p.pointer)))
        document[Json::json_pointer(p.pointer)] = *v;
}

// Every leaf of a document: its JSON pointer.
void leaves(const Json& value, const std::string& at, std::vector<std::string>& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it) leaves(*it, pointer_child(at, it.key()), out);
  } else if (value.is_array() && !value.empty()) {
    for (std::size_t i = 0; i < value.size(); ++i) leaves(value[i], pointer_child(at, i), out);
  } else {
    out.push_back(at);
  }
}

// Declared itself, or inside a declared value that is not an object of declared members (an
// array of numbers, an inline model).
bool declared(Format format, const std::string& pointer) {
  for (std::string at = pointer; !at.empty(); at = at.substr(0, at.rfind('/'))) {
    const Parameter* p = find_parameter(format, at);
    if (p != nullptr) return at == pointer || p->type != "object";
  }
  return false;
}

} // namespace

TEST_CASE("parameters: docs/formats.md's field tables are the declared ones, each section once", "[parameters][docs]") {
  const std::string page = read(kSource / "docs/formats.md");
  for (const ParameterSection& s : parameter_sections()) {
    const std::string marker =
        "<!-- ipusim describe " + format_name(s.format) + " " + (s.pointer.empty() ? "/" : s.pointer) + " -->\n";
    INFO(marker);
    const auto at = page.find(marker);
    REQUIRE(at != std::string::npos);
    CHECK(page.find(marker, at + 1) == std::string::npos);
    const auto table = at + marker.size();
    CHECK(page.substr(table, page.find("\n\n", table) + 1 - table) == parameters_markdown(s));
  }
}

TEST_CASE("parameters: every declared scenario and config field is one its loader reads", "[parameters]") {
  const fs::path scenario_file = kSource / "scenarios/mlp-training.json";
  const fs::path config_file = kSource / "configs/ipu-m2000.json";
  int checked = 0;
  std::vector<std::string> refused;
  for (const Parameter& p : parameters()) {
    if (is_pattern(p.pointer) || p.pointer == "/extends") continue;
    const std::optional<Json> value = accepted_value(p);
    if (!value) continue;
    INFO(format_name(p.format) << " " << p.pointer << " = " << value->dump());
    Json document = read_json(p.format == Format::Scenario ? scenario_file : config_file);
    // A field the shipped file holds keeps its value (the M2000's links need its 4 IPUs).
    if (!document.contains(Json::json_pointer(p.pointer))) document[Json::json_pointer(p.pointer)] = *value;
    add_required_siblings(document, p);
    const std::string error = p.format == Format::Scenario
                                  ? load_error([&] { scenario_from_json(document, scenario_file.string()); })
                                  : load_error([&] { hardware_from_json(document, config_file.string()); });
    INFO(error);
    CHECK(error.find("[json.unknown-key]") == std::string::npos);
    if (!error.empty()) refused.push_back(p.pointer + " " + error.substr(0, error.find(']') + 1));
    ++checked;
  }
  // Each value is one the field accepts alone: all load but the two a rule ties to another
  // field (modelBatchSize names an ONNX model's batch; groupSize needs weightFormat int4).
  CHECK(checked == 77);
  CHECK(refused == std::vector<std::string>{"/modelBatchSize [scenario.model-batch-size]",
                                            "/generation/groupSize [scenario.bad-group-size]"});
}

TEST_CASE("parameters: every field of every shipped scenario and config is declared", "[parameters]") {
  // scenarios/validation/published.json is the validation table, not a scenario.
  std::vector<std::pair<Format, fs::path>> files;
  for (const char* folder : {"scenarios", "scenarios/validation", "configs", "configs/ipus"})
    for (const auto& entry : fs::directory_iterator(kSource / folder))
      if (entry.path().extension() == ".json" && entry.path().filename() != "published.json")
        files.emplace_back(folder[0] == 's' ? Format::Scenario : Format::Config, entry.path());
  REQUIRE(files.size() >= 40);
  for (const auto& [format, path] : files) {
    std::vector<std::string> pointers;
    leaves(read_json(path), "", pointers);
    for (const std::string& pointer : pointers) {
      INFO(path.filename().string() << " " << pointer);
      CHECK(declared(format, pointer));
    }
  }
  // An inline model is the model format's (not declared here); a scenario's own keys are.
  CHECK(declared(Format::Scenario, "/model/ops/0/name"));
  CHECK_FALSE(declared(Format::Scenario, "/execution/microBatchSise"));
  CHECK_FALSE(declared(Format::Config, "/hostLink/sharedby"));
}

TEST_CASE("parameters: the defaults shown are the loaders' (hand-checked against PopART's and the GC200's)",
          "[parameters]") {
  auto default_of = [](Format format, const std::string& pointer) {
    const Parameter* p = find_parameter(format, pointer);
    REQUIRE(p != nullptr);
    return p->default_text;
  };
  // PopART's defaults: no accumulation, one batch per step, float partials, poplibs' 0.6.
  CHECK(default_of(Format::Scenario, "/execution/gradientAccumulation") == "1");
  CHECK(default_of(Format::Scenario, "/execution/batchesPerStep") == "1");
  CHECK(default_of(Format::Scenario, "/execution/schedule") == "`\"popart\"`");
  CHECK(default_of(Format::Scenario, "/execution/partialsTypeMatMuls") == "`\"float\"`");
  CHECK(default_of(Format::Scenario, "/execution/availableMemoryProportion") == "0.6");
  CHECK(default_of(Format::Scenario, "/execution/prefetchDataStreams") == "`true`");
  CHECK(default_of(Format::Scenario, "/execution/executionPhaseSettings/stages") == "2");
  CHECK(default_of(Format::Scenario, "/execution/accumulateOuterFragmentSettings/schedule") == "`\"Serial\"`");
  CHECK(default_of(Format::Scenario, "/generation/groupSize") == "64");
  CHECK(default_of(Format::Config, "/ipu/tileArchitecture/computeSetSyncCycles") == "90");
  CHECK(default_of(Format::Config, "/hostLink/sharedBy") == "1");
  // And a scenario that leaves them out runs with them.
  const Scenario s = load_scenario((kSource / "scenarios/mlp-inference.json").string());
  CHECK(s.execution.gradient_accumulation == 1);
  CHECK(s.execution.available_memory_proportion_of(0) == 0.6);
  CHECK(s.execution.phases.stages == 2);
  CHECK(s.hardware.ipu.tile.compute_set_sync_cycles == 90);
}
