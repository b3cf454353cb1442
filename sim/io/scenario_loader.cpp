#include "sim/io/scenario_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "sim/io/aliases.hpp"
#include "sim/io/content_hash.hpp"
#include "sim/io/hardware_loader.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "sim/io/tensor_parallel.hpp"

namespace ipusim {

const std::vector<std::string>& mode_choices() {
  static const std::vector<std::string> names{"both", "sharded", "pipelined", "phased"};
  return names;
}

std::optional<std::vector<Mode>> modes_named(const std::string& choice) {
  if (choice == "both") return std::vector<Mode>{Mode::Sharded, Mode::Pipelined};
  if (choice == "sharded") return std::vector<Mode>{Mode::Sharded};
  if (choice == "pipelined") return std::vector<Mode>{Mode::Pipelined};
  if (choice == "phased") return std::vector<Mode>{Mode::Phased};
  return std::nullopt;
}

std::string mode_name(Mode mode) {
  switch (mode) {
  case Mode::Sharded: return "sharded";
  case Mode::Pipelined: return "pipelined";
  case Mode::Phased: return "phased";
  }
  return "?";
}

std::string kv_cache_name(KvCache cache) {
  switch (cache) {
  case KvCache::Sram: return "sram";
  case KvCache::StreamingMemory: return "streaming-memory";
  case KvCache::None: return "none";
  }
  return "?";
}

std::string weight_format_name(WeightFormat format) {
  switch (format) {
  case WeightFormat::Float16: return "float16";
  case WeightFormat::Int8: return "int8";
  case WeightFormat::Int4: return "int4";
  }
  return "?";
}

std::string optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::Sgd: return "sgd";
  case Optimizer::Momentum: return "momentum";
  case Optimizer::Adam: return "adam";
  case Optimizer::Lamb: return "lamb";
  case Optimizer::Lars: return "lars";
  }
  return "?";
}

std::string weight_update_schedule_name(WeightUpdateSchedule schedule) {
  switch (schedule) {
  case WeightUpdateSchedule::Serial: return "Serial";
  case WeightUpdateSchedule::OverlapCycleOptimized: return "OverlapCycleOptimized";
  case WeightUpdateSchedule::OverlapMemoryOptimized: return "OverlapMemoryOptimized";
  }
  return "?";
}

namespace {

double proportion(const ObjectReader& r, const std::string& pointer, const Json& value) {
  if (!value.is_number())
    throw InputError(r.file(), pointer, "json.type",
                     "availableMemoryProportion is a number in (0, 1], got " + json_type_name(value));
  const double v = value.get<double>();
  if (!(v > 0 && v <= 1))
    throw InputError(r.file(), pointer, "value.out-of-range",
                  "availableMemoryProportion must lie in (0, 1] (the share of a tile's memory a matmul or "
                  "convolution may use for temporaries), got " + value.dump());
  return v;
}

std::vector<double> available_memory_proportion(ObjectReader& r) {
  const Json* v = r.maybe_value("availableMemoryProportion");
  if (!v) return {0.6};
  const std::string pointer = r.pointer_of("availableMemoryProportion");
  if (!v->is_array()) return {proportion(r, pointer, *v)};
  if (v->empty())
    throw r.error("availableMemoryProportion", "value.out-of-range",
                  "give one availableMemoryProportion, or one per virtual IPU");
  std::vector<double> out;
  for (std::size_t i = 0; i < v->size(); ++i)
    out.push_back(proportion(r, pointer_child(pointer, i), (*v)[i]));
  return out;
}

// A key whose value is one of a few names: the value named (`fallback` when the key is
// absent), else the error `rule` with `message(name)` and the nearest of the names.
template <typename T>
T read_choice(ObjectReader& r, const std::string& key, const std::string& fallback,
              const std::vector<std::pair<std::string, T>>& choices, const std::string& rule,
              const std::function<std::string(const std::string&)>& message) {
  const std::string name = r.optional_string(key, fallback);
  std::vector<std::string> names;
  for (const auto& [choice, value] : choices) {
    if (choice == name) return value;
    names.push_back(choice);
  }
  throw r.error(key, rule, message(name) + did_you_mean(name, names));
}

void read_weight_update_settings(ObjectReader r, Execution& e) {
  e.weight_update_schedule = read_choice<WeightUpdateSchedule>(
      r, "schedule", "Serial",
      {{"Serial", WeightUpdateSchedule::Serial},
       {"OverlapCycleOptimized", WeightUpdateSchedule::OverlapCycleOptimized},
       {"OverlapMemoryOptimized", WeightUpdateSchedule::OverlapMemoryOptimized}},
      "scenario.bad-weight-update-schedule", [](const std::string& name) {
        return "unknown accumulate outer fragment schedule \"" + name +
               "\" (expected Serial, OverlapCycleOptimized or OverlapMemoryOptimized, as PopART spells them)";
      });
  e.weight_update_excluded_ipus = r.int_list("excludedVirtualGraphs", false);
  r.finish();
}

PhaseIo read_phase_io(ObjectReader& r, const std::string& key) {
  return read_choice<PhaseIo>(r, key, "Preload", {{"Preload", PhaseIo::Preload}, {"OnDemand", PhaseIo::OnDemand}},
                              "scenario.bad-phase-settings", [](const std::string& name) {
                                return "unknown I/O schedule \"" + name +
                                       "\" (expected Preload or OnDemand, as PopART spells them)";
                              });
}

// PopART's ExecutionPhaseSettings (sessionoptions.hpp): stages and the I/O schedules modelled.
PhaseSettings read_phase_settings(ObjectReader r) {
  PhaseSettings p;
  p.stages = static_cast<int>(r.optional_int("stages", p.stages));  // [1, 2]: field_ranges.cpp
  p.weights = read_phase_io(r, "weightIOSchedule");
  p.activations = read_phase_io(r, "activationIOSchedule");
  p.accumulators = read_phase_io(r, "accumulatorIOSchedule");
  p.serialise_micro_batches = r.optional_bool("serialiseMicroBatches", p.serialise_micro_batches);
  r.finish();
  return p;
}

// A referenced document: a path relative to the scenario, or the object inline. An ONNX
// model is imported, and its document is its JSON conversion (what --set model.* edits).
struct Referenced {
  Json document;
  std::string origin;
  std::optional<Model> imported;
};

Referenced resolve(ObjectReader& root, const std::string& key, const std::string& scenario_path,
                   const std::optional<OnnxImportOptions>& onnx = std::nullopt) {
  const Json& v = root.required_value(key);
  if (v.is_object()) return {v, scenario_path + "#/" + key, std::nullopt};
  if (!v.is_string()) throw root.error(key, "json.type", "expected a file path or an inline object");
  std::filesystem::path p(v.get<std::string>());
  if (p.is_relative()) p = std::filesystem::path(scenario_path).parent_path() / p;
  const std::string file = p.lexically_normal().string();
  if (onnx && is_onnx_path(file)) {
    Model m = load_onnx_model(file, *onnx);
    Json document = Json::parse(model_to_json_text(m, "imported from " + file));
    return {std::move(document), file, std::move(m)};
  }
  if (onnx && onnx->batch_size)
    throw root.error("modelBatchSize", "scenario.model-batch-size",
                     "modelBatchSize names the batch dimension of an ONNX model; \"" + file + "\" is not one (.onnx)");
  return {read_json_file(file, root.file(), root.pointer_of(key)), file, std::nullopt};
}

} // namespace

namespace {

Recomputation read_recomputation(ObjectReader& r) {
  if (const Json* flag = r.maybe_value("recomputation"); flag && flag->is_boolean())
    throw r.error("recomputation", "scenario.bad-recomputation",
                  std::string("recomputation is \"pipeline\" or \"none\", not ") + (flag->get<bool>() ? "true" : "false") +
                      " (did you mean \"" + (flag->get<bool>() ? "pipeline" : "none") + "\"?)");
  return read_choice<Recomputation>(
      r, "recomputation", "none", {{"none", Recomputation::None}, {"pipeline", Recomputation::Pipeline}},
      "scenario.bad-recomputation",
      [](const std::string& name) { return "unknown recomputation \"" + name + "\" (expected none or pipeline)"; });
}

// execution.optimizer: its type, its state's dtype and place, replicated tensor sharding.
void read_optimizer(ObjectReader o, Execution& e) {
  e.optimizer = read_choice<Optimizer>(
      o, "type", "sgd",
      {{"sgd", Optimizer::Sgd},
       {"momentum", Optimizer::Momentum},
       {"adam", Optimizer::Adam},
       {"lamb", Optimizer::Lamb},
       {"lars", Optimizer::Lars}},
      "scenario.bad-optimizer", [](const std::string& name) {
        return "unknown optimizer \"" + name + "\" (expected sgd, momentum, adam, lamb or lars)";
      });
  const std::string dtype = o.optional_string("stateDtype", "float32");
  auto parsed = parse_dtype(dtype);
  if (!parsed || (*parsed != DType::Float16 && *parsed != DType::Float32))
    throw o.error("stateDtype", "scenario.bad-optimizer", "stateDtype must be float16 or float32");
  e.optimizer_state_dtype = *parsed;
  e.optimizer_state_off_chip = read_choice<bool>(
      o, "stateLocation", "on-chip", {{"on-chip", false}, {"streaming-memory", true}}, "scenario.bad-optimizer",
      [](const std::string& name) { return "stateLocation must be on-chip or streaming-memory, got \"" + name + "\""; });
  e.replicated_tensor_sharding = o.optional_bool("replicatedTensorSharding", e.replicated_tensor_sharding);
  o.finish();
}

DType read_partials_type(ObjectReader& r) {
  return read_choice<DType>(r, "partialsTypeMatMuls", "float", {{"float", DType::Float32}, {"half", DType::Float16}},
                            "scenario.bad-partials-type", [](const std::string& name) {
                              return "partialsTypeMatMuls is \"float\" or \"half\" (as PopART spells it), got \"" +
                                     name + "\"";
                            });
}

// distributedBatchNormReplicaGroupSize, once training and the replicas are known.
void read_batch_norm_group(ObjectReader& r, Execution& e) {
  e.distributed_batch_norm_replicas =
      r.optional_int("distributedBatchNormReplicaGroupSize", e.distributed_batch_norm_replicas);
  if (e.distributed_batch_norm_replicas > 1 && !e.training)
    throw r.error("distributedBatchNormReplicaGroupSize", "scenario.bad-batch-norm-group",
                  "distributedBatchNormReplicaGroupSize applies to training (batch statistics); inference normalises "
                  "with the running statistics, so leave it out or at 1 when training is false");
  if (e.replicas % e.distributed_batch_norm_replicas != 0)
    throw r.error("distributedBatchNormReplicaGroupSize", "scenario.bad-batch-norm-group",
                  "distributedBatchNormReplicaGroupSize " + std::to_string(e.distributed_batch_norm_replicas) +
                      " does not divide replicas " + std::to_string(e.replicas) +
                      " (the statistics are shared by groups of that many consecutive replicas)");
}

// batchSerializationSettings, once the micro-batch is known.
void read_batch_serialization(ObjectReader b, Execution& e) {
  e.phases.batch_serialization = std::max<std::int64_t>(1, b.optional_int("factor", 0));
  if (e.micro_batch_size % e.phases.batch_serialization != 0)
    throw b.error("factor", "scenario.bad-batch-serialization",
                  "batchSerializationSettings.factor " + std::to_string(e.phases.batch_serialization) +
                      " does not divide microBatchSize " + std::to_string(e.micro_batch_size) +
                      " (PopART slices the micro-batch into factor equal parts)");
  b.finish();
}

Execution read_execution(const Json& execution, const std::string& origin) {
  ObjectReader r(execution, origin, "/execution", Format::Scenario);
  Execution e;
  const std::string mode = r.optional_string("mode", "both");
  if (auto modes = modes_named(mode)) e.modes = *modes;
  else throw r.error("mode", "scenario.bad-mode", "unknown mode \"" + mode + "\" (expected sharded, pipelined, both or phased)" +
                                                       did_you_mean(mode, mode_choices()));
  e.written = {r.has("schedule"), r.has("optimizer"), r.has("executionPhaseSettings"),
               r.has("accumulateOuterFragmentSettings")};
  e.schedule = r.optional_string("schedule", e.schedule);
  e.training = r.optional_bool("training", e.training);
  e.micro_batch_size = r.optional_int("microBatchSize", e.micro_batch_size);
  e.gradient_accumulation = r.optional_int("gradientAccumulation", e.gradient_accumulation);
  e.batches_per_step = r.optional_int("batchesPerStep", e.batches_per_step);
  e.host_io = r.optional_bool("hostIo", e.host_io);
  e.cost_model = r.optional_string("costModel", e.cost_model);
  e.replicas = r.optional_int("replicas", e.replicas);
  e.tensor_parallel = r.optional_int("tensorParallel", e.tensor_parallel);
  e.placement = r.int_list("placement", false);
  e.recomputation = read_recomputation(r);
  if (r.has("optimizer")) read_optimizer(r.object("optimizer"), e);
  if (r.has("accumulateOuterFragmentSettings"))
    read_weight_update_settings(r.object("accumulateOuterFragmentSettings"), e);
  e.partials_type = read_partials_type(r);
  e.available_memory_proportion = available_memory_proportion(r);
  e.io_tiles = r.optional_int("numIOTiles", e.io_tiles);
  e.sequences_per_sample = r.optional_number("sequencesPerSample", e.sequences_per_sample);
  e.prefetch_data_streams = r.optional_bool("prefetchDataStreams", e.prefetch_data_streams);
  e.merge_all_reduce_collectives = r.optional_bool("mergeAllReduceCollectives", e.merge_all_reduce_collectives);
  read_batch_norm_group(r, e);
  if (r.has("executionPhaseSettings")) e.phases = read_phase_settings(r.object("executionPhaseSettings"));
  if (r.has("batchSerializationSettings")) read_batch_serialization(r.object("batchSerializationSettings"), e);
  if (!e.training && e.gradient_accumulation != 1)
    throw r.error("gradientAccumulation", "scenario.accumulation-without-training",
                  "gradient accumulation applies to training only; for inference the pipeline depth is batchesPerStep");
  r.finish();
  return e;
}

} // namespace

Execution execution_from_json(const Json& execution, const std::string& origin) {
  // PopART/PopTorch names are read as ipusim's keys; errors point at the name written.
  std::map<std::string, std::string> renamed;
  const Json resolved = resolve_key_aliases(execution, Format::Scenario, origin, "/execution", renamed);
  try {
    return read_execution(resolved, origin);
  } catch (const InputError& e) {
    for (const auto& [key, alias] : renamed) {
      const std::string at = "/execution/" + key;
      if (e.pointer() == at || e.pointer().rfind(at + "/", 0) == 0)
        throw InputError(e.file(), "/execution/" + alias + e.pointer().substr(at.size()), e.rule(),
                         e.message() + " (\"" + alias + "\" is read as \"" + key + "\")");
    }
    throw;
  }
}

// One IPU of a tensor-parallel group runs the model's shard; the IPUs behind one IPU-Gateway
// or Streaming Memory that belong to one group all stream at once (each its own shard, each
// the whole input), so the group's representative sees 1/k of the link, k those IPUs.
void apply_tensor_parallel(Scenario& s) {
  const std::int64_t t = s.execution.tensor_parallel;
  if (t <= 1 && !s.unsharded) return;
  if (!s.unsharded) s.unsharded = std::make_shared<const Unsharded>(Unsharded{s.model, s.hardware});
  ShardedModel sharded = shard_for_tensor_parallel(s.unsharded->model, static_cast<int>(t), s.execution.training, s.file);
  s.model = std::move(sharded.model);
  s.tensor_parallel_kept_whole = std::move(sharded.kept_whole);
  s.hardware = s.unsharded->hardware;
  if (t <= 1) return;
  const auto shared = [t](int shared_by) { return static_cast<double>(std::min<std::int64_t>(t, shared_by)); };
  s.hardware.host_link.bandwidth_bytes_per_s /= shared(s.hardware.host_link.shared_by);
  s.hardware.streaming_memory.bandwidth_bytes_per_s /= shared(s.hardware.streaming_memory.shared_by);
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
  return scenario_from_json(read_json_file(path), path, overrides);
}

// The model and the config as given, batchesPerStep 64 (the default 1 is too shallow for any
// inference pipeline: PopART's depth rule), every other setting at its default.
Scenario scenario_of_model(const std::string& model, const std::string& config, const std::vector<Override>& overrides) {
  const nlohmann::json document = {{"name", std::filesystem::path(model).stem().string()},
                                   {"model", std::filesystem::path(model).lexically_normal().string()},
                                   {"config", std::filesystem::path(config).lexically_normal().string()},
                                   {"execution", {{"batchesPerStep", 64}}}};
  return scenario_from_json(document, "command line", overrides);
}

namespace {

// Where each document came from, for naming --set in errors: the scenario, model and config origins.
struct Origins {
  std::string scenario, model, config;
};

Generation read_generation(ObjectReader r) {
  Generation g;
  g.prompt_tokens = r.required_int("promptTokens");
  g.new_tokens = r.required_int("newTokens");
  g.tokens_per_run = r.optional_int("tokensPerRun", g.tokens_per_run);
  g.kv_cache = read_choice<KvCache>(
      r, "kvCache", "sram",
      {{"sram", KvCache::Sram}, {"streaming-memory", KvCache::StreamingMemory}, {"none", KvCache::None}},
      "scenario.bad-kv-cache", [](const std::string& name) {
        return "kvCache is \"sram\", \"streaming-memory\" or \"none\", got \"" + name + "\"";
      });
  g.weight_format = read_choice<WeightFormat>(
      r, "weightFormat", "float16",
      {{"float16", WeightFormat::Float16}, {"int8", WeightFormat::Int8}, {"int4", WeightFormat::Int4}},
      "scenario.bad-weight-format", [](const std::string& name) {
        return "weightFormat is \"float16\", \"int8\" or \"int4\", got \"" + name + "\"";
      });
  g.group_size = r.optional_int("groupSize", g.group_size);
  if (g.group_size % 4 != 0)
    throw r.error("groupSize", "scenario.bad-group-size",
                  "groupSize " + std::to_string(g.group_size) +
                      " is not a multiple of 4 (four 4-bit weights are packed in a uint16, as PopXL's "
                      "group_quantise_weights requires); PopXL recommends 64");
  if (r.has("groupSize") && g.weight_format != WeightFormat::Int4)
    throw r.error("groupSize", "scenario.bad-group-size",
                  "groupSize applies to weightFormat \"int4\" only; remove it or set weightFormat to int4");
  r.finish();
  return g;
}

Scenario build_scenario(Json document, const std::string& path, const std::vector<Override>& overrides,
                        Origins& origins) {
  origins.scenario = path;
  if (!document.is_object()) throw InputError(path, "/", "json.type", "a scenario is a JSON object");
  for (const auto& o : overrides)
    if (o.path.rfind("model.", 0) != 0 && o.path.rfind("config.", 0) != 0)
      apply_override(document, o.path, o.value, o.path);

  ObjectReader root(document, path, "", Format::Scenario);
  Scenario s;
  s.file = path;
  s.name = root.optional_string("name", std::filesystem::path(path).stem().string());
  root.optional_string("description", "");
  OnnxImportOptions onnx;
  if (root.has("modelBatchSize")) onnx.batch_size = root.required_int("modelBatchSize");
  std::optional<DType> model_dtype;
  if (root.has("modelDtype")) {
    const std::string name = root.required_string("modelDtype");
    model_dtype = parse_dtype(name);
    if (!model_dtype || !is_float_dtype(*model_dtype))
      throw root.error("modelDtype", "scenario.bad-model-dtype",
                       "modelDtype \"" + name + "\" must be float16 or float32 (the precision the model's float "
                       "tensors run in)" + did_you_mean(name, {"float16", "float32"}));
  }
  if (!root.has("model") && document.contains("ops") && document.contains("tensors"))
    throw InputError(path, "/", "scenario.is-a-model",
                     "this is a model, not a scenario: run it on a system with --config (ipusim run " + path +
                         " --config configs/ipu-m2000.json), or name it as \"model\" in a scenario file");
  Referenced model = resolve(root, "model", path, onnx);
  origins.model = model.origin;
  Referenced config = resolve(root, "config", path);
  origins.config = config.origin;
  // Overrides address the config as run, its "extends" chain merged in.
  config.document = resolve_config_extends(config.document, config.origin);
  for (const auto& o : overrides) {
    if (o.path.rfind("model.", 0) == 0) apply_override(model.document, o.path.substr(6), o.value, o.path);
    if (o.path.rfind("config.", 0) == 0) apply_override(config.document, o.path.substr(7), o.value, o.path);
  }
  s.execution = execution_from_json(root.has("execution") ? root.required_value("execution") : Json::object(), path);
  if (root.has("generation")) s.generation = read_generation(root.object("generation"));
  root.finish();

  const bool model_edited = std::any_of(overrides.begin(), overrides.end(),
                                        [](const Override& o) { return o.path.rfind("model.", 0) == 0; });
  if (model.imported && !model_edited) s.model = std::move(*model.imported);
  else s.model = model_from_json(model.document, model.imported ? model.origin + " (as JSON)" : model.origin);
  if (model_dtype) s.model.set_float_dtype(*model_dtype);
  s.model_dtype = model_dtype;
  s.hardware = hardware_from_json(config.document, config.origin);
  s.scenario_document = document;
  s.model_hash = content_hash(model.document);
  s.config_hash = content_hash(config.document);
  apply_tensor_parallel(s);
  return s;
}

// "a.b.0" -> "/a/b/0"
std::string pointer_of_path(const std::string& path) {
  std::string pointer = "/" + path;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  return pointer;
}

} // namespace

void reload_execution(Scenario& s, nlohmann::json document, const std::vector<Override>& execution_overrides) {
  for (const Override& o : execution_overrides) {
    if (o.path.rfind("execution.", 0) != 0)
      throw std::logic_error("reload_execution: " + o.path + " is not under execution.");
    apply_override(document, o.path, o.value, o.path);
  }
  // As build_scenario reads it: nothing else in the document can have changed.
  ObjectReader root(document, s.file, "", Format::Scenario);
  const std::int64_t tensor_parallel = s.execution.tensor_parallel;
  s.execution = execution_from_json(root.has("execution") ? root.required_value("execution") : Json::object(), s.file);
  s.scenario_document = std::move(document);
  if (s.execution.tensor_parallel != tensor_parallel || s.unsharded) apply_tensor_parallel(s);
}

Scenario scenario_from_json(Json document, const std::string& path, const std::vector<Override>& overrides) {
  Origins origins;
  try {
    return build_scenario(std::move(document), path, overrides, origins);
  } catch (const InputError& e) {
    // An error in a value --set wrote, or under a key it added, is the flag's, not the file's.
    for (const Override& o : overrides) {
      std::string origin = origins.scenario, field = o.path;
      if (o.path.rfind("model.", 0) == 0) origin = origins.model, field = o.path.substr(6);
      else if (o.path.rfind("config.", 0) == 0) origin = origins.config, field = o.path.substr(7);
      const std::string at = pointer_of_path(field);
      if (e.file() == origin && !origin.empty() && (e.pointer() == at || e.pointer().rfind(at + "/", 0) == 0))
        throw InputError("--set", o.path, e.rule(),
                         e.message() + " (the value --set " + o.path + " wrote; " + e.file() + " at " + e.pointer() +
                             " as changed by the flag)");
    }
    throw;
  }
}

} // namespace ipusim
