#include "sim/output/model_figures.hpp"

#include "sim/cost/op_work.hpp"
#include "sim/io/decode_step.hpp"

namespace ipusim {

ModelFigures model_figures(const Scenario& sc) {
  const Model& m = sc.unsharded ? sc.unsharded->model : sc.model;
  ModelFigures f;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight) f.parameters += static_cast<double>(t.elements());
  for (const Op& op : m.ops) f.forward_flops_per_sample += op.flops.value_or(derived_flops_per_sample(m, op));
  f.model_flops_per_sample = f.forward_flops_per_sample * (sc.execution.training ? 3 : 1);
  f.tokens_per_sample = attention_sequence_length(m);
  return f;
}

RunLlmFigures run_llm_figures(const HardwareConfig& hardware, const ModelFigures& model, const RunMetrics& run,
                              int ipus_per_replica) {
  RunLlmFigures f;
  f.ipus = ipus_per_replica * run.replicas;
  f.model_flops_per_s = model.model_flops_per_sample * run.throughput_samples_per_s;
  const IpuSpec& ipu = hardware.ipu;
  const double peak = static_cast<double>(f.ipus) * static_cast<double>(ipu.tiles) *
                      ipu.flops_per_cycle_per_tile(DType::Float16) * ipu.clock_hz;
  f.mfu = peak > 0 ? f.model_flops_per_s / peak : 0;
  if (model.tokens_per_sample) {
    f.tokens_per_s = run.throughput_samples_per_s * static_cast<double>(*model.tokens_per_sample);
    if (hardware.price_per_ipu_hour > 0 && *f.tokens_per_s > 0)
      f.cost_per_million_tokens = static_cast<double>(f.ipus) * hardware.price_per_ipu_hour / 3600.0 /
                                  *f.tokens_per_s * 1e6;
  }
  return f;
}

nlohmann::json model_figures_json(const ModelFigures& model) {
  nlohmann::json j{{"parameters", model.parameters},
                   {"forwardFlopsPerSample", model.forward_flops_per_sample},
                   {"modelFlopsPerSample", model.model_flops_per_sample}};
  j["tokensPerSample"] = model.tokens_per_sample ? nlohmann::json(*model.tokens_per_sample) : nlohmann::json();
  return j;
}

nlohmann::json run_llm_figures_json(const RunLlmFigures& f) {
  nlohmann::json j{{"ipus", f.ipus}, {"modelFlopsPerSecond", f.model_flops_per_s}, {"modelFlopsUtilization", f.mfu}};
  j["tokensPerSecond"] = f.tokens_per_s ? nlohmann::json(*f.tokens_per_s) : nlohmann::json();
  j["costPerMillionTokens"] = f.cost_per_million_tokens ? nlohmann::json(*f.cost_per_million_tokens) : nlohmann::json();
  return j;
}

} // namespace ipusim
