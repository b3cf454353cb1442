#include "sim/schedule/order_parts.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

[[noreturn]] void refuse(const ScheduleContext& ctx, const std::string& rule, const std::string& message) {
  throw InputError(ctx.scenario.file, ctx.scenario.execution_pointer("schedule"), rule, message);
}

std::string ipus_of_stages(const Plan& plan) {
  std::ostringstream out;
  for (int k = 0; k < plan.forward_stage_count; ++k) out << (k ? ", " : "") << plan.stages[static_cast<std::size_t>(k)].ipu;
  return "[" + out.str() + "]";
}

OrderPart whole(const Plan& plan, int k) {
  OrderPart part;
  part.stage = k;
  part.forward = plan.stages[static_cast<std::size_t>(k)];
  part.backward = backward_of(plan, k);
  return part;
}

// The V's merged middle stage k as two parts: the ops of the lower half of its annotated
// stages (pipelineStage ids) first, the rest second. Without pipelineStage annotations (or
// with one annotated stage) the whole stage is the first part and the second is empty.
std::pair<OrderPart, OrderPart> split_middle(const ScheduleContext& ctx, int k) {
  const Plan& plan = ctx.plan;
  OrderPart first = whole(plan, k), second;
  const PlanStage& stage = plan.stages[static_cast<std::size_t>(k)];
  const auto& annotated = stage.annotated_stages;
  const auto& ops = ctx.scenario.model.ops;
  const bool annotated_by_stage = std::all_of(stage.ops.begin(), stage.ops.end(), [&](std::size_t op) {
    return ops[op].pipeline_stage.has_value();
  });
  if (annotated.size() < 2 || !annotated_by_stage) return {first, second};
  const std::int64_t last_of_first = annotated[(annotated.size() - 1) / 2];
  double f = 0, b = 0, w = 0;
  for (std::size_t op : stage.ops) {
    if (*ops[op].pipeline_stage > last_of_first) continue;
    f += plan.op_timings[op].forward.cycles() / plan.clock_hz;
    b += plan.op_timings[op].backward.cycles() / plan.clock_hz;
    w += plan.op_timings[op].backward.weight_gradient_cycles / plan.clock_hz;
  }
  second = first;
  first.last = false;
  second.first = false;
  auto share = [](OrderPart& part, double fwd, double bwd, double wgrad, bool recomputes) {
    part.forward.forward_seconds = fwd;
    part.backward.backward_seconds = bwd;
    part.backward.weight_gradient_seconds = wgrad;
    if (recomputes) part.backward.recompute_seconds = fwd;
  };
  const bool recomputes = k != plan.loss_stage;
  const PlanStage& bwd = backward_of(plan, k);
  share(second, stage.forward_seconds - f, bwd.backward_seconds - b, bwd.weight_gradient_seconds - w, recomputes);
  share(first, f, b, w, recomputes);
  return {first, second};
}

int ipu_of_stage(const Plan& plan, int k) { return plan.stages[static_cast<std::size_t>(k)].ipu; }

// One device per forward stage: P devices, those of stages on one IPU sharing it.
PartLayout one_part_per_stage(const Plan& plan) {
  PartLayout l;
  l.devices = plan.forward_stage_count;
  for (int k = 0; k < l.devices; ++k) l.parts.push_back({whole(plan, k)});
  return l;
}

// The model's chunks: v = P/p >= 2 forward stages per IPU, stage c*p+d on the IPU of stage d.
PartLayout interleaved_parts(const ScheduleContext& ctx, const std::string& name) {
  const Plan& plan = ctx.plan;
  const int P = plan.forward_stage_count;
  const int p = static_cast<int>(plan.ipus.size());
  const int v = P / p;
  if (P % p != 0 || v < 2)
    refuse(ctx, "pipeline.virtual-stages",
           name + " runs v >= 2 forward stages per IPU; this model has " + std::to_string(P) + " forward stages on " +
               std::to_string(p) + " IPUs");
  for (int k = 0; k < P; ++k)
    if (ipu_of_stage(plan, k) != ipu_of_stage(plan, k % p))
      refuse(ctx, "pipeline.virtual-stages",
             name + " needs forward stage c*p+d on the IPU of stage d (p = " + std::to_string(p) + "); stage " +
                 std::to_string(k) + " is on IPU " + std::to_string(ipu_of_stage(plan, k)));
  PartLayout l;
  l.devices = p;
  l.chunks = v;
  l.parts.resize(static_cast<std::size_t>(p));
  for (int k = 0; k < P; ++k) l.parts[static_cast<std::size_t>(k % p)].push_back(whole(plan, k));
  return l;
}

// Device d runs stage d (chunk 0, pipeline 0) and stage P-1-d (chunk 1, pipeline 1) on the IPU
// of stage d: one forward stage per IPU, each IPU its own.
PartLayout dualpipe_parts(const ScheduleContext& ctx, const std::string& name) {
  const Plan& plan = ctx.plan;
  const int P = plan.forward_stage_count;
  std::set<int> distinct;
  for (int k = 0; k < P; ++k) distinct.insert(ipu_of_stage(plan, k));
  if (static_cast<int>(distinct.size()) != P)
    refuse(ctx, "pipeline.dualpipe-placement",
           name + " runs stage d and stage p-1-d on IPU d, so every forward stage needs an IPU of its own "
                  "(heads last, not back on IPU 0); this model's " + std::to_string(P) +
               " forward stages are on IPUs " + ipus_of_stages(plan));
  PartLayout l;
  l.devices = P;
  l.chunks = 2;
  for (int d = 0; d < P; ++d) {
    OrderPart mirror = whole(plan, P - 1 - d);
    mirror.mirrored = true;
    mirror.forward.ipu = mirror.backward.ipu = ipu_of_stage(plan, d);
    l.parts.push_back({whole(plan, d), mirror});
  }
  return l;
}

// The V: stage j on the IPU of stage P-1-j; an odd P has the two middle parts merged.
PartLayout v_parts(const ScheduleContext& ctx, const std::string& name) {
  const Plan& plan = ctx.plan;
  const int P = plan.forward_stage_count;
  bool v = P >= 3;
  for (int k = 0; k < P && v; ++k) v = ipu_of_stage(plan, k) == ipu_of_stage(plan, P - 1 - k);
  if (!v)
    refuse(ctx, "pipeline.v-placement",
           name + " runs a V: parts d and 2p-1-d on IPU d, so annotate 2p stages with stage j on the IPU of stage "
                  "2p-1-j (the two middle stages on one IPU, merged or not); this model's " + std::to_string(P) +
               " forward stages are on IPUs " + ipus_of_stages(plan));
  const int half = (P + 1) / 2;
  PartLayout l;
  l.devices = half;
  l.chunks = 2;
  l.parts.resize(static_cast<std::size_t>(half));
  for (int d = 0; d < half; ++d) {
    auto& row = l.parts[static_cast<std::size_t>(d)];
    if (P % 2 == 1 && d == half - 1) {
      const auto [first, second] = split_middle(ctx, d);
      row = {first, second};
    } else {
      row = {whole(plan, d), whole(plan, P - 1 - d)};
    }
  }
  return l;
}

PartLayout parts_by_placement(const ScheduleContext& ctx, const OrderScheduleInfo& schedule) {
  switch (schedule.placement) {
  case PartPlacement::OnePerStage: return one_part_per_stage(ctx.plan);
  case PartPlacement::Interleaved: return interleaved_parts(ctx, schedule.name);
  case PartPlacement::V: return v_parts(ctx, schedule.name);
  case PartPlacement::DualPipeMirrored: return dualpipe_parts(ctx, schedule.name);
  }
  throw std::logic_error("lay_out_parts: unknown placement of " + schedule.name);
}

// Each device's IPU and each part's F, B (recomputation included) and W.
void time_parts(const ScheduleContext& ctx, PartLayout& l) {
  const Plan& plan = ctx.plan;
  l.times = OpTimes::uniform(l.devices, l.chunks, 0, 0, 0);
  for (int d = 0; d < l.devices; ++d) {
    const auto D = static_cast<std::size_t>(d);
    l.ipu_of_device.push_back(ipu_of_stage(plan, l.parts[D].front().stage));
    for (int c = 0; c < l.chunks; ++c) {
      const auto C = static_cast<std::size_t>(c);
      const OrderPart& part = l.parts[D][C];
      if (part.stage < 0) continue;
      const PlanStage& bwd = part.backward;
      l.times.f[D][C] = part.forward.forward_seconds;
      l.times.w[D][C] = bwd.weight_gradient_seconds;
      l.times.b[D][C] = bwd.backward_seconds - bwd.weight_gradient_seconds +
                        (ctx.recompute() && part.stage != plan.loss_stage ? bwd.recompute_seconds : 0.0);
    }
  }
}

// What W still needs of a stage's activations: its share of the backward's time, as a proxy
// for dW's inputs (X and dY) against everything B reads.
double weight_gradient_share(const Plan& plan) {
  double w = 0, backward = 0;
  for (int k = 0; k < plan.forward_stage_count; ++k)
    w += backward_of(plan, k).weight_gradient_seconds, backward += backward_of(plan, k).backward_seconds;
  return backward > 0 ? std::clamp(w / backward, 0.0, 1.0) : 1.0;
}

} // namespace

PartLayout lay_out_parts(const ScheduleContext& ctx, const OrderScheduleInfo& schedule) {
  PartLayout l = parts_by_placement(ctx, schedule);
  time_parts(ctx, l);
  l.w_share = weight_gradient_share(ctx.plan);
  return l;
}

Plan lowering_plan(const Plan& plan, const PartLayout& layout) {
  std::map<int, int> partner;  // IPU -> the IPU whose stage it mirrors
  for (int d = 0; d < layout.devices; ++d)
    for (const OrderPart& part : layout.parts[static_cast<std::size_t>(d)])
      if (part.mirrored) partner[layout.ipu_of_device[static_cast<std::size_t>(d)]] = plan.stages[static_cast<std::size_t>(part.stage)].ipu;
  if (partner.empty()) return plan;
  Plan dual = plan;
  const int n = static_cast<int>(plan.copies.size());
  std::map<int, int> mirror_of;  // an IPU -> the IPU that runs its stage a second time
  for (const auto& entry : partner) mirror_of[entry.second] = entry.first;
  auto mirror = [&](int ipu) { return mirror_of.count(ipu) ? mirror_of.at(ipu) : ipu; };
  for (const PlanCopy& c : plan.copies) {
    PlanCopy m = c;
    m.id = n + c.id;
    m.src_ipu = mirror(c.src_ipu);
    m.dst_ipu = mirror(c.dst_ipu);
    dual.copies.push_back(m);
  }
  auto with_id = [](auto& ipus, int id) -> auto& {
    return *std::find_if(ipus.begin(), ipus.end(), [id](const PlanIpu& i) { return i.id == id; });
  };
  for (const auto& entry : partner) {
    PlanIpu& ipu = with_id(dual.ipus, entry.first);
    const PlanIpu& other = with_id(plan.ipus, entry.second);
    ipu.weights.insert(ipu.weights.end(), other.weights.begin(), other.weights.end());
    ipu.weight_elements += other.weight_elements;
    ipu.weight_bytes += other.weight_bytes;
    ipu.weight_tensors += other.weight_tensors;
    ipu.shardable_weight_tensors += other.shardable_weight_tensors;
    ipu.update_seconds += other.update_seconds;
    ipu.state_bytes += other.state_bytes;
    ipu.temp_bytes_per_tile = std::max(ipu.temp_bytes_per_tile, other.temp_bytes_per_tile);
  }
  for (const auto& entry : partner) {
    PlanCopy sum;
    sum.id = static_cast<int>(dual.copies.size());
    sum.from_stage = sum.to_stage = -1;
    sum.src_ipu = entry.first;
    sum.dst_ipu = entry.second;
    sum.bytes = with_id(dual.ipus, entry.first).weight_bytes;
    sum.gradient = true;
    dual.copies.push_back(sum);
  }
  return dual;
}

} // namespace ipusim
