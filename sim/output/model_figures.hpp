#pragma once
// The figures a language-model user reads beside step time: parameters, tokens per sample
// and per second, model FLOPs and their utilisation of the system's peak (MFU), and a cost
// per million tokens when the config states a price per IPU-hour.
#include <optional>

#include <nlohmann/json.hpp>

#include "sim/io/scenario.hpp"
#include "sim/metrics/metrics.hpp"

namespace ipusim {

struct ModelFigures {
  double parameters = 0;                   // weight elements of the whole model (before any sharding)
  double forward_flops_per_sample = 0;     // the model's forward, every op
  // Tokens a sample holds: the sequence length of its attention (sim/io/decode_step.hpp);
  // none for a model without attention (a CNN, an MLP).
  std::optional<std::int64_t> tokens_per_sample;
  // Model FLOPs per sample: the forward, and twice it again for the backward when training
  // (the convention of MFU: recomputation is not counted).
  double model_flops_per_sample = 0;
};

ModelFigures model_figures(const Scenario& scenario);

struct RunLlmFigures {
  std::optional<double> tokens_per_s;
  double model_flops_per_s = 0;
  double mfu = 0;                           // model FLOP/s over every IPU's fp16 peak
  std::optional<double> cost_per_million_tokens;  // config pricePerIpuHour set, and tokens
  int ipus = 0;                             // IPUs the run occupies: pipeline x tensor-parallel x replicas
};

// `ipus_per_replica`: the pipeline's IPUs times the tensor-parallel group size.
RunLlmFigures run_llm_figures(const HardwareConfig& hardware, const ModelFigures& model, const RunMetrics& run,
                              int ipus_per_replica);

nlohmann::json model_figures_json(const ModelFigures& model);
nlohmann::json run_llm_figures_json(const RunLlmFigures& figures);

} // namespace ipusim
