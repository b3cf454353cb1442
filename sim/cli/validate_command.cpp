// ipusim validate FILE: every check a run would make, without simulating.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/generation/generation.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/simulate/run_estimate.hpp"

namespace ipusim::cli {

namespace {

struct ValidateOptions {
  std::string path;
  std::vector<std::string> sets;
  std::int64_t batch_size = 0;
  std::string dtype;
};

void report_model(const std::string& path, const Model& m) {
  const ModelGraph g = build_graph(m);
  // As a run would: an op whose FLOPs neither the file gives nor its type derives is refused here.
  for (const Op& op : m.ops)
    if (!op.flops) derived_flops_per_sample(m, op);
  std::cout << path << ": valid model, " << m.ops.size() << " ops, " << m.tensors.size() << " tensors, ";
  if (const auto& refused = g.pipelining_refused)
    std::cout << "sharded runs only; pipelined runs refuse it at " << refused->pointer() << ": " << refused->message()
              << " [" << refused->rule() << "]\n";
  else
    std::cout << g.stage_count << " stage(s)\n";
  if (const auto warning = unused_phases_warning(m, g)) std::cerr << "ipusim: warning: " << path << ": " << *warning << "\n";
}

// --set on a model or a config: model.* or config.* paths, as in a scenario.
Json overridden(Json doc, const std::string& prefix, const std::vector<Override>& overrides) {
  for (const Override& o : overrides) {
    if (o.path.rfind(prefix, 0) != 0)
      throw InputError("--set", o.path, "override.bad-path",
                       "validating a " + prefix.substr(0, prefix.size() - 1) + " file, --set paths start with \"" +
                           prefix + "\"");
    apply_override(doc, o.path.substr(prefix.size()), o.value, o.path);
  }
  return doc;
}

// Models, configs and scenarios are told apart by their keys.
int validate(const ValidateOptions& o) {
  if (is_onnx_path(o.path)) {
    OnnxImportOptions onnx;
    if (o.batch_size > 0) onnx.batch_size = o.batch_size;
  if (!o.dtype.empty()) onnx.float_dtype = parse_dtype(o.dtype);
    const Model imported = load_onnx_model(o.path, onnx);
    say_import_warnings(imported, std::cerr);
    const std::vector<Override> overrides = parse_overrides(o.sets);
    if (overrides.empty()) report_model(o.path, imported);
    else  // --set edits its JSON conversion, as a scenario's model.* does
      report_model(o.path, model_from_json(overridden(Json::parse(model_to_json_text(imported, "imported from " + o.path)),
                                                      "model.", overrides),
                                           o.path));
    return kExitOk;
  }
  Json doc = read_json_file(o.path);
  const std::vector<Override> overrides = parse_overrides(o.sets);
  if (doc.is_object() && doc.contains("ops")) {
    report_model(o.path, model_from_json(overridden(std::move(doc), "model.", overrides), o.path));
  } else if (doc.is_object() && (doc.contains("ipu") || doc.contains("ipuCount") || doc.contains("extends"))) {
    const HardwareConfig hw =
        hardware_from_json(overridden(resolve_config_extends(doc, o.path), "config.", overrides), o.path);
    check_connected(hw);
    std::cout << o.path << ": valid config, " << hw.name << ", " << hw.ipu_count << " IPU(s), " << hw.links.size()
              << " IPU-Link(s)\n";
  } else {
    const Scenario sc = scenario_from_json(doc, o.path, overrides);
    say_import_warnings(sc.model, std::cerr);
    if (sc.generation) check_generation(sc, sc.execution.modes);
    const ModelGraph g = build_graph(sc.model);
    const Plan plan = make_plan(sc, g);
    check_connected(sc.hardware);
    // Every schedule rule, counted rather than built: validating never needs the run's memory.
    const RunEstimate estimate = estimate_run(sc, plan, sc.execution.modes, false);
    std::cout << o.path << ": valid scenario, " << plan.stage_count() << " stage(s) on " << plan.ipus.size()
              << " IPU(s); a run needs " << describe_estimate(estimate) << "\n";
    if (const auto warning = missing_loss_warning(sc, g)) std::cerr << "ipusim: warning: " << o.path << ": " << *warning << "\n";
    if (const auto warning = plan.phased ? std::nullopt : unused_phases_warning(sc.model, g))
      std::cerr << "ipusim: warning: " << sc.model.file << ": " << *warning << "\n";
    // Whether it fits, as the run would report it, and what would make it fit.
    const bool placed = sc.execution.replicas > 1 || !sc.execution.placement.empty();
    for (Mode mode : sc.execution.modes) {
      const Schedule schedule = make_schedule(mode, sc, plan);
      const MemoryReport memory = estimate_memory(sc, plan, schedule.stash_depth, schedule.recompute, schedule.mirrors,
                             schedule.stash_at_once);
      if (memory.fits) continue;
      for (const IpuMemory& m : memory.ipus)
        if (!m.fits) std::cout << "  does not fit (" << mode_name(mode) << "): " << out_of_memory_verdict(m, placed) << "\n";
      std::cout << "  it " << fixes_sentence(memory_fixes(sc, mode)) << "\n";
    }
  }
  return kExitOk;
}

} // namespace

Command add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Check a model, config or scenario file without simulating");
  cmd->add_option("file", o->path, "Model (JSON or .onnx), config or scenario file")->required();
  cmd->add_option("--batch-size", o->batch_size, "An ONNX model's static leading batch dimension")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", o->dtype, "The precision the model runs in: every float tensor becomes this type "
                                        "(default: as the file has them)")
      ->check(CLI::IsMember({"float16", "float32"}));
  cmd->add_option("--set", o->sets,
                  "Override a field first: path=value (model.* on a model, config.* on a config); repeatable")
      ->allow_extra_args(false);
  return [o] { return validate(*o); };
}

} // namespace ipusim::cli
