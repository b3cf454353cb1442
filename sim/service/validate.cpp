#include "sim/service/validate.hpp"

#include <iostream>

#include "sim/cost/op_work.hpp"
#include "sim/generation/generation.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/routes.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/simulate/run_estimate.hpp"

namespace ipusim::service {

namespace {

void report_model(const std::string& path, const Model& m, std::ostream& out) {
  const ModelGraph g = build_graph(m);
  // As a run would: an op whose FLOPs neither the file gives nor its type derives is refused here.
  for (const Op& op : m.ops)
    if (!op.flops) derived_flops_per_sample(m, op);
  out << path << ": valid model, " << m.ops.size() << " ops, " << m.tensors.size() << " tensors, ";
  if (const auto& refused = g.pipelining_refused)
    out << "sharded runs only; pipelined runs refuse it at " << refused->pointer() << ": " << refused->message()
        << " [" << refused->rule() << "]\n";
  else
    out << g.stage_count << " stage(s)\n";
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

// An ONNX model, imported as a run imports it.
void validate_onnx_model(const ValidateOptions& o, std::ostream& out) {
  OnnxImportOptions onnx;
  if (o.batch_size > 0) onnx.batch_size = o.batch_size;
  if (!o.dtype.empty()) onnx.float_dtype = parse_dtype(o.dtype);
  const Model imported = load_onnx_model(o.path, onnx);
  say_import_warnings(imported, std::cerr);
  const std::vector<Override> overrides = parse_overrides(o.sets);
  if (overrides.empty()) report_model(o.path, imported, out);
  else  // --set edits its JSON conversion, as a scenario's model.* does
    report_model(o.path,
                 model_from_json(overridden(Json::parse(model_to_json_text(imported, "imported from " + o.path)),
                                            "model.", overrides),
                                 o.path),
                 out);
}

void validate_scenario(const Json& doc, const std::string& path, const std::vector<Override>& overrides,
                       std::ostream& out) {
  const Scenario sc = scenario_from_json(doc, path, overrides);
  say_import_warnings(sc.model, std::cerr);
  if (sc.generation) check_generation(sc, sc.execution.modes);
  const ModelGraph g = build_graph(sc.model);
  const Plan plan = make_plan(sc, g);
  check_connected(sc.hardware);
  // Every schedule rule, counted rather than built: validating never needs the run's memory.
  const RunEstimate estimate = estimate_run(sc, plan, sc.execution.modes, false);
  out << path << ": valid scenario, " << plan.stage_count() << " stage(s) on " << plan.ipus.size()
      << " IPU(s); a run needs " << describe_estimate(estimate) << "\n";
  if (const auto warning = missing_loss_warning(sc, g)) std::cerr << "ipusim: warning: " << path << ": " << *warning << "\n";
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
      if (!m.fits) out << "  does not fit (" << mode_name(mode) << "): " << out_of_memory_verdict(m, placed) << "\n";
    out << "  it " << fixes_sentence(memory_fixes(sc, mode)) << "\n";
  }
}

} // namespace

// Models, configs and scenarios are told apart by their keys.
void validate_file(const ValidateOptions& o, std::ostream& out) {
  if (is_onnx_path(o.path)) return validate_onnx_model(o, out);
  Json doc = read_json_file(o.path);
  const std::vector<Override> overrides = parse_overrides(o.sets);
  if (doc.is_object() && doc.contains("ops")) {
    report_model(o.path, model_from_json(overridden(std::move(doc), "model.", overrides), o.path), out);
  } else if (doc.is_object() && (doc.contains("ipu") || doc.contains("ipuCount") || doc.contains("extends"))) {
    const HardwareConfig hw =
        hardware_from_json(overridden(resolve_config_extends(doc, o.path), "config.", overrides), o.path);
    check_connected(hw);
    out << o.path << ": valid config, " << hw.name << ", " << hw.ipu_count << " IPU(s), " << hw.links.size()
        << " IPU-Link(s)\n";
  } else {
    validate_scenario(doc, o.path, overrides, out);
  }
}

} // namespace ipusim::service
