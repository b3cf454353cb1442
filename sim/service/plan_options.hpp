#pragma once
// What `ipusim plan` is asked (its flags; ipusim.plan's keywords): the dimensions to search, how to
// rank and report, and where to write the best. Each front end reads its own syntax into this
// struct and checks the ranges and choices below as it reads, so that both refuse a bad value
// with the same words.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/service/option_range.hpp"

namespace ipusim::service {

struct PlanOptions {
  // The scenario file; with `config`, a model file planned on that system without a scenario.
  std::string scenario, config;
  std::string objective = "throughput", write, global_batch, layer_free = "yes";
  std::vector<std::string> sets, schedules, recomputation, state, rts, weight_update, heads_on;
  std::vector<std::int64_t> micro_batches, gradient_accumulation;
  std::vector<int> ipus, replicas;
  std::vector<double> amps;
  int top = 3;
  double front_within = 5, time_limit = 0;
  // json: plan --json's document wanted (PlanResult::document); the report then goes into it.
  bool force = false, explain_layers = false, quiet = false, json = false;
  std::string att_ffn = "yes";
  std::vector<int> tensor_parallel;
};

// The ranges and choices of the options.
inline constexpr OptionRange<int> kPipelineIpusRange{2, 4096};  // ipus
inline constexpr OptionRange<int> kReplicasRange{1, 4096};
inline constexpr OptionRange<std::int64_t> kMicroBatchRange{1, std::int64_t{1} << 20};  // and gradient_accumulation
inline constexpr OptionRange<int> kTensorParallelRange{1, 4096};
inline constexpr OptionRange<int> kTopRange{1, 100};
inline constexpr OptionRange<double> kFrontWithinRange{0.0, 100.0};  // percent
inline constexpr OptionRange<double> kTimeLimitRange{0.0, 1e6};      // seconds

inline const std::vector<std::string> kObjectives{"throughput", "latency"};
inline const std::vector<std::string> kYesNo{"yes", "no"};  // layer_free, att_ffn

} // namespace ipusim::service
