#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>

#include "sim/io/aliases.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/schedule/order.hpp"

namespace ipusim {

// The units the registry lists, each defined in its own file; nothing but the registry names
// them. Adding a schedule is its file, its line here and its line in schedules().
const ScheduleInfo& sharded_schedule();              // sharded.cpp
const ScheduleInfo& phased_schedule();               // phased.cpp
const ScheduleInfo& popart_schedule();               // popart.cpp
const ScheduleInfo& tf_grouped_schedule();           // tensorflow.cpp
const ScheduleInfo& tf_interleaved_schedule();       // tensorflow.cpp
const ScheduleInfo& tf_sequential_schedule();        // tensorflow.cpp
const ScheduleInfo& gpipe_schedule();                // asynchronous.cpp
const ScheduleInfo& one_f_one_b_schedule();          // asynchronous.cpp
const OrderScheduleInfo& interleaved_1f1b_order();   // interleaved_1f1b.cpp
const OrderScheduleInfo& breadth_first_order();      // breadth_first.cpp
const OrderScheduleInfo& zb_h1_order();              // zero_bubble.cpp
const OrderScheduleInfo& zb_h2_order();              // zero_bubble.cpp
const OrderScheduleInfo& zb_v_order();               // zb_v.cpp
const OrderScheduleInfo& v_half_order();             // v_shape.cpp
const OrderScheduleInfo& v_min_order();              // v_shape.cpp
const OrderScheduleInfo& dualpipe_order();           // dualpipe.cpp
const OrderScheduleInfo& dualpipev_order();          // dualpipe.cpp

namespace {

// A what-if schedule run from its order (not what PopART runs): build_from_order lays out its
// parts by the unit's placement and reads its stash depths from the order.
ScheduleInfo run_from_order(const OrderScheduleInfo& order) {
  ScheduleInfo s{order.name, order.description + "; constraints: " + order.constraints, &build_from_order, ""};
  s.order = &order;
  return s;
}

} // namespace

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> all = [] {
    std::vector<ScheduleInfo> out{sharded_schedule(),        phased_schedule(),          popart_schedule(),
                                  tf_grouped_schedule(),     tf_interleaved_schedule(),  tf_sequential_schedule(),
                                  gpipe_schedule(),          one_f_one_b_schedule()};
    const OrderScheduleInfo* const orders[] = {
        &interleaved_1f1b_order(),
        &breadth_first_order(),
        &zb_h1_order(),
        &zb_h2_order(),
        &zb_v_order(),
        &v_half_order(),
        &v_min_order(),
        &dualpipe_order(),
        &dualpipev_order(),
    };
    for (const OrderScheduleInfo* order : orders) out.push_back(run_from_order(*order));
    return out;
  }();
  return all;
}

const ScheduleInfo* find_schedule(const std::string& name) {
  for (const ScheduleInfo& s : schedules())
    if (s.name == name) return &s;
  return nullptr;
}

const ScheduleInfo& schedule_info(const std::string& name) {
  if (const ScheduleInfo* s = find_schedule(name)) return *s;
  throw std::invalid_argument("no schedule \"" + name + "\" in the registry (known: " + schedule_names() + ")");
}

bool is_what_if_schedule(const std::string& name) {
  const ScheduleInfo* s = find_schedule(name);
  return s != nullptr && s->what_if();
}

std::string schedule_names() {
  std::string out;
  for (const auto& s : schedules()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

std::string framework_schedules() {
  std::vector<std::pair<std::string, std::string>> by_framework;  // in the registry's order
  for (const auto& s : schedules()) {
    if (!s.pipeline || s.what_if()) continue;
    const std::string framework = s.run_by.substr(0, s.run_by.find(" ("));
    auto it = std::find_if(by_framework.begin(), by_framework.end(), [&](const auto& f) { return f.first == framework; });
    if (it == by_framework.end()) by_framework.emplace_back(framework, s.name);
    else it->second += ", " + s.name;
  }
  std::string out;
  for (const auto& [framework, names] : by_framework) out += (out.empty() ? "" : "; ") + framework + ": " + names;
  return out;
}

void check_schedule_name(const Scenario& sc) {
  const std::string& name = sc.execution.schedule;
  const ScheduleInfo* found = find_schedule(name);
  if (found != nullptr && found->pipeline) return;
  std::string known;
  std::vector<std::string> names;
  for (const auto& s : schedules())
    if (s.pipeline) {
      known += (known.empty() ? "" : ", ") + s.name;
      names.push_back(s.name);
    }
  throw InputError(sc.file, sc.execution_pointer("schedule"), "scenario.unknown-schedule",
                   (found != nullptr ? "\"" + name + "\" is a mode, not a pipeline schedule"
                                     : "unknown pipeline schedule \"" + name + "\"" + did_you_mean(name, names)) +
                       " (known: " + known + ")");
}

Plan make_plan(const Scenario& sc, const ModelGraph& g) { return make_plan(sc, g, sc.execution.modes); }

Plan make_plan(const Scenario& sc, const ModelGraph& g, const std::vector<Mode>& modes) {
  const ScheduleInfo* info = find_schedule(sc.execution.schedule);
  return make_plan(sc, g, modes, info != nullptr ? info->annotated_stages : AnnotatedStages::MergedOnIpu);
}

Schedule make_schedule(Mode mode, const Scenario& sc, const Plan& plan) {
  check_schedule_name(sc);
  const std::string name = mode == Mode::Sharded ? "sharded" : mode == Mode::Phased ? "phased" : sc.execution.schedule;
  // Every IPU of every group takes part in a sync (a tensor-parallel group's shards are one program's IPUs).
  const int ipus = static_cast<int>(plan.ipus.size() * static_cast<std::size_t>(sc.execution.replicas) *
                                    static_cast<std::size_t>(std::max<std::int64_t>(1, sc.execution.tensor_parallel)));
  const ScheduleContext context{sc, plan, sc.hardware.sync_seconds(ipus)};

  if (const ScheduleInfo* s = find_schedule(name)) return s->build(context);
  throw InputError(sc.file, sc.execution_pointer("schedule"), "scenario.unknown-schedule",
                   "unknown schedule \"" + name + "\" (known: " + schedule_names() + ")");
}

std::vector<int> stash_depths(const std::string& schedule, int N, std::int64_t depth, bool training) {
  std::vector<int> out(static_cast<std::size_t>(N), 0);
  const ScheduleInfo* info = find_schedule(schedule);
  if (!training || info == nullptr || info->stash_depth == nullptr) return out;
  for (int s = 0; s < N; ++s) out[static_cast<std::size_t>(s)] = info->stash_depth(s, N, depth);
  return out;
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

void check_pipelinable(const ScheduleContext& ctx, bool one_ipu_allowed) {
  const Scenario& sc = ctx.scenario;
  if (const auto& refused = ctx.plan.pipelining_refused)
    throw InputError(refused->file(), refused->pointer(), refused->rule(),
                     refused->message() + ". PopART checks this only when pipelining; sharded runs accept the "
                     "model (--mode sharded)");
  if (!ctx.plan.annotated)
    throw InputError(sc.model.file, "/ops", "pipeline.needs-virtual-graphs",
                     "pipelining needs virtualGraph annotations on the ops; this model has none");
  if (ctx.plan.ipus.size() < 2 && !one_ipu_allowed)
    throw InputError(sc.model.file, "/ops", "pipeline.single-ipu",
                     "pipelining needs more than one IPU; every op of this model is on virtualGraph " +
                         std::to_string(ctx.plan.ipus.front().id) +
                         ": run it sharded (--mode sharded), or let `ipusim plan` split it over the system's IPUs");
}

void depth_error(const ScheduleContext& ctx, const std::string& rule, const std::string& message) {
  const Scenario& sc = ctx.scenario;
  throw InputError(sc.file, sc.execution_pointer(sc.execution.training ? "gradientAccumulation" : "batchesPerStep"),
                   rule, message);
}

ProgramBuilder::ProgramBuilder(const ScheduleContext& context, std::string name, bool recompute)
    : context_(context), recompute_(recompute) {
  const Scenario& sc = context.scenario;
  const Execution& ex = sc.execution;
  schedule_.name = std::move(name);
  schedule_.sync_seconds = context.sync_seconds;
  width_ = context.plan.ipus.back().id + 1;
  replicas_ = static_cast<int>(ex.replicas);
  schedule_.replicas = replicas_;
  copies_ = static_cast<int>(context.plan.copies.size());
  physical_ = physical_ipus(sc, width_);
  for (int r = 0; r < replicas_; ++r)
    for (const auto& ipu : context.plan.ipus) {
      Program program{physical_of(r, ipu.id), {}};
      program.replica = r;
      program.virtual_ipu = ipu.id;
      schedule_.programs.push_back(std::move(program));
    }
  std::sort(schedule_.programs.begin(), schedule_.programs.end(),
            [](const Program& a, const Program& b) { return a.ipu < b.ipu; });
  for (std::size_t i = 0; i < schedule_.programs.size(); ++i) index_[schedule_.programs[i].ipu] = i;
}

int ProgramBuilder::physical_of(int replica, int virtual_ipu) const {
  return physical_[static_cast<std::size_t>(replica * width_ + virtual_ipu)];
}

void ProgramBuilder::append(int virtual_ipu, const Step& step) {
  for (int r = 0; r < replicas_; ++r) {
    Step s = step;
    for (Transfer& t : s.transfers) {
      t.src_ipu = physical_of(r, t.src_ipu);
      t.dst_ipu = physical_of(r, t.dst_ipu);
      t.copy += r * copies_;
    }
    push(index_.at(physical_of(r, virtual_ipu)), std::move(s));
  }
}

void ProgramBuilder::push(std::size_t program, Step step) {
  schedule_.programs[program].steps.push_back(std::move(step));
}

void ProgramBuilder::sync_all(double seconds) {
  Step s;
  s.kind = StepKind::Sync;
  s.seconds = seconds;
  for (std::size_t p = 0; p < schedule_.programs.size(); ++p) push(p, s);
}

void ProgramBuilder::exchange(const std::vector<const PlanCopy*>& copies, Pass pass) {
  sync_all(context_.sync_seconds);
  for (const PlanIpu& ipu : context_.plan.ipus) {
    Step s;
    s.kind = StepKind::Exchange;
    s.pass = pass;
    for (const PlanCopy* c : copies)
      if (c->src_ipu == ipu.id || c->dst_ipu == ipu.id) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
    if (!s.transfers.empty()) append(ipu.id, s);
  }
  // The copy phase is one global exchange: nobody leaves it before the last copy lands.
  sync_all(0);
}

void ProgramBuilder::host_input(const PlanStage& stage, std::int64_t micro_batch) {
  host_stream(stage, micro_batch, StepKind::HostInput, stage.host_input_bytes);
}

void ProgramBuilder::host_output(const PlanStage& stage, std::int64_t micro_batch) {
  host_stream(stage, micro_batch, StepKind::HostOutput, stage.host_output_bytes);
}

void ProgramBuilder::host_stream(const PlanStage& stage, std::int64_t micro_batch, StepKind kind, double bytes) {
  if (!context_.scenario.execution.host_io || bytes <= 0) return;
  Step s;
  s.kind = kind;
  s.overlapped = context_.scenario.execution.io_tiles > 0;
  s.prefetched = prefetched();
  s.bytes = bytes;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  s.pass = Pass::Forward;
  append(stage.ipu, s);
}

void ProgramBuilder::streaming_memory(int virtual_ipu, bool load, double bytes, int stage, Pass pass, bool overlapped) {
  if (bytes <= 0) return;
  Step s;
  s.kind = load ? StepKind::StateLoad : StepKind::StateStore;
  s.bytes = bytes;
  s.stage = stage;
  s.micro_batch = 0;
  s.pass = pass;
  s.overlapped = overlapped;
  append(virtual_ipu, s);
}

void ProgramBuilder::compute(const PlanStage& stage, std::int64_t micro_batch) {
  // The loss stage runs its backward right after its forward (it needs no recomputation).
  if (!stage.backward) compute(stage, micro_batch, Pass::Forward);
  compute(stage, micro_batch, Pass::Backward);
}

void ProgramBuilder::compute(const PlanStage& stage, std::int64_t micro_batch, Pass pass) {
  Step s;
  s.kind = StepKind::Compute;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  s.pass = pass;
  if (pass == Pass::Forward) {
    if (stage.backward) return;
    s.seconds = stage.forward_seconds;
    append(stage.ipu, s);
    return;
  }
  if (!is_backward(pass)) throw std::invalid_argument("ProgramBuilder::compute: " + pass_name(pass) + " is no stage's pass");
  if (!stage.backward && stage.backward_seconds <= 0) return;  // a forward stage of inference
  const double recompute = recompute_ ? stage.recompute_seconds : 0.0;
  s.seconds = pass == Pass::InputGradient    ? stage.backward_seconds - stage.weight_gradient_seconds + recompute
              : pass == Pass::WeightGradient ? stage.weight_gradient_seconds
                                             : stage.backward_seconds + recompute;
  append(stage.ipu, s);
}

void ProgramBuilder::send(int ipu, const std::vector<const PlanCopy*>& copies) {
  if (copies.empty()) return;
  Step s;
  s.kind = StepKind::Send;
  for (const PlanCopy* c : copies) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
  append(ipu, s);
}

void ProgramBuilder::receive(int ipu, const std::vector<const PlanCopy*>& copies) {
  if (copies.empty()) return;
  Step s;
  s.kind = StepKind::Receive;
  for (const PlanCopy* c : copies) s.transfers.push_back({c->id, c->src_ipu, c->dst_ipu, c->bytes});
  append(ipu, s);
}

void ProgramBuilder::update_steps(int virtual_ipu, Step s, double seconds, double state_bytes) {
  if (state_bytes > 0) {
    s.kind = StepKind::StateLoad;
    s.bytes = state_bytes;
    append(virtual_ipu, s);
  }
  s.kind = StepKind::Compute;
  s.bytes = 0;
  s.seconds = seconds;
  append(virtual_ipu, s);
  if (state_bytes > 0) {
    s.kind = StepKind::StateStore;
    s.seconds = 0;
    s.bytes = state_bytes;
    append(virtual_ipu, s);
  }
}

void ProgramBuilder::update(const PlanIpu& ipu, double fraction) {
  if (fraction <= 0 || (ipu.update_seconds <= 0 && ipu.state_bytes <= 0)) return;
  Step s;
  s.pass = Pass::Update;
  update_steps(ipu.id, s, ipu.update_seconds * fraction, ipu.state_bytes * fraction);
}

void ProgramBuilder::weight_updates(bool all_at_once) {
  const Execution& ex = context_.scenario.execution;
  const bool sharded_state = ex.replicated_tensor_sharding && replicas_ > 1;
  sync_all(context_.sync_seconds);
  if (replicas_ > 1) {
    for (const PlanIpu& ipu : context_.plan.ipus) {
      reduce_scatter(ipu.id, ipu.weight_bytes);
      if (!sharded_state) all_gather(ipu.id, ipu.weight_bytes);
      per_tensor_collectives(ipu, sharded_state);
    }
    sync_all(context_.sync_seconds);
  }
  const auto& excluded = ex.weight_update_excluded_ipus;
  auto is_excluded = [&](int id) { return std::find(excluded.begin(), excluded.end(), id) != excluded.end(); };
  const WeightUpdateSchedule schedule = all_at_once ? WeightUpdateSchedule::OverlapCycleOptimized
                                                    : ex.weight_update_schedule;
  auto one_at_a_time = [&](const PlanIpu& ipu, double fraction) {
    if (fraction <= 0 || (ipu.update_seconds <= 0 && ipu.state_bytes <= 0)) return;
    update(ipu, fraction);
    sync_all(context_.sync_seconds);
  };
  if (schedule == WeightUpdateSchedule::Serial) {
    for (const PlanIpu& ipu : context_.plan.ipus) one_at_a_time(ipu, 1);
  } else {
    for (const PlanIpu& ipu : context_.plan.ipus)
      if (!all_at_once && is_excluded(ipu.id)) one_at_a_time(ipu, 1);
    // OverlapMemoryOptimized overlaps only updates of identically shaped weights.
    const bool by_shape = schedule == WeightUpdateSchedule::OverlapMemoryOptimized;
    for (const PlanIpu& ipu : context_.plan.ipus)
      if (all_at_once || !is_excluded(ipu.id)) update(ipu, by_shape ? ipu.shared_update_fraction : 1);
    sync_all(context_.sync_seconds);
    if (by_shape)
      for (const PlanIpu& ipu : context_.plan.ipus)
        if (!is_excluded(ipu.id)) one_at_a_time(ipu, 1 - ipu.shared_update_fraction);
  }
  if (sharded_state) {
    for (const PlanIpu& ipu : context_.plan.ipus) all_gather(ipu.id, ipu.weight_bytes);
    sync_all(context_.sync_seconds);
  }
}

void ProgramBuilder::stage_update(const PlanStage& stage, std::int64_t micro_batch) {
  if (stage.update_seconds <= 0 && stage.state_bytes <= 0) return;
  const bool sharded_state = context_.scenario.execution.replicated_tensor_sharding && replicas_ > 1;
  if (replicas_ > 1) {
    reduce_scatter(stage.ipu, stage.weight_bytes);
    if (!sharded_state) all_gather(stage.ipu, stage.weight_bytes);
  }
  Step s;
  s.pass = Pass::Update;
  s.stage = stage.id;
  s.micro_batch = micro_batch;
  update_steps(stage.ipu, s, stage.update_seconds, stage.state_bytes);
  if (sharded_state) all_gather(stage.ipu, stage.weight_bytes);
}

void ProgramBuilder::phase_update(const PlanStage& stage, double load_bytes, double store_bytes) {
  if (stage.update_seconds <= 0 && load_bytes <= 0) return;
  streaming_memory(stage.ipu, true, load_bytes, stage.id, Pass::Update);
  if (replicas_ > 1) {
    reduce_scatter(stage.ipu, stage.weight_bytes);
    // Sharded weights stay sharded: the next load gathers them (phased.cpp).
    if (!context_.scenario.execution.replicated_tensor_sharding) all_gather(stage.ipu, stage.weight_bytes);
  }
  Step s;
  s.kind = StepKind::Compute;
  s.pass = Pass::Update;
  s.stage = stage.id;
  s.micro_batch = 0;
  s.seconds = stage.update_seconds;
  append(stage.ipu, s);
  streaming_memory(stage.ipu, false, store_bytes, stage.id, Pass::Update);
}

int ProgramBuilder::repeat(const std::string& name, std::int64_t times, std::int64_t stride,
                           const std::function<void()>& body, int loop) {
  if (loop < 0) {
    loop = static_cast<int>(schedule_.loops.size());
    schedule_.loops.push_back(name);
  }
  if (times <= 0) return loop;
  std::vector<std::pair<std::size_t, std::size_t>> before;  // steps and repeats of each program
  for (const Program& p : schedule_.programs) before.emplace_back(p.steps.size(), p.repeats.size());
  body();
  for (std::size_t i = 0; i < schedule_.programs.size(); ++i) {
    Program& p = schedule_.programs[i];
    const auto [steps, repeats] = before[i];
    if (p.steps.size() == steps || times == 1) continue;
    // Before the repeats the body made: outer ranges are listed before the ones inside them.
    p.repeats.insert(p.repeats.begin() + static_cast<std::ptrdiff_t>(repeats),
                     Repeat{steps, p.steps.size() - steps, times, stride, loop});
  }
  return loop;
}

bool ProgramBuilder::prefetched() const {
  const Scenario& sc = context_.scenario;
  return sc.execution.prefetch_data_streams && sc.hardware.host_link.gateway_bandwidth_bytes_per_s > 0;
}

void ProgramBuilder::host_round_trip(std::int64_t micro_batches) {
  const Scenario& sc = context_.scenario;
  const HostLinkSpec& host = sc.hardware.host_link;
  Step s;
  s.kind = StepKind::HostRoundTrip;
  s.seconds = host.run_overhead_s;
  if (prefetched() && sc.execution.host_io) {
    // Every stage streams each micro-batch once a step; IPUs behind one host link share it.
    std::map<int, double> bytes_of_link;
    for (int r = 0; r < replicas_; ++r)
      for (const PlanStage& st : context_.plan.stages)
        bytes_of_link[physical_of(r, st.ipu) / host.shared_by] +=
            (st.host_input_bytes + st.host_output_bytes) * static_cast<double>(micro_batches);
    for (const auto& [link, bytes] : bytes_of_link)
      s.floor_seconds = std::max(s.floor_seconds, bytes / host.bandwidth_bytes_per_s);
  }
  if (s.seconds <= 0 && s.floor_seconds <= 0) return;
  for (std::size_t p = 0; p < schedule_.programs.size(); ++p) push(p, s);
}

Schedule ProgramBuilder::finish(std::int64_t micro_batches, int cycles, std::vector<int> stash_depth) {
  host_round_trip(micro_batches);
  schedule_.micro_batches = micro_batches;
  schedule_.cycles = cycles;
  schedule_.stash_depth = std::move(stash_depth);
  schedule_.recompute = recompute_;
  return std::move(schedule_);
}

} // namespace ipusim
