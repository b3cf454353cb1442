// The loaders on bad files: every error names the file, the JSON pointer (or line and
// column for malformed JSON) and the rule; and --set parsing and application.
#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/content_hash.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {


// A fresh directory under the system temp dir, removed with everything in it.

Json small_model() { return chain_model({{0, 1e6}, {1, 1e6}}, 8); }

const std::string kModel = "loader-model.json";
const std::string kConfig = "loader-config.json";
const std::string kScenario = "loader-scenario.json";

InputError model_error(const Json& m) { return error_of([&] { model_from_json(m, kModel); }); }
InputError config_error(const Json& c) { return error_of([&] { hardware_from_json(c, kConfig); }); }
InputError scenario_error(const Json& s) { return error_of([&] { scenario_from_json(s, kScenario); }); }

Json scenario_doc(const Json& execution) {
  return {{"name", "s"}, {"model", small_model()}, {"config", zero_overhead_config(2)}, {"execution", execution}};
}

} // namespace

TEST_CASE("malformed JSON reports the file, line and column", "[loaders]") {
  TempDir dir;
  const std::string path = dir.write("broken.json", std::string("{\n  \"name\": \"x\",\n  \"ops\": [1, 2,]\n}\n"));
  const InputError e = error_of([&] { load_model(path); });
  CHECK(e.rule() == "json.syntax");
  CHECK(e.file() == path);
  CHECK(e.pointer() == "/ops/2");  // the value being read when the syntax broke
  CHECK_THAT(e.message(), Contains("line 3, column 16"));
  // nlohmann's exception id is not part of the message.
  CHECK_THAT(e.message(), !Contains("json.exception"));
  CHECK_THAT(std::string(e.what()), Contains(path) && Contains("line 3") && Contains("[json.syntax]"));

  SECTION("an empty file") {
    const std::string empty = dir.write("empty.json", std::string());
    const InputError x = error_of([&] { load_scenario(empty); });
    CHECK(x.rule() == "json.syntax");
    CHECK(x.file() == empty);
    CHECK_THAT(x.message(), Contains("line 1, column 1"));
  }
  SECTION("a malformed config named by a scenario is reported against the config") {
    const std::string config = dir.write("cfg.json", std::string("{\"name\": \"c\"\n\"ipu\": {}}"));
    const std::string scenario = dir.write("s.json", Json{{"model", small_model()}, {"config", "cfg.json"}});
    const InputError x = error_of([&] { load_scenario(scenario); });
    CHECK(x.rule() == "json.syntax");
    CHECK(x.file() == config);
    CHECK_THAT(x.message(), Contains("line 2, column 5"));  // nlohmann points at the end of the unexpected "ipu"
  }
}

TEST_CASE("a key given twice in one object is an error, not a silent last-wins", "[loaders]") {
  const InputError e = error_of([&] {
    parse_json_text("{\"ops\": [{\"name\": \"a\"}, {\"name\": \"b\", \"virtualGraph\": 0, \"virtualGraph\": 1}]}",
                    kModel);
  });
  CHECK(e.rule() == "json.duplicate-key");
  CHECK(e.file() == kModel);
  CHECK(e.pointer() == "/ops/1/virtualGraph");
  CHECK_THAT(e.message(), Contains("\"virtualGraph\""));
  // The same key in different objects, and nested arrays, are fine.
  const Json ok = parse_json_text("{\"a\": [[1, {\"k\": 1}], {\"k\": 2}], \"b\": {\"k\": 3}}", kModel);
  CHECK(ok["b"]["k"] == 3);
  CHECK(ok["a"][0][1]["k"] == 1);
  const InputError nested =
      error_of([&] { parse_json_text("{\"a\": [[1, {\"k\": 1}], {\"k\": 2, \"k\": 3}]}", kModel); });
  CHECK(nested.pointer() == "/a/1/k");
}

TEST_CASE("unknown keys are rejected at every level with their exact pointer", "[loaders]") {
  SECTION("model root") {
    Json m = small_model();
    m["opz"] = Json::array();
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.file() == kModel);
    CHECK(e.pointer() == "/opz");
    CHECK_THAT(e.message(), Contains("\"opz\""));
  }
  SECTION("tensor") {
    Json m = small_model();
    m["tensors"]["a1"]["shap"] = {8};
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/tensors/a1/shap");
  }
  SECTION("op") {
    Json m = small_model();
    m["ops"][1]["virtualgraph"] = 1;
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/ops/1/virtualgraph");
  }
  SECTION("config ipu") {
    Json c = zero_overhead_config(2);
    c["ipu"]["clockGHz"] = 1.3;
    const InputError e = config_error(c);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.file() == kConfig);
    CHECK(e.pointer() == "/ipu/clockGHz");
  }
  SECTION("config ipu flopsPerCyclePerTile") {
    Json c = zero_overhead_config(2);
    c["ipu"]["flopsPerCyclePerTile"]["bfloat16"] = 1;
    CHECK(config_error(c).pointer() == "/ipu/flopsPerCyclePerTile/bfloat16");
  }
  SECTION("link") {
    Json c = zero_overhead_config(3);
    c["links"][2]["latency"] = 0;
    const InputError e = config_error(c);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/links/2/latency");
  }
  SECTION("hostLink") {
    Json c = zero_overhead_config(2);
    c["hostLink"]["bandwidth"] = 1e9;
    const InputError e = config_error(c);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/hostLink/bandwidth");
  }
  SECTION("config root") {
    Json c = zero_overhead_config(2);
    c["ipuCnt"] = 2;
    CHECK(config_error(c).pointer() == "/ipuCnt");
  }
  SECTION("scenario root") {
    Json s = scenario_doc(Json::object());
    s["executon"] = Json::object();
    const InputError e = scenario_error(s);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.file() == kScenario);
    CHECK(e.pointer() == "/executon");
  }
  SECTION("execution") {
    const InputError e = scenario_error(scenario_doc({{"microbatchSize", 4}}));
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/execution/microbatchSize");
    CHECK_THAT(e.message(), Contains("\"microbatchSize\""));
  }
  SECTION("a model inline in a scenario is reported against the scenario's #/model") {
    Json s = scenario_doc(Json::object());
    s["model"]["ops"][0]["flop"] = 1;
    const InputError e = scenario_error(s);
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.file() == kScenario + "#/model");
    CHECK(e.pointer() == "/ops/0/flop");
  }
}

TEST_CASE("wrong JSON types name the expected and the found type", "[loaders]") {
  SECTION("tensor shape as a string") {
    Json m = small_model();
    m["tensors"]["x"]["shape"] = "8";
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/tensors/x/shape");
    CHECK_THAT(e.message(), Contains("array") && Contains("a string"));
  }
  SECTION("a fractional dimension") {
    Json m = small_model();
    m["tensors"]["x"]["shape"] = {8.5};
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/tensors/x/shape/0");
  }
  SECTION("ops as an object") {
    Json m = small_model();
    m["ops"] = Json::object();
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/ops");
  }
  SECTION("an op as a number") {
    Json m = small_model();
    m["ops"][1] = 5;
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/ops/1");
  }
  SECTION("an input name as a number") {
    Json m = small_model();
    m["ops"][1]["inputs"] = {1};
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/ops/1/inputs/0");
  }
  SECTION("clockHz as a string") {
    Json c = zero_overhead_config(2);
    c["ipu"]["clockHz"] = "1.3 GHz";
    const InputError e = config_error(c);
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/ipu/clockHz");
    CHECK_THAT(e.message(), Contains("a number") && Contains("\"1.3 GHz\""));
  }
  SECTION("training as a string") {
    const InputError e = scenario_error(scenario_doc({{"training", "yes"}}));
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/execution/training");
  }
  SECTION("microBatchSize as a fraction") {
    const InputError e = scenario_error(scenario_doc({{"microBatchSize", 2.5}}));
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/execution/microBatchSize");
  }
  SECTION("a model root that is an array") {
    const InputError e = model_error(Json::array());
    CHECK(e.rule() == "json.type");
    CHECK(e.pointer() == "/");
  }
  SECTION("a missing required key names the key and its object") {
    Json m = small_model();
    m["ops"][0].erase("type");
    const InputError e = model_error(m);
    CHECK(e.rule() == "json.missing-key");
    CHECK(e.pointer() == "/ops/0");
    CHECK_THAT(e.message(), Contains("\"type\""));
  }
}

TEST_CASE("negative and zero sizes", "[loaders]") {
  SECTION("a negative tensor dimension points at the dimension") {
    Json m = small_model();
    m["tensors"]["a1"]["shape"] = {8, -3};
    const InputError e = model_error(m);
    CHECK(e.rule() == "tensor.bad-shape");
    CHECK(e.pointer() == "/tensors/a1/shape/1");
    CHECK_THAT(e.message(), Contains("got -3") && Contains("[1, "));
  }
  SECTION("a zero dimension") {
    Json m = small_model();
    m["tensors"]["x"]["shape"] = {0};
    const InputError e = model_error(m);
    CHECK(e.rule() == "tensor.bad-shape");
    CHECK(e.pointer() == "/tensors/x/shape/0");
  }
  SECTION("a shape whose size overflows is rejected, not wrapped") {
    Json m = small_model();
    m["tensors"]["a1"]["shape"] = {100000000000LL, 100000000000LL};
    const InputError e = model_error(m);
    CHECK(e.rule() == "tensor.bad-shape");
    CHECK(e.pointer() == "/tensors/a1/shape");
    CHECK_THAT(e.message(), Contains("\"a1\""));
  }
  SECTION("zero tiles") {
    Json c = zero_overhead_config(2);
    c["ipu"]["tiles"] = 0;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/ipu/tiles");
  }
  SECTION("negative clock") {
    Json c = zero_overhead_config(2);
    c["ipu"]["clockHz"] = -1e9;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/ipu/clockHz");
  }
  SECTION("zero link bandwidth") {
    Json c = zero_overhead_config(2);
    c["links"][0]["bandwidthBytesPerSecond"] = 0;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/links/0/bandwidthBytesPerSecond");
  }
  SECTION("zero host bandwidth") {
    Json c = zero_overhead_config(2);
    c["hostLink"]["bandwidthBytesPerSecond"] = 0;
    CHECK(config_error(c).pointer() == "/hostLink/bandwidthBytesPerSecond");
  }
  SECTION("zero ipuCount") {
    Json c = zero_overhead_config(2);
    c["ipuCount"] = 0;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/ipuCount");
  }
  SECTION("an ipuCount beyond an int is not truncated") {
    Json c = zero_overhead_config(2);
    c["ipuCount"] = 4294967298LL;  // would become 2
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.too-large");
    CHECK(e.pointer() == "/ipuCount");
  }
  SECTION("negative link latency") {
    Json c = zero_overhead_config(2);
    c["links"][0]["latencySeconds"] = -1e-6;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.negative");
    CHECK(e.pointer() == "/links/0/latencySeconds");
  }
  SECTION("negative host latency") {
    Json c = zero_overhead_config(2);
    c["hostLink"]["latencySeconds"] = -5e-6;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.negative");
    CHECK(e.pointer() == "/hostLink/latencySeconds");
  }
  SECTION("negative flops") {
    Json m = small_model();
    m["ops"][0]["flops"] = -1;
    const InputError e = model_error(m);
    CHECK(e.rule() == "value.negative");
    CHECK(e.pointer() == "/ops/0/flops");
  }
  SECTION("zero micro-batch size") {
    const InputError e = scenario_error(scenario_doc({{"microBatchSize", 0}}));
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/execution/microBatchSize");
  }
  SECTION("negative batchesPerStep") {
    const InputError e = scenario_error(scenario_doc({{"batchesPerStep", -4}}));
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.pointer() == "/execution/batchesPerStep");
    CHECK_THAT(e.message(), Contains("-4"));
  }
}

TEST_CASE("efficiency must be above 0 and at most 1", "[loaders]") {
  Json c = zero_overhead_config(2);
  SECTION("above one") {
    c["ipu"]["efficiency"]["Gemm"] = 1.2;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.bad-efficiency");
    CHECK(e.pointer() == "/ipu/efficiency/Gemm");
    CHECK_THAT(e.message(), Contains("1.2"));
  }
  SECTION("zero default") {
    c["ipu"]["efficiency"]["default"] = 0;
    const InputError e = config_error(c);
    CHECK(e.rule() == "value.bad-efficiency");
    CHECK(e.pointer() == "/ipu/efficiency/default");
  }
  SECTION("exactly one is fine") {
    c["ipu"]["efficiency"]["Gemm"] = 1;
    CHECK(hardware_from_json(c, kConfig).ipu.efficiency_for("Gemm") == 1);
  }
  SECTION("no default") {
    c["ipu"]["efficiency"] = {{"Gemm", 0.5}};
    const InputError e = config_error(c);
    CHECK(e.rule() == "json.missing-key");
    CHECK(e.pointer() == "/ipu/efficiency");
  }
}

TEST_CASE("unknown dtype, kind and mode", "[loaders]") {
  SECTION("dtype") {
    Json m = small_model();
    m["tensors"]["a1"]["dtype"] = "bfloat16";
    const InputError e = model_error(m);
    CHECK(e.rule() == "tensor.bad-dtype");
    CHECK(e.pointer() == "/tensors/a1/dtype");
    CHECK_THAT(e.message(), Contains("\"bfloat16\"") && Contains("float16"));
  }
  SECTION("kind") {
    Json m = small_model();
    m["tensors"]["x"]["kind"] = "constant";
    const InputError e = model_error(m);
    CHECK(e.rule() == "tensor.bad-kind");
    CHECK(e.pointer() == "/tensors/x/kind");
    CHECK_THAT(e.message(), Contains("\"constant\""));
  }
  SECTION("mode") {
    const InputError e = scenario_error(scenario_doc({{"mode", "pipelind"}}));
    CHECK(e.rule() == "scenario.bad-mode");
    CHECK(e.pointer() == "/execution/mode");
  }
}

TEST_CASE("config sources must cite fields that exist", "[loaders]") {
  Json c = zero_overhead_config(2);
  SECTION("a missing field") {
    c["sources"]["/ipu/clockGHz"] = "[P] datasheet";
    const InputError e = config_error(c);
    CHECK(e.rule() == "sources.unknown-field");
    CHECK(e.file() == kConfig);
    CHECK(e.pointer() == "/sources/~1ipu~1clockGHz");
    CHECK_THAT(e.message(), Contains("\"/ipu/clockGHz\""));
  }
  SECTION("an existing field") {
    c["sources"]["/ipu/clockHz"] = "[P] datasheet";
    CHECK(hardware_from_json(c, kConfig).sources.at("/ipu/clockHz") == "[P] datasheet");
  }
  SECTION("not a pointer") {
    c["sources"]["ipu/clockHz"] = "[P] datasheet";
    CHECK(config_error(c).rule() == "sources.bad-pointer");
  }
  SECTION("an empty citation") {
    c["sources"]["/ipu/clockHz"] = "";
    const InputError e = config_error(c);
    CHECK(e.rule() == "sources.bad-citation");
    CHECK(e.pointer() == "/sources/~1ipu~1clockHz");
  }
  SECTION("the shipped config cites only real fields") {
    const HardwareConfig hw = load_hardware(std::string(IPUSIM_SOURCE_DIR) + "/configs/ipu-m2000.json");
    CHECK(hw.sources.count("/ipu/clockHz") == 1);
  }
}

TEST_CASE("inference with gradientAccumulation > 1 is rejected", "[loaders]") {
  const InputError e = scenario_error(scenario_doc({{"training", false}, {"gradientAccumulation", 4}}));
  CHECK(e.rule() == "scenario.accumulation-without-training");
  CHECK(e.pointer() == "/execution/gradientAccumulation");
  CHECK_THAT(e.message(), Contains("batchesPerStep"));
  // Training with it is fine; inference with 1 is fine.
  CHECK(scenario_from_json(scenario_doc({{"training", true}, {"gradientAccumulation", 4}}), kScenario)
            .execution.gradient_accumulation == 4);
  CHECK(scenario_from_json(scenario_doc({{"gradientAccumulation", 1}}), kScenario).execution.training == false);
}

TEST_CASE("missing and unreadable files", "[loaders]") {
  TempDir dir;
  SECTION("the scenario's model file does not exist") {
    const std::string s = dir.write("s.json", Json{{"model", "models/nope.json"}, {"config", zero_overhead_config(2)}});
    const InputError e = error_of([&] { load_scenario(s); });
    CHECK(e.rule() == "file.missing");
    CHECK(e.file() == s);
    CHECK(e.pointer() == "/model");
    CHECK_THAT(e.message(), Contains(dir.path("models/nope.json")));
  }
  SECTION("the config file does not exist") {
    const std::string s = dir.write("s.json", Json{{"model", small_model()}, {"config", "../cfg.json"}});
    const InputError e = error_of([&] { load_scenario(s); });
    CHECK(e.rule() == "file.missing");
    CHECK(e.pointer() == "/config");
  }
  SECTION("the scenario itself does not exist") {
    const InputError e = error_of([&] { load_scenario(dir.path("none.json")); });
    CHECK(e.rule() == "file.missing");
    CHECK(e.file() == dir.path("none.json"));
    CHECK(e.pointer() == "/");
  }
  SECTION("a directory given as the model") {
    fs::create_directories(dir.path("models"));
    const std::string s = dir.write("s.json", Json{{"model", "models"}, {"config", zero_overhead_config(2)}});
    const InputError e = error_of([&] { load_scenario(s); });
    CHECK(e.rule() == "file.unreadable");
    CHECK(e.file() == s);
    CHECK(e.pointer() == "/model");
    CHECK_THAT(e.message(), Contains(dir.path("models")) && Contains("is a folder"));
  }
  SECTION("model and config paths are relative to the scenario file") {
    fs::create_directories(dir.path("m"));
    dir.write("m/model.json", small_model());
    dir.write("c.json", zero_overhead_config(2));
    const std::string s = dir.write("s.json", Json{{"model", "m/model.json"}, {"config", "c.json"}});
    const Scenario sc = load_scenario(s);
    CHECK(sc.model.file == dir.path("m/model.json"));
    CHECK(sc.model.ops.size() == 2);
    CHECK(sc.hardware.ipu_count == 2);
  }
}

TEST_CASE("overrides: parse_override takes JSON values, else plain strings", "[loaders][overrides]") {
  CHECK(parse_override("execution.microBatchSize=32").value == Json(32));
  CHECK(parse_override("execution.microBatchSize=32").path == "execution.microBatchSize");
  CHECK(parse_override("config.ipu.clockHz=1.85e9").value == Json(1.85e9));
  CHECK(parse_override("execution.training=true").value == Json(true));
  CHECK(parse_override("execution.costModel=compute").value == Json("compute"));  // not JSON: a string
  CHECK(parse_override("execution.costModel=\"tile\"").value == Json("tile"));
  CHECK(parse_override("model.anchors=[\"a2\"]").value == Json::array({"a2"}));
  CHECK(parse_override("config.links.0={\"ipus\":[0,1]}").value == Json({{"ipus", {0, 1}}}));
  CHECK(parse_override("name=a=b").value == Json("a=b"));  // split at the first '='
  CHECK(parse_override("name=").value == Json(""));
  for (const std::string bad : {"execution.microBatchSize", "=5", ""}) {
    const InputError e = error_of([&] { parse_override(bad); });
    CHECK(e.rule() == "override.syntax");
    CHECK(e.file() == "--set");
  }
}

TEST_CASE("overrides: apply_override walks nested paths and array indices", "[loaders][overrides]") {
  Json doc = {{"execution", {{"microBatchSize", 4}}}, {"links", {{{"latency", 1}}, {{"latency", 2}}}}};
  apply_override(doc, "execution.microBatchSize", 8, "execution.microBatchSize");
  CHECK(doc["execution"]["microBatchSize"] == 8);
  apply_override(doc, "links.1.latency", 7, "config.links.1.latency");
  CHECK(doc["links"][1]["latency"] == 7);
  CHECK(doc["links"][0]["latency"] == 1);
  apply_override(doc, "new.nested.key", "v", "new.nested.key");  // object keys are created
  CHECK(doc["new"]["nested"]["key"] == "v");

  SECTION("indexing past the end") {
    const InputError e = error_of([&] { apply_override(doc, "links.2.latency", 1, "config.links.2.latency"); });
    CHECK(e.rule() == "override.bad-path");
    CHECK(e.file() == "--set");
    CHECK(e.pointer() == "config.links.2.latency");
    CHECK_THAT(e.message(), Contains("index 2") && Contains("array of 2"));
  }
  SECTION("a non-numeric index into an array") {
    const InputError e = error_of([&] { apply_override(doc, "links.first.latency", 1, "links.first.latency"); });
    CHECK(e.rule() == "override.bad-path");
    CHECK_THAT(e.message(), Contains("\"first\""));
  }
  SECTION("reaching into a number") {
    const InputError e =
        error_of([&] { apply_override(doc, "execution.microBatchSize.x", 1, "execution.microBatchSize.x"); });
    CHECK(e.rule() == "override.bad-path");
  }
  SECTION("an empty segment") {
    const InputError e = error_of([&] { apply_override(doc, "execution..x", 1, "execution..x"); });
    CHECK(e.rule() == "override.syntax");
  }
}

TEST_CASE("overrides: --set reaches the scenario, and the model and config it names", "[loaders][overrides]") {
  TempDir dir;
  dir.write("model.json", small_model());
  Json config = zero_overhead_config(2);  // one link, IPU0-IPU1
  config["ipuCount"] = 4;                  // loads; only routing would find IPUs 2 and 3 unreachable
  dir.write("config.json", config);
  const std::string s = dir.write(
      "s.json", Json{{"model", "model.json"}, {"config", "config.json"}, {"execution", {{"microBatchSize", 4}}}});
  const auto load = [&](const std::vector<std::string>& sets) {
    std::vector<Override> o;
    for (const auto& set : sets) o.push_back(parse_override(set));
    return load_scenario(s, o);
  };
  const Scenario base = load({});
  REQUIRE(base.hardware.ipu_count == 4);
  REQUIRE(base.execution.micro_batch_size == 4);

  const Scenario changed = load({"config.ipuCount=2", "execution.microBatchSize=32", "model.ops.1.flops=5e6",
                                 "config.links.0.latencySeconds=2e-6", "execution.costModel=compute"});
  CHECK(changed.hardware.ipu_count == 2);
  CHECK(changed.execution.micro_batch_size == 32);
  CHECK(changed.execution.cost_model == "compute");
  CHECK(*changed.model.ops[1].flops == 5e6);
  CHECK(changed.hardware.links[0].latency_s == 2e-6);
  // The hashes kept for reports are of the documents run.
  Json config_run = config, model_run = small_model();
  config_run["ipuCount"] = 2;
  config_run["links"][0]["latencySeconds"] = 2e-6;
  model_run["ops"][1]["flops"] = 5e6;
  CHECK(changed.config_hash == content_hash(config_run));
  CHECK(changed.model_hash == content_hash(model_run));
  CHECK(base.config_hash == content_hash(config));
  CHECK(load({"execution.microBatchSize=32"}).model_hash == base.model_hash);
  // The files themselves are untouched.
  CHECK(load({}).hardware.ipu_count == 4);

  SECTION("an override is checked like the file, and its error is the flag's") {
    const InputError e = error_of([&] { load({"config.ipu.clockHz=-1"}); });
    CHECK(e.rule() == "value.not-positive");
    CHECK(e.file() == "--set");
    CHECK(e.pointer() == "config.ipu.clockHz");
    CHECK(e.message().find(dir.path("config.json") + " at /ipu/clockHz") != std::string::npos);
  }
  SECTION("a misspelt key becomes an unknown key of the flag") {
    const InputError e = error_of([&] { load({"execution.microbatchsize=8"}); });
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.file() == "--set");
    CHECK(e.pointer() == "execution.microbatchsize");
  }
  SECTION("an index past the end of the config's links") {
    const InputError e = error_of([&] { load({"config.links.1.latencySeconds=0"}); });
    CHECK(e.rule() == "override.bad-path");
    CHECK(e.pointer() == "config.links.1.latencySeconds");
    CHECK_THAT(e.message(), Contains("index 1 is past the end of an array of 1"));
  }
  SECTION("an override that makes inference accumulate") {
    const InputError e = error_of([&] { load({"execution.gradientAccumulation=2"}); });
    CHECK(e.rule() == "scenario.accumulation-without-training");
  }
}

TEST_CASE("config extends: cycles and missing bases are reported at /extends", "[loaders]") {
  TempDir dir;
  SECTION("a cycle of two files") {
    const std::string a = dir.write("a.json", Json{{"extends", "b.json"}, {"name", "a"}});
    dir.write("b.json", Json{{"extends", "a.json"}, {"name", "b"}});
    const InputError e = error_of([&] { load_hardware(a); });
    CHECK(e.rule() == "config.extends-cycle");
    CHECK(e.pointer() == "/extends");
    CHECK_THAT(e.message(), Contains(a));
  }
  SECTION("a missing base") {
    const std::string a = dir.write("a.json", Json{{"extends", "nope.json"}, {"name", "a"}});
    const InputError e = error_of([&] { load_hardware(a); });
    CHECK(e.rule() == "file.missing");
    CHECK(e.file() == a);
    CHECK(e.pointer() == "/extends");
    CHECK_THAT(e.message(), Contains(dir.path("nope.json")));
  }
  SECTION("a derived config overrides its base") {
    Json base = zero_overhead_config(2);
    dir.write("base.json", base);
    const std::string d = dir.write("d.json", Json{{"extends", "base.json"}, {"ipu", {{"clockHz", 2e9}}}});
    const HardwareConfig hw = load_hardware(d);
    CHECK(hw.ipu.clock_hz == 2e9);
    CHECK(hw.ipu.tiles == 1);  // from the base
  }
}

TEST_CASE("host link sharing, recomputation and optimizer settings are checked", "[loaders]") {
  SECTION("sharedBy must divide ipuCount") {
    Json c = zero_overhead_config(4);
    c["hostLink"]["sharedBy"] = 3;
    const InputError e = config_error(c);
    CHECK(e.rule() == "link.bad-sharing");
    CHECK(e.pointer() == "/hostLink/sharedBy");
    CHECK_THAT(e.message(), Contains("got 3"));
    c["hostLink"]["sharedBy"] = 2;
    CHECK(hardware_from_json(c, kConfig).host_link.shared_by == 2);
  }
  SECTION("recomputation") {
    const InputError e = scenario_error(scenario_doc({{"recomputation", "everything"}}));
    CHECK(e.rule() == "scenario.bad-recomputation");
    CHECK(e.pointer() == "/execution/recomputation");
    CHECK_THAT(e.message(), Contains("\"everything\""));
  }
  SECTION("optimizer type") {
    const InputError e = scenario_error(scenario_doc({{"training", true}, {"optimizer", {{"type", "adagrad"}}}}));
    CHECK(e.rule() == "scenario.bad-optimizer");
    CHECK(e.pointer() == "/execution/optimizer/type");
  }
  SECTION("optimizer state dtype") {
    const InputError e = scenario_error(scenario_doc({{"training", true}, {"optimizer", {{"stateDtype", "int8"}}}}));
    CHECK(e.rule() == "scenario.bad-optimizer");
    CHECK(e.pointer() == "/execution/optimizer/stateDtype");
  }
  SECTION("optimizer state location") {
    const InputError e =
        scenario_error(scenario_doc({{"training", true}, {"optimizer", {{"stateLocation", "host"}}}}));
    CHECK(e.rule() == "scenario.bad-optimizer");
    CHECK(e.pointer() == "/execution/optimizer/stateLocation");
  }
  SECTION("an unknown optimizer key") {
    const InputError e = scenario_error(scenario_doc({{"training", true}, {"optimizer", {{"lr", 0.1}}}}));
    CHECK(e.rule() == "json.unknown-key");
    CHECK(e.pointer() == "/execution/optimizer/lr");
  }
  SECTION("PopART's enablePrefetchDatastreams is read as prefetchDataStreams") {
    const Scenario sc = scenario_from_json(scenario_doc({{"enablePrefetchDatastreams", false}}), "s.json");
    CHECK(!sc.execution.prefetch_data_streams);
    CHECK(scenario_from_json(scenario_doc(Json::object()), "s.json").execution.prefetch_data_streams);
  }
}

TEST_CASE("PopART execution options: each refused value has its rule and place", "[loaders][rules]") {
  SECTION("partialsTypeMatMuls is float or half, as PopART spells it") {
    const InputError e = scenario_error(scenario_doc({{"partialsTypeMatMuls", "float16"}}));
    CHECK(e.rule() == "scenario.bad-partials-type");
    CHECK(e.pointer() == "/execution/partialsTypeMatMuls");
  }
  SECTION("availableMemoryProportion lies in (0, 1]") {
    for (const double v : {0.0, 1.5}) {
      const InputError e = scenario_error(scenario_doc({{"availableMemoryProportion", v}}));
      CHECK(e.rule() == "value.out-of-range");
      CHECK(e.pointer() == "/execution/availableMemoryProportion");
    }
    const InputError e = scenario_error(scenario_doc({{"availableMemoryProportion", {0.6, 0.0}}}));
    CHECK(e.rule() == "value.out-of-range");
    CHECK(e.pointer() == "/execution/availableMemoryProportion/1");
  }
  SECTION("availableMemoryProportion lists one value per virtual IPU the model uses") {
    const Scenario sc = scenario_from_json(scenario_doc({{"availableMemoryProportion", {0.6, 0.5, 0.4}}}), kScenario);
    const InputError e = error_of([&] { make_plan(sc, build_graph(sc.model)); });
    CHECK(e.rule() == "scenario.bad-available-memory-proportion");
    CHECK(e.pointer() == "/execution/availableMemoryProportion");
    CHECK_THAT(e.message(), Contains("lists 3 values") && Contains("(2)"));
  }
  SECTION("numIOTiles must leave tiles to compute on") {
    Json doc = scenario_doc({{"numIOTiles", 4}});
    doc["config"]["ipu"]["tiles"] = 4;
    const Scenario sc = scenario_from_json(doc, kScenario);
    const InputError e = error_of([&] { make_plan(sc, build_graph(sc.model)); });
    CHECK(e.rule() == "scenario.too-many-io-tiles");
    CHECK(e.pointer() == "/execution/numIOTiles");
  }
}

TEST_CASE("op.attribute-range: windows, strides and groups of at least 1, pads of 0 or more, flags 0 or 1",
          "[loaders][rules]") {
  Json m = small_model();
  m["ops"][0]["attributes"] = {{"kernel_shape", {7, 7}}, {"strides", {2, 2}}, {"pads", {0, 3, 3, 0}},
                               {"group", 1},          {"transA", 1},        {"dilations", {1, 1}}};
  CHECK_NOTHROW(model_from_json(m, kModel));
  const auto error_with = [&](const std::string& key, const Json& value) {
    Json bad = m;
    bad["ops"][0]["attributes"][key] = value;
    return model_error(bad);
  };
  // A negative window made a pool cost nothing, silently: now refused where it is written.
  InputError e = error_with("kernel_shape", {-3, 3});
  CHECK(e.rule() == "op.attribute-range");
  CHECK(e.pointer() == "/ops/0/attributes/kernel_shape/0");
  CHECK(error_with("strides", {1, 0}).pointer() == "/ops/0/attributes/strides/1");
  CHECK(error_with("pads", {0, -1, 0, 0}).pointer() == "/ops/0/attributes/pads/1");
  CHECK(error_with("dilations", {0, 1}).rule() == "op.attribute-range");
  CHECK(error_with("group", 0).pointer() == "/ops/0/attributes/group");
  e = error_with("transA", 2);
  CHECK(e.pointer() == "/ops/0/attributes/transA");
  CHECK(e.rule() == "op.attribute-range");
  CHECK(error_with("kernel_shape", {3, 65537}).rule() == "op.attribute-range");
}

TEST_CASE("op.bad-attribute: an attribute holds numbers, a string or an array of numbers", "[loaders][rules]") {
  Json m = small_model();
  m["ops"][0]["attributes"] = {{"kernel_shape", {3, 3}}, {"mode", "constant"}, {"alpha", 0.5}};
  CHECK_NOTHROW(model_from_json(m, kModel));
  m["ops"][0]["attributes"]["pads"] = {{"a", 1}};
  const InputError e = model_error(m);
  CHECK(e.rule() == "op.bad-attribute");
  CHECK(e.pointer() == "/ops/0/attributes/pads");
}
