#include "sim/output/json_report.hpp"

#include "sim/output/model_figures.hpp"

#include <cmath>
#include <cstdio>

#include "sim/output/explanation.hpp"
#include "sim/schedule/collective_dataflow.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

using Json = nlohmann::json;

// The plan is one replica's pipeline: its IPUs are virtual IPUs (virtualGraph), named so
// apart from the physical IPUs of runs[].ipus[].
Json plan_json(const Scenario& sc, const Plan& plan) {
  Json stages = Json::array();
  for (const PlanStage& s : plan.stages) {
    Json ops = Json::array();
    for (auto op : s.ops) ops.push_back(sc.model.ops[op].name);
    stages.push_back({{"id", s.id},
                      {"virtualIpu", s.ipu},
                      {"pass", s.backward ? "backward" : (s.backward_seconds > 0 ? "forward+backward" : "forward")},
                      {"forwardStage", s.forward_stage},
                      {"modelStages", s.annotated_stages},
                      {"forwardSeconds", s.forward_seconds},
                      {"backwardSeconds", s.backward_seconds},
                      {"hostInputBytes", s.host_input_bytes},
                      {"hostOutputBytes", s.host_output_bytes},
                      {"ops", std::move(ops)}});
  }
  Json copies = Json::array();
  for (const PlanCopy& c : plan.copies)
    copies.push_back({{"fromStage", c.from_stage},
                      {"toStage", c.to_stage},
                      {"srcVirtualIpu", c.src_ipu},
                      {"dstVirtualIpu", c.dst_ipu},
                      {"bytes", c.bytes},
                      {"gradient", c.gradient},
                      {"tensors", c.tensors}});
  Json ipus = Json::array();
  for (const PlanIpu& i : plan.ipus)
    ipus.push_back({{"virtualIpu", i.id}, {"stages", i.stages}, {"weightBytes", i.weight_bytes},
                    {"weightUpdateSeconds", i.update_seconds}});
  Json out = {{"forwardStages", plan.forward_stage_count},
              {"stages", std::move(stages)},
              {"copies", std::move(copies)},
              {"ipus", std::move(ipus)}};
  // Only for models that run sharded only, so other documents keep their shape.
  if (const auto& refused = plan.pipelining_refused)
    out["pipeliningRefused"] = {{"rule", refused->rule()}, {"pointer", refused->pointer()},
                                 {"message", refused->message()}};
  return out;
}

Json memory_json(const MemoryReport& memory, bool placed) {
  Json ipus = Json::array(), stashes = Json::array(), verdicts = Json::array();
  for (const IpuMemory& m : memory.ipus) {
    Json categories = Json::array();
    for (const MemoryCategory& c : m.categories)
      categories.push_back({{"name", c.name}, {"bytes", c.bytes}, {"tileBytes", c.tile_bytes}});
    ipus.push_back({{"virtualIpu", m.id},
                    {"totalBytes", m.total_bytes},
                    {"capacityBytes", m.capacity_bytes},
                    {"fullestTileBytes", m.fullest_tile_bytes},
                    {"tileCapacityBytes", m.tile_capacity_bytes},
                    {"fits", m.fits},
                    {"categories", std::move(categories)}});
    if (!m.fits) verdicts.push_back(out_of_memory_verdict(m, placed));
  }
  for (const StageStash& s : memory.stashes)
    stashes.push_back({{"stage", s.stage}, {"ipu", s.ipu}, {"depth", s.depth}, {"slotBytes", s.slot_bytes},
                       {"bytes", s.slot_bytes * s.depth}});
  Json out = {{"fits", memory.fits}, {"ipus", std::move(ipus)}, {"stashes", std::move(stashes)}, {"verdicts", std::move(verdicts)}};
  // Settings that would make it fit, best first (docs/formats.md): only on runs that do not fit.
  if (!memory.fixes.empty()) {
    Json fixes = Json::array();
    for (const MemoryFix& f : memory.fixes)
      fixes.push_back({{"setting", f.setting}, {"change", f.change}, {"how", f.how}, {"fits", f.fits},
                       {"freedTileBytes", f.freed_bytes},
                       {"stepTimeChange", std::isfinite(f.step_change) ? Json(f.step_change) : Json(nullptr)}});
    out["fixes"] = std::move(fixes);
  }
  return out;
}

Json time_shares_json(const RunMetrics& r) {
  const TimeShares s = time_shares(r);
  return {{"compute", s.compute},
          {"hostIo", s.host_io},
          {"streamingMemory", s.streaming_memory},
          {"exchange", s.exchange},
          {"sync", s.sync},
          {"idleFillFlush", s.idle.fill_flush_s},
          {"idleImbalance", s.idle.imbalance_s},
          {"idleCopyWait", s.idle.copy_wait_s},
          {"idleUpdateWait", s.idle.update_wait_s},
          {"idleTurnWait", s.idle.turn_wait_s}};
}

Json idle_json(const IdleBreakdown& b) {
  return {{"fillFlushSeconds", b.fill_flush_s},
          {"imbalanceSeconds", b.imbalance_s},
          {"copyWaitSeconds", b.copy_wait_s},
          {"updateWaitSeconds", b.update_wait_s},
          {"turnWaitSeconds", b.turn_wait_s}};
}

// The bottleneck's physical IPU, with its replica and virtual IPU, and its stage.
Json bottleneck_json(const RunMetrics& r) {
  Json out = {{"ipu", r.bottleneck_ipu}, {"stage", r.bottleneck_stage}};
  for (const IpuMetrics& m : r.ipus)
    if (m.id == r.bottleneck_ipu) {
      out["replica"] = m.replica;
      out["virtualIpu"] = m.virtual_ipu;
    }
  return out;
}

// How the engine ran the step: its program steps, those it simulated (the rest repeat a
// period), the IPUs it simulated (the rest mirror them), the loops simulated in full, and the gradient collectives replayed apart
// (collective_dataflow.hpp) or why they were simulated.
static Json simulation_json(const SimulationStats& s) {
  Json out = {{"programSteps", s.steps_total},
              {"simulatedSteps", s.steps_simulated},
              {"simulatedIpus", s.ipus_simulated},
              {"simulatedInFull", s.not_periodic},
              {"collectiveGroupsReplayed", s.collective_groups}};
  if (s.collective_groups == 0 && s.collectives_simulated_because != kNoCollectiveCopies)
    out["collectivesSimulatedBecause"] = s.collectives_simulated_because;
  return out;
}

Json run_json(const RunMetrics& r) {
  Json ipus = Json::array();
  for (const IpuMetrics& m : r.ipus)
    ipus.push_back({{"id", m.id},
                    {"replica", m.replica},
                    {"virtualIpu", m.virtual_ipu},
                    {"busySeconds", m.busy_s},
                    {"utilization", m.utilization},
                    {"hostIoSeconds", m.host_io_s},
                    {"streamingMemorySeconds", m.streaming_memory_s},
                    {"exchangeSeconds", m.exchange_s},
                    {"syncSeconds", m.sync_s},
                    {"idleSeconds", m.idle_s},
                    {"updateSeconds", m.update_s},
                    {"idle", idle_json(m.idle)}});
  Json links = Json::array();
  for (const LinkTraffic& l : r.links) links.push_back({{"name", l.name}, {"bytes", l.bytes}});
  Json out = {{"mode", mode_name(r.mode)},
              {"schedule", r.schedule},
              {"stepTimeSeconds", r.step_time_s},
              {"throughputSamplesPerSecond", r.throughput_samples_per_s},
              {"throughputSequencesPerSecond", r.throughput_sequences_per_s},
              {"latencySeconds", {{"mean", r.latency_s.mean}, {"min", r.latency_s.min}, {"max", r.latency_s.max}}},
              {"bubbleFraction", r.bubble_fraction},
              {"microBatchesPerStep", r.micro_batches},
              {"samplesPerStep", r.samples},
              {"replicas", r.replicas},
              {"allreduceSeconds", r.allreduce_s},
              {"allreduceShare", r.step_time_s > 0 ? r.allreduce_s / r.step_time_s : 0.0},
              {"cycles", r.cycles},
              {"syncSeconds", r.sync_seconds},
              {"ipus", std::move(ipus)},
              {"timeShares", time_shares_json(r)},
              {"bottleneck", bottleneck_json(r)},
              {"links", std::move(links)},
              {"simulation", simulation_json(r.simulation)},
              {"memory", memory_json(r.memory, ipus_placed(r))}};
  // Only on what-if runs, so other documents keep their shape.
  if (r.mode == Mode::Pipelined && is_what_if_schedule(r.schedule)) out["whatIf"] = true;
  return out;
}

namespace {

// The file a model or config came from ("" for one inline in the scenario); an edited
// ONNX model ("(as JSON)") names its ONNX file, the edits being in "overrides".
std::string source_file(const std::string& origin) {
  if (origin.find("#/") != std::string::npos) return "";
  const auto edited = origin.find(" (as JSON)");
  return edited == std::string::npos ? origin : origin.substr(0, edited);
}

Json modes_json(const std::vector<Mode>& modes) {
  Json out = Json::array();
  for (Mode m : modes) out.push_back(mode_name(m));
  return out;
}

} // namespace

namespace {

// One run's figures, its LLM figures and, under tensor parallelism, each IPU's group.
Json mode_run_json(const Scenario& sc, const Simulation& sim, const ModelFigures& model, const ModeRun& run) {
  Json out = run_json(run.metrics);
  out["llm"] = run_llm_figures_json(run_llm_figures(
      sc.hardware, model, run.metrics, static_cast<int>(sim.plan.ipus.size() * sc.execution.tensor_parallel)));
  if (sc.execution.tensor_parallel > 1) {
    out["timeShares"]["tensorParallelAllReduce"] =
        time_shares(run.metrics).compute * tensor_parallel_fraction(sim.plan, run.schedule.recompute);
    // The engine runs one IPU per group (the group's first); its shards are the group's IPUs.
    for (Json& ipu : out["ipus"]) {
      Json group = Json::array();
      for (std::int64_t s = 0; s < sc.execution.tensor_parallel; ++s) group.push_back(ipu.at("id").get<std::int64_t>() + s);
      ipu["tensorParallelIpus"] = std::move(group);
    }
  }
  return out;
}

// The execution settings the runs used, as the document records them.
Json execution_json(const Execution& ex) {
  return {{"training", ex.training},
          {"microBatchSize", ex.micro_batch_size},
          {"gradientAccumulation", ex.gradient_accumulation},
          {"batchesPerStep", ex.batches_per_step},
          {"hostIo", ex.host_io},
          {"costModel", ex.cost_model},
          {"recomputation", ex.recomputation == Recomputation::Pipeline ? "pipeline" : "none"},
          {"optimizer", optimizer_name(ex.optimizer)},
          {"replicas", ex.replicas},
          {"tensorParallel", ex.tensor_parallel},
          {"schedule", ex.schedule},
          {"weightUpdateSchedule", weight_update_schedule_name(ex.weight_update_schedule)},
          {"replicatedTensorSharding", ex.replicated_tensor_sharding},
          {"partialsTypeMatMuls", dtype_name(ex.partials_type)},
          {"numIOTiles", ex.io_tiles},
          {"sequencesPerSample", ex.sequences_per_sample},
          {"optimizerStateDtype", dtype_name(ex.optimizer_state_dtype)},
          {"optimizerStateLocation", ex.optimizer_state_off_chip ? "streaming-memory" : "on-chip"},
          {"availableMemoryProportion", ex.available_memory_proportion},
          {"weightUpdateExcludedVirtualGraphs", ex.weight_update_excluded_ipus},
          {"placement", ex.placement},
          {"modes", modes_json(ex.modes)}};
}

} // namespace

Json report_json(const Scenario& sc, const Simulation& sim, Json* plan_document) {
  Json runs = Json::array();
  const RunMetrics* sharded = nullptr;
  const RunMetrics* pipelined = nullptr;
  const ModelFigures model = model_figures(sc);
  for (const ModeRun& run : sim.runs) {
    runs.push_back(mode_run_json(sc, sim, model, run));
    (run.metrics.mode == Mode::Sharded ? sharded : pipelined) = &run.metrics;
  }
  const Execution& ex = sc.execution;
  Json doc = {{"scenario", sc.name},
              {"scenarioFile", sc.file},
              {"model", sc.model.name},
              {"config", sc.hardware.name},
              {"execution", execution_json(ex)},
              {"modelFile", source_file(sc.model.file)},
              {"modelHash", sc.model_hash},
              {"configFile", source_file(sc.hardware.file)},
              {"configHash", sc.config_hash},
              {"plan", plan_document != nullptr ? std::move(*plan_document) : plan_json(sc, sim.plan)},
              {"estimate",
               {{"peakBytes", sim.estimate.peak_bytes},
                {"seconds", sim.estimate.seconds},
                {"programSteps", sim.estimate.steps}}},
              {"runs", std::move(runs)}};
  doc["modelFigures"] = model_figures_json(model);
  if (sc.hardware.price_per_ipu_hour > 0) doc["pricePerIpuHour"] = sc.hardware.price_per_ipu_hour;
  if (sim.plan.phased) {
    auto io = [](PhaseIo schedule) { return schedule == PhaseIo::Preload ? "Preload" : "OnDemand"; };
    doc["execution"]["executionPhaseSettings"] = {{"stages", ex.phases.stages},
                                                  {"weightIOSchedule", io(ex.phases.weights)},
                                                  {"activationIOSchedule", io(ex.phases.activations)},
                                                  {"accumulatorIOSchedule", io(ex.phases.accumulators)},
                                                  {"serialiseMicroBatches", ex.phases.serialise_micro_batches}};
    doc["execution"]["batchSerializationFactor"] = ex.phases.batch_serialization;
  }
  if (sc.model_dtype) doc["modelDtype"] = dtype_name(*sc.model_dtype);
  if (sharded && pipelined && pipelined->step_time_s > 0)
    doc["speedupPipelinedOverSharded"] = sharded->step_time_s / pipelined->step_time_s;
  return doc;
}

void add_provenance(Json& document, const Provenance& provenance) {
  document["overrides"] = provenance.overrides;
  if (provenance.command_line != nullptr) document["commandLine"] = *provenance.command_line;
  document["ipusimVersion"] = IPUSIM_VERSION;
}

Json run_document(const Scenario& sc, const Simulation& sim, const Provenance& provenance, Json* plan_document) {
  Json document = report_json(sc, sim, plan_document);
  add_provenance(document, provenance);
  return document;
}

} // namespace ipusim
