#include "sim/service/plan_document.hpp"

#include "sim/search/planner.hpp"

namespace ipusim::service {

nlohmann::json planned_execution(nlohmann::json ex, const Execution& e, bool training) {
  ex["mode"] = "pipelined";
  ex["schedule"] = e.schedule;
  ex["recomputation"] = e.recomputation == Recomputation::Pipeline ? "pipeline" : "none";
  ex["microBatchSize"] = e.micro_batch_size;
  ex["replicas"] = e.replicas;
  ex.erase("placement");
  if (training) ex["gradientAccumulation"] = e.gradient_accumulation;
  else ex["batchesPerStep"] = e.batches_per_step;
  ex["availableMemoryProportion"] = e.available_memory_proportion;
  if (training) {
    auto& opt = ex["optimizer"];
    if (!opt.is_object()) opt = nlohmann::json::object();
    opt["type"] = optimizer_name(e.optimizer);
    opt["stateLocation"] = e.optimizer_state_off_chip ? "streaming-memory" : "on-chip";
    opt["replicatedTensorSharding"] = e.replicated_tensor_sharding;
    auto& wu = ex["accumulateOuterFragmentSettings"];
    if (!wu.is_object()) wu = nlohmann::json::object();
    wu["schedule"] = weight_update_schedule_name(e.weight_update_schedule);
    wu["excludedVirtualGraphs"] = e.weight_update_excluded_ipus;
  }
  // Under tensor parallelism the file holds the whole model, placed alike: run reshards it.
  ex["tensorParallel"] = e.tensor_parallel;
  return ex;
}

namespace {

// plan --json: one confirmed candidate, its settings as the scenario's execution section that
// runs it, the evaluator's figures and the engine's.
nlohmann::json candidate_document(const Scenario& base, const Candidate& c, const RunMetrics& m, const Scenario& built) {
  const bool training = base.execution.training;
  nlohmann::json evaluator = {{"stepTimeSeconds", c.estimate.step_seconds},
                              {"throughputSamplesPerSecond", c.throughput},
                              {"latencySeconds", c.estimate.latency_seconds},
                              {"exact", c.estimate.exact()}};
  if (!c.estimate.exact()) evaluator["inexactBecause"] = c.estimate.inexact_reason();
  return {{"description", c.describe(training)},
          {"execution", planned_execution(base.scenario_document.value("execution", nlohmann::json::object()),
                                          built.execution, training)},
          {"layersPerIpu", c.split.layers_per_ipu},
          {"unitsPerLayer", c.split.units_per_layer},
          {"headsOn", c.split.heads_on_last ? "last" : "0"},
          {"globalBatch", c.global_batch},
          {"headroomBytesPerTile", c.headroom},
          {"evaluator", evaluator},
          {"engine",
           {{"stepTimeSeconds", m.step_time_s},
            {"throughputSamplesPerSecond", m.throughput_samples_per_s},
            {"latencyMeanSeconds", m.latency_s.mean},
            {"fits", m.memory.fits}}}};
}

nlohmann::json candidates_document(const Scenario& base, const ConfirmedPlans& plans) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < plans.candidates.size(); ++i)
    list.push_back(candidate_document(base, plans.candidates[i], plans.metrics[i], plans.scenarios[i]));
  return list;
}

} // namespace

nlohmann::json plan_document(const Scenario& sc, const PlanSearch& search, Objective objective,
                             const ConfirmedPlans* confirmed, const ConfirmedPlans& what_if, const std::string& text) {
  nlohmann::json doc = {
      {"scenario", sc.file},
      {"objective", objective == Objective::Throughput ? "throughput" : "latency"},
      {"training", sc.execution.training},
      {"search",
       {{"seconds", search.seconds}, {"complete", search.complete}, {"candidatesTimed", search.counts.evaluated}}},
      {"fits", confirmed != nullptr},
      {"candidates", confirmed ? candidates_document(sc, *confirmed) : nlohmann::json::array()},
      {"whatIf", what_if.candidates.empty() ? nlohmann::json() : candidates_document(sc, what_if).at(0)},
      {"text", text}};
  return doc;
}

} // namespace ipusim::service
