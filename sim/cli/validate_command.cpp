// ipusim validate FILE: every check a run would make, without simulating.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim::cli {

namespace {

struct ValidateOptions {
  std::string path;
  std::vector<std::string> sets;
  std::int64_t batch_size = 0;
};

void report_model(const std::string& path, const Model& m) {
  const ModelGraph g = build_graph(m);
  std::cout << path << ": valid model, " << m.ops.size() << " ops, " << m.tensors.size() << " tensors, ";
  if (const auto& refused = g.pipelining_refused)
    std::cout << "sharded runs only; pipelined runs refuse it at " << refused->pointer() << ": " << refused->message()
              << " [" << refused->rule() << "]\n";
  else
    std::cout << g.stage_count << " stage(s)\n";
}

// Models, configs and scenarios are told apart by their keys.
int validate(const ValidateOptions& o) {
  if (is_onnx_path(o.path)) {
    OnnxImportOptions onnx;
    if (o.batch_size > 0) onnx.batch_size = o.batch_size;
    report_model(o.path, load_onnx_model(o.path, onnx));
    return kExitOk;
  }
  const Json doc = read_json_file(o.path);
  if (doc.is_object() && doc.contains("ops")) {
    report_model(o.path, load_model(o.path));
  } else if (doc.is_object() && (doc.contains("ipu") || doc.contains("ipuCount") || doc.contains("extends"))) {
    const HardwareConfig hw = load_hardware(o.path);
    compute_routes(hw);
    std::cout << o.path << ": valid config, " << hw.name << ", " << hw.ipu_count << " IPU(s), " << hw.links.size()
              << " IPU-Link(s)\n";
  } else {
    const Scenario sc = load_scenario(o.path, parse_overrides(o.sets));
    const ModelGraph g = build_graph(sc.model);
    const Plan plan = make_plan(sc, g);
    compute_routes(sc.hardware);
    for (Mode m : sc.execution.modes) make_schedule(m, sc, plan);
    std::cout << o.path << ": valid scenario, " << plan.stage_count() << " stage(s) on " << plan.ipus.size()
              << " IPU(s)\n";
  }
  return kExitOk;
}

} // namespace

Command add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Check a model, config or scenario file without simulating");
  cmd->add_option("file", o->path, "Model (JSON or .onnx), config or scenario file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch-size", o->batch_size, "An ONNX model's static leading batch dimension")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--set", o->sets, "Override a scenario field first: path=value; repeatable")
      ->allow_extra_args(false);
  return [o] { return validate(*o); };
}

} // namespace ipusim::cli
