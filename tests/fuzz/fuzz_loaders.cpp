// libFuzzer target for every input path that takes a user's bytes: the JSON model, config,
// scenario and sweep loaders (with the checks validate runs after them), the --set parser
// and the ONNX importer. The first byte picks the target, the rest is the document (for
// --set, one argument a line, applied to a shipped scenario; for ONNX, the file's bytes). Bad input must end in an InputError
// that names a file, a place and a rule; anything else (another exception, a crash, a
// sanitizer report, a leak) is a finding. Run by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/sweep/sweep_spec.hpp"

namespace {

using namespace ipusim;

const std::string kSource = IPUSIM_SOURCE_DIR;

// Counting a run's programs takes time linear in its steps: keep each input fast.
constexpr double kMaxCountedSteps = 2e5;

void check_scenario(const Scenario& sc) {
  const ModelGraph g = build_graph(sc.model);
  const Plan plan = make_plan(sc, g);
  check_connected(sc.hardware);
  const Execution& ex = sc.execution;
  const double micro_batches = static_cast<double>(ex.training ? ex.gradient_accumulation : ex.batches_per_step) *
                               static_cast<double>(ex.training ? ex.batches_per_step : 1) *
                               static_cast<double>(ex.replicas);
  if (micro_batches * plan.stage_count() <= kMaxCountedSteps) estimate_run(sc, plan, ex.modes, true);
}

void fuzz_one(unsigned char target, const std::string& text) {
  switch (target % 6) {
  case 0: {
    const std::string origin = kSource + "/models/fuzz.json";
    build_graph(model_from_json(parse_json_text(text, origin), origin));
    break;
  }
  case 1: {  // beside the shipped configs, so "extends": "ipus/gc200.json" resolves
    const std::string origin = kSource + "/configs/fuzz.json";
    check_connected(hardware_from_json(parse_json_text(text, origin), origin));
    break;
  }
  case 2: {
    const std::string origin = kSource + "/scenarios/fuzz.json";
    check_scenario(scenario_from_json(parse_json_text(text, origin), origin));
    break;
  }
  case 3: {
    const std::string origin = kSource + "/sweeps/fuzz.json";
    const sweep::Spec spec = sweep::parse_sweep(parse_json_text(text, origin), origin);
    if (sweep::point_count(spec) <= 64)
      for (const sweep::Point& p : sweep::expand_points(spec)) sweep::run_arguments(spec, p);
    break;
  }
  case 4: {
    std::vector<Override> overrides;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) overrides.push_back(parse_override(line));
    check_scenario(load_scenario(kSource + "/scenarios/mlp-training.json", overrides));
    break;
  }
  case 5: {  // the importer reads a path (external data files resolve beside it)
    static const std::string path = "/tmp/ipusim-fuzz-" + std::to_string(::getpid()) + ".onnx";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
    build_graph(load_onnx_model(path));
    break;
  }
  }
}

} // namespace

// libonnx's inference in this process, not a child: libFuzzer sees its coverage and its
// crashes (each one a check to add before inference, sim/io/onnx_structure_check.cpp).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ipusim::infer_onnx_shapes_in_process(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    fuzz_one(data[0], std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const InputError& e) {
    if (e.file().empty() || e.pointer().empty() || e.rule().empty()) std::abort();  // an unlocated error
  }
  return 0;
}
