#pragma once
// Small builders for tests: an IPU system with every overhead zeroed and round
// numbers, so stage and copy times are easy to compute by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/input_error.hpp"
#include "sim/io/scenario_loader.hpp"

namespace ipusim::test {

using Json = nlohmann::json;

// One tile at 1 GHz doing 1 FLOP per cycle at efficiency 1: an op of F FLOPs per
// sample takes F * microBatchSize nanoseconds. Links: full mesh, bandwidth B bytes/s,
// latency 0. No syncs. Pair with costModel "compute" (no on-chip exchange term).
// A pipelined training step of G micro-batches under `schedule`, costed on the compute model, no host I/O.
inline Json pipelined_training(const std::string& schedule, int G) {
  return {{"training", true}, {"gradientAccumulation", G}, {"hostIo", false}, {"costModel", "compute"},
          {"schedule", schedule}, {"mode", "pipelined"}};
}

inline Json zero_overhead_config(int ipus, double link_bandwidth = 1e9) {
  Json links = Json::array();
  for (int a = 0; a < ipus; ++a)
    for (int b = a + 1; b < ipus; ++b)
      links.push_back({{"ipus", {a, b}}, {"bandwidthBytesPerSecond", link_bandwidth}, {"latencySeconds", 0}});
  return {{"name", "test system"},
          {"ipu",
           {{"name", "test IPU"},
            {"tiles", 1},
            {"clockHz", 1e9},
            {"flopsPerCyclePerTile", {{"float16", 1}, {"float32", 1}}},
            {"sramBytesPerTile", 1 << 30},
            {"exchangeBytesPerCyclePerTile", 1},
            {"syncCycles", 0},
            {"codeBytesPerOp", 0},
            {"efficiency", {{"default", 1}}}}},
          {"ipuCount", ipus},
          {"syncLatencyPerHopSeconds", 0},
          {"links", links},
          {"hostLink", {{"bandwidthBytesPerSecond", 1e9}, {"latencySeconds", 0}}},
          {"sources", Json::object()}};
}

struct ChainOp {
  int ipu;
  double flops;     // forward FLOPs per sample
  int stage = -1;   // -1: no pipelineStage annotation
  int weights = 0;  // > 0: the op is a MatMul that also reads its own weight Wi of this many floats
};

// x -> op0 -> a1 -> op1 -> a2 ... : each op reads the previous activation (float32,
// The line of `text` starting with `prefix` (empty if none).
inline std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

// `elements` per sample) and writes the next; op0 reads the host input x.
inline Json chain_model(const std::vector<ChainOp>& ops, int elements) {
  Json tensors = {{"x", {{"shape", {elements}}, {"dtype", "float32"}, {"kind", "input"}}}};
  Json list = Json::array();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string in = i == 0 ? "x" : "a" + std::to_string(i);
    const std::string out = "a" + std::to_string(i + 1);
    tensors[out] = {{"shape", {elements}}, {"dtype", "float32"}, {"kind", "activation"}};
    Json op = {{"name", "op" + std::to_string(i)}, {"type", "Relu"}, {"inputs", {in}}, {"outputs", {out}},
               {"virtualGraph", ops[i].ipu}, {"flops", ops[i].flops}};
    if (ops[i].weights > 0) {
      const std::string weight = "W" + std::to_string(i);
      tensors[weight] = {{"shape", {ops[i].weights}}, {"dtype", "float32"}, {"kind", "weight"}};
      op["type"] = "MatMul";
      op["inputs"].push_back(weight);
    }
    if (ops[i].stage >= 0) op["pipelineStage"] = ops[i].stage;
    list.push_back(op);
  }
  return {{"name", "chain"}, {"tensors", tensors}, {"ops", list}};
}

// x (input, 250 floats) -> l0 (MatMul with W0: 1000 floats, IPU0) -> a1 -> l1 (MatMul
// with W1: 500 floats, IPU1) -> a2, with the forward FLOPs per sample of each layer.
inline Json two_layer_model(double flops0, double flops1) {
  return {{"name", "two layers"},
          {"tensors",
           {{"x", {{"shape", {250}}, {"kind", "input"}}},
            {"W0", {{"shape", {1000}}, {"kind", "weight"}}},
            {"W1", {{"shape", {500}}, {"kind", "weight"}}},
            {"a1", {{"shape", {250}}, {"kind", "activation"}}},
            {"a2", {{"shape", {250}}, {"kind", "activation"}}}}},
          {"ops",
           {{{"name", "l0"}, {"type", "MatMul"}, {"inputs", {"x", "W0"}}, {"outputs", {"a1"}}, {"virtualGraph", 0},
             {"flops", flops0}},
            {{"name", "l1"}, {"type", "MatMul"}, {"inputs", {"a1", "W1"}}, {"outputs", {"a2"}}, {"virtualGraph", 1},
             {"flops", flops1}}}}};
}

inline Scenario make_scenario(const Json& model, const Json& config, const Json& execution) {
  return scenario_from_json({{"name", "test"}, {"model", model}, {"config", config}, {"execution", execution}},
                            "test-scenario.json");
}

// Runs `f`, which must throw an InputError, and returns it (Catch's FAIL otherwise).
template <class F> InputError error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError, but nothing was thrown");
  throw std::logic_error("unreachable");
}

// Runs `f` and returns the InputError's rule, or "" when nothing was thrown.
template <class F> std::string rule_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.rule();
  }
  return "";
}

} // namespace ipusim::test
