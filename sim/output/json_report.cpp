#include "sim/output/json_report.hpp"

namespace ipusim {

using Json = nlohmann::json;

Json plan_json(const Scenario& sc, const Plan& plan) {
  Json stages = Json::array();
  for (const PlanStage& s : plan.stages) {
    Json ops = Json::array();
    for (auto op : s.ops) ops.push_back(sc.model.ops[op].name);
    stages.push_back({{"id", s.id},
                      {"ipu", s.ipu},
                      {"pass", s.backward ? "backward" : (s.backward_seconds > 0 ? "forward+backward" : "forward")},
                      {"forward_stage", s.forward_stage},
                      {"model_stages", s.annotated_stages},
                      {"forward_s", s.forward_seconds},
                      {"backward_s", s.backward_seconds},
                      {"host_input_bytes", s.host_input_bytes},
                      {"host_output_bytes", s.host_output_bytes},
                      {"ops", ops}});
  }
  Json copies = Json::array();
  for (const PlanCopy& c : plan.copies)
    copies.push_back({{"from_stage", c.from_stage},
                      {"to_stage", c.to_stage},
                      {"src_ipu", c.src_ipu},
                      {"dst_ipu", c.dst_ipu},
                      {"bytes", c.bytes},
                      {"gradient", c.gradient},
                      {"tensors", c.tensors}});
  Json ipus = Json::array();
  for (const PlanIpu& i : plan.ipus)
    ipus.push_back({{"id", i.id}, {"stages", i.stages}, {"weight_bytes", i.weight_bytes},
                    {"weight_update_s", i.update_seconds}});
  Json out = {{"forward_stages", plan.forward_stage_count}, {"stages", stages}, {"copies", copies}, {"ipus", ipus}};
  // Only for models that run sharded only, so other documents keep their shape.
  if (const auto& refused = plan.pipelining_refused)
    out["pipelining_refused"] = {{"rule", refused->rule()}, {"pointer", refused->pointer()},
                                 {"message", refused->message()}};
  return out;
}

Json memory_json(const MemoryReport& memory) {
  Json ipus = Json::array(), stashes = Json::array(), verdicts = Json::array();
  for (const IpuMemory& m : memory.ipus) {
    Json categories = Json::array();
    for (const MemoryCategory& c : m.categories)
      categories.push_back({{"name", c.name}, {"bytes", c.bytes}, {"tile_bytes", c.tile_bytes}});
    ipus.push_back({{"id", m.id},
                    {"total_bytes", m.total_bytes},
                    {"capacity_bytes", m.capacity_bytes},
                    {"fullest_tile_bytes", m.fullest_tile_bytes},
                    {"tile_capacity_bytes", m.tile_capacity_bytes},
                    {"fits", m.fits},
                    {"categories", categories}});
    if (!m.fits) verdicts.push_back(out_of_memory_verdict(m));
  }
  for (const StageStash& s : memory.stashes)
    stashes.push_back({{"stage", s.stage}, {"ipu", s.ipu}, {"depth", s.depth}, {"slot_bytes", s.slot_bytes},
                       {"bytes", s.slot_bytes * s.depth}});
  return {{"fits", memory.fits}, {"ipus", ipus}, {"stashes", stashes}, {"verdicts", verdicts}};
}

Json time_shares_json(const RunMetrics& r) {
  const TimeShares s = time_shares(r);
  return {{"compute", s.compute},
          {"host_io", s.host_io},
          {"streaming_memory", s.streaming_memory},
          {"exchange", s.exchange},
          {"sync", s.sync},
          {"idle_fill_flush", s.idle.fill_flush_s},
          {"idle_imbalance", s.idle.imbalance_s},
          {"idle_copy_wait", s.idle.copy_wait_s},
          {"idle_update_wait", s.idle.update_wait_s},
          {"idle_turn_wait", s.idle.turn_wait_s}};
}

Json idle_json(const IdleBreakdown& b) {
  return {{"fill_flush_s", b.fill_flush_s},
          {"imbalance_s", b.imbalance_s},
          {"copy_wait_s", b.copy_wait_s},
          {"update_wait_s", b.update_wait_s},
          {"turn_wait_s", b.turn_wait_s}};
}

Json run_json(const RunMetrics& r) {
  Json ipus = Json::array();
  for (const IpuMetrics& m : r.ipus)
    ipus.push_back({{"id", m.id},
                    {"busy_s", m.busy_s},
                    {"utilization", m.utilization},
                    {"host_io_s", m.host_io_s},
                    {"streaming_memory_s", m.streaming_memory_s},
                    {"exchange_s", m.exchange_s},
                    {"sync_s", m.sync_s},
                    {"idle_s", m.idle_s},
                    {"update_s", m.update_s},
                    {"idle", idle_json(m.idle)}});
  Json links = Json::array();
  for (const LinkTraffic& l : r.links) links.push_back({{"name", l.name}, {"bytes", l.bytes}});
  return {{"mode", mode_name(r.mode)},
          {"schedule", r.schedule},
          {"step_time_s", r.step_time_s},
          {"throughput_samples_per_s", r.throughput_samples_per_s},
          {"throughput_sequences_per_s", r.throughput_sequences_per_s},
          {"latency_s", {{"mean", r.latency_s.mean}, {"min", r.latency_s.min}, {"max", r.latency_s.max}}},
          {"bubble_fraction", r.bubble_fraction},
          {"micro_batches_per_step", r.micro_batches},
          {"samples_per_step", r.samples},
          {"replicas", r.replicas},
          {"allreduce_s", r.allreduce_s},
          {"allreduce_share", r.step_time_s > 0 ? r.allreduce_s / r.step_time_s : 0.0},
          {"cycles", r.cycles},
          {"sync_s", r.sync_seconds},
          {"ipus", ipus},
          {"time_shares", time_shares_json(r)},
          {"bottleneck", {{"ipu", r.bottleneck_ipu}, {"stage", r.bottleneck_stage}}},
          {"links", links},
          {"simulation",
           {{"program_steps", r.simulation.steps_total},
            {"simulated_steps", r.simulation.steps_simulated},
            {"simulated_in_full", r.simulation.not_periodic}}},
          {"memory", memory_json(r.memory)}};
}

Json report_json(const Scenario& sc, const Simulation& sim) {
  Json runs = Json::array();
  const RunMetrics* sharded = nullptr;
  const RunMetrics* pipelined = nullptr;
  for (const ModeRun& run : sim.runs) {
    runs.push_back(run_json(run.metrics));
    (run.metrics.mode == Mode::Sharded ? sharded : pipelined) = &run.metrics;
  }
  const Execution& ex = sc.execution;
  Json doc = {{"scenario", sc.name},
              {"scenario_file", sc.file},
              {"model", sc.model.name},
              {"config", sc.hardware.name},
              {"execution",
               {{"training", ex.training},
                {"micro_batch_size", ex.micro_batch_size},
                {"gradient_accumulation", ex.gradient_accumulation},
                {"batches_per_step", ex.batches_per_step},
                {"host_io", ex.host_io},
                {"cost_model", ex.cost_model},
                {"recomputation", ex.recomputation == Recomputation::Pipeline ? "pipeline" : "none"},
                {"optimizer", optimizer_name(ex.optimizer)},
                {"replicas", ex.replicas},
                {"schedule", ex.schedule},
                {"weight_update_schedule", weight_update_schedule_name(ex.weight_update_schedule)},
                {"replicated_tensor_sharding", ex.replicated_tensor_sharding},
                {"partials_type", dtype_name(ex.partials_type)},
                {"num_io_tiles", ex.io_tiles},
                {"sequences_per_sample", ex.sequences_per_sample}}},
              {"plan", plan_json(sc, sim.plan)},
              {"estimate",
               {{"peak_bytes", sim.estimate.peak_bytes},
                {"seconds", sim.estimate.seconds},
                {"program_steps", sim.estimate.steps}}},
              {"runs", runs}};
  if (sharded && pipelined && pipelined->step_time_s > 0)
    doc["speedup_pipelined_over_sharded"] = sharded->step_time_s / pipelined->step_time_s;
  return doc;
}

} // namespace ipusim
