#pragma once
// The zoo tests' helpers (test_zoo.cpp, test_llama_models.cpp): run a model generator
// (scripts/make_*_model.py), load what it wrote, and count its weights and forward FLOPs.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/model_loader.hpp"
#include "temp_dir.hpp"

namespace ipusim::test_zoo {

namespace fs = std::filesystem;

const std::string kSource = IPUSIM_SOURCE_DIR;

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a generator (arguments after the script) and returns what it wrote.
inline std::string generate(const std::string& script, const std::string& arguments) {
  const test::TempDir dir;
  const fs::path out = dir / "model.json";
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command =
      python + " '" + kSource + "/scripts/" + script + "' " + arguments + " -o '" + out.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return read_all(out);
}

// Runs a generator that must refuse its arguments: true when it exits non-zero.
inline bool generator_refuses(const std::string& script, const std::string& arguments) {
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = python + " '" + kSource + "/scripts/" + script + "' " + arguments + " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status) != 0;
}

inline double weight_elements(const Model& m) {
  double n = 0;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) n += static_cast<double>(t.elements());
  return n;
}

// Forward FLOPs per sample: all ops, and the multiply-accumulates of Conv, Gemm and MatMul
// (what the published "FLOPs" of torchvision and the ViT papers count: one per MAC).
struct Flops {
  double total = 0;
  double macs = 0;
};

inline Flops forward_flops(const Model& m) {
  Flops f;
  for (const Op& op : m.ops) {
    const double flops = derived_flops_per_sample(m, op);
    f.total += flops;
    if (op.type == "Conv" || op.type == "Gemm" || op.type == "MatMul") {
      // Without the bias term (+ out) that Gemm / Conv add for a third input.
      double out = 0;
      for (const auto& t : op.outputs) out += static_cast<double>(m.tensor(t).elements());
      f.macs += (flops - (op.inputs.size() > 2 ? out : 0.0)) / 2;
    }
  }
  return f;
}



// A zoo model generated into a temporary folder and loaded.
inline Model generated(const test::TempDir& dir, const std::string& script, const std::string& arguments) {
  const std::string path = dir / "generated.json";
  std::ofstream(path, std::ios::binary) << generate(script, arguments);
  return load_model(path);
}

inline int ipu_of(const Model& m, const ModelGraph& g, const std::string& op_name) {
  for (std::size_t i = 0; i < m.ops.size(); ++i)
    if (m.ops[i].name == op_name) return g.ipu_of_op[i];
  FAIL("no op " << op_name);
  return -1;
}


} // namespace ipusim::test_zoo
