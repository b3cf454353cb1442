#include "sim/schedule/schedule.hpp"

#include "sim/io/input_error.hpp"

namespace ipusim {

std::string pass_name(Pass pass) {
  switch (pass) {
  case Pass::None: return "none";
  case Pass::Forward: return "forward";
  case Pass::Backward: return "backward";
  case Pass::Update: return "update";
  }
  return "?";
}

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> registry{
      {"sharded", "one micro-batch at a time through the IPUs in stage order; one IPU busy at a time", &build_sharded},
      {"popart", "PopART pipelining: G+S-1 lockstep cycles (fill, main, flush), a copy phase every cycle",
       &build_popart},
      {"tf-grouped", "TensorFlow Grouped (TF default): lockstep steps, all forward or all backward at a time",
       &build_tf_grouped},
      {"tf-interleaved", "TensorFlow Interleaved: lockstep, each IPU alternates forward and backward steps",
       &build_tf_interleaved},
      {"tf-sequential", "TensorFlow Sequential: one stage at a time, like sharding", &build_tf_sequential},
      {"gpipe", "GPipe: all forwards then all backwards, asynchronous (a stage starts when its input arrives)",
       &build_gpipe},
      {"1f1b", "1F1B (PipeDream-Flush): warm-up forwards, then one forward one backward, asynchronous", &build_1f1b},
  };
  return registry;
}

std::string schedule_names() {
  std::string out;
  for (const auto& s : schedules()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

Schedule make_schedule(Mode mode, const Scenario& sc, const Plan& plan) {
  const std::string name = mode == Mode::Sharded ? "sharded" : sc.execution.schedule;
  const int ipus = static_cast<int>(plan.ipus.size());
  const ScheduleContext context{sc, plan, sc.hardware.sync_seconds(ipus)};
  for (const auto& s : schedules()) {
    if (s.name != name) continue;
    if (mode == Mode::Pipelined && name == "sharded")
      throw InputError(sc.file, sc.execution_pointer("schedule"), "scenario.unknown-schedule",
                       "\"sharded\" is a mode, not a pipeline schedule (known: " + schedule_names() + ")");
    return s.build(context);
  }
  throw InputError(sc.file, sc.execution_pointer("schedule"), "scenario.unknown-schedule",
                   "unknown schedule \"" + name + "\" (known: " + schedule_names() + ")");
}

std::vector<const PlanCopy*> ScheduleContext::copies_from(int stage, bool gradient) const {
  std::vector<const PlanCopy*> out;
  for (const PlanCopy& c : plan.copies)
    if (c.from_stage == stage && c.gradient == gradient) out.push_back(&c);
  return out;
}

std::vector<const PlanCopy*> ScheduleContext::copies_into(int stage, bool gradient) const {
  std::vector<const PlanCopy*> out;
  for (const PlanCopy& c : plan.copies)
    if (c.to_stage == stage && c.gradient == gradient) out.push_back(&c);
  return out;
}

void check_pipelinable(const ScheduleContext& ctx) {
  const Scenario& sc = ctx.scenario;
  if (!ctx.plan.annotated)
    throw InputError(sc.model.file, "/ops", "pipeline.needs-virtual-graphs",
                     "pipelining needs virtualGraph annotations on the ops; this model has none");
  if (ctx.plan.ipus.size() < 2)
    throw InputError(sc.model.file, "/ops", "pipeline.single-ipu",
                     "pipelining needs more than one IPU; every op of this model is on virtualGraph " +
                         std::to_string(ctx.plan.ipus.front().id));
}

void depth_error(const ScheduleContext& ctx, const std::string& rule, const std::string& message) {
  const Scenario& sc = ctx.scenario;
  throw InputError(sc.file, sc.execution_pointer(sc.execution.training ? "gradientAccumulation" : "batchesPerStep"),
                   rule, message);
}

ProgramBuilder::ProgramBuilder(const ScheduleContext& context, std::string name, bool recompute)
    : context_(context), recompute_(recompute) {
  schedule_.name = std::move(name);
  schedule_.sync_seconds = context.sync_seconds;
  for (const auto& ipu : context.plan.ipus) schedule_.programs.push_back(Program{ipu.id, {}});
}

Program& ProgramBuilder::program_of(int ipu) {
  for (auto& p : schedule_.programs)
    if (p.ipu == ipu) return p;
  throw std::logic_error("no program for IPU " + std::to_string(ipu));
}

void ProgramBuilder::sync_all(double seconds) {
  Step s;
  s.kind = StepKind::Sync;
  s.seconds = seconds;
  for (auto& p : schedule_.programs) p.steps.push_back(s);
}

void ProgramBuilder::exchange(const std::vector<const PlanCopy*>& copies) {
  sync_all(context_.sync_seconds);
  for (auto& p : schedule_.programs) {
    Step s;
    s.kind = StepKind::Exchange;
    for (const PlanCopy* c : copies)
      if (c->src_ipu == p.ipu || c->dst_ipu == p.ipu) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
    if (!s.transfers.empty()) p.steps.push_back(std::move(s));
  }
  // The copy phase is one global exchange: nobody leaves it before the last copy lands.
  sync_all(0);
}

void ProgramBuilder::host_input(const PlanStage& stage, std::int64_t micro_batch) {
  if (!context_.scenario.execution.host_io || stage.host_input_bytes <= 0) return;
  Step s;
  s.kind = StepKind::HostInput;
  s.bytes = stage.host_input_bytes;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  s.pass = Pass::Forward;
  program_of(stage.ipu).steps.push_back(s);
}

void ProgramBuilder::host_output(const PlanStage& stage, std::int64_t micro_batch) {
  if (!context_.scenario.execution.host_io || stage.host_output_bytes <= 0) return;
  Step s;
  s.kind = StepKind::HostOutput;
  s.bytes = stage.host_output_bytes;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  s.pass = Pass::Forward;
  program_of(stage.ipu).steps.push_back(s);
}

void ProgramBuilder::compute(const PlanStage& stage, std::int64_t micro_batch, Work work) {
  Step s;
  s.kind = StepKind::Compute;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  Program& p = program_of(stage.ipu);
  if (!stage.backward && work != Work::BackwardOnly) {
    s.pass = Pass::Forward;
    s.seconds = stage.forward_seconds;
    p.steps.push_back(s);
  }
  // The loss stage runs its backward right after its forward (it needs no recomputation).
  if ((stage.backward || stage.backward_seconds > 0) && work != Work::ForwardOnly) {
    s.pass = Pass::Backward;
    s.seconds = stage.backward_seconds + (recompute_ ? stage.recompute_seconds : 0.0);
    p.steps.push_back(s);
  }
}

void ProgramBuilder::send(int ipu, const std::vector<const PlanCopy*>& copies) {
  if (copies.empty()) return;
  Step s;
  s.kind = StepKind::Send;
  for (const PlanCopy* c : copies) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
  program_of(ipu).steps.push_back(std::move(s));
}

void ProgramBuilder::receive(int ipu, const std::vector<const PlanCopy*>& copies) {
  if (copies.empty()) return;
  Step s;
  s.kind = StepKind::Receive;
  for (const PlanCopy* c : copies) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
  program_of(ipu).steps.push_back(std::move(s));
}

void ProgramBuilder::weight_updates(bool in_parallel) {
  sync_all(context_.sync_seconds);
  for (const auto& ipu : context_.plan.ipus) {
    if (ipu.update_seconds <= 0) continue;
    Step s;
    s.kind = StepKind::Compute;
    s.pass = Pass::Update;
    s.seconds = ipu.update_seconds;
    program_of(ipu.id).steps.push_back(s);
    if (!in_parallel) sync_all(context_.sync_seconds);
  }
  if (in_parallel) sync_all(context_.sync_seconds);
}

Schedule ProgramBuilder::finish(std::int64_t micro_batches, int cycles, std::vector<int> stash_depth) {
  schedule_.micro_batches = micro_batches;
  schedule_.cycles = cycles;
  schedule_.stash_depth = std::move(stash_depth);
  return std::move(schedule_);
}

} // namespace ipusim
