// The what-if schedules (order.hpp) as per-IPU programs. The plan's forward stages are the
// order's parts; each F, B, W or BW becomes its compute step on the part's IPU, with the
// stage's copies: received before, sent after, asynchronously as under 1F1B (a copy exists only
// between parts on different IPUs). Weight update, replicas and all-reduce as for 1F1B. The
// programs are unrolled (an order is not periodic in general), so their size grows with G.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/io/input_error.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// The programs are unrolled, so memory and build time grow with G (about 20 KiB per micro-batch
// on a 4-IPU plan): refused here, in milliseconds, rather than after gigabytes of orders.
constexpr std::int64_t kMaxWhatIfDepth = 65536;

[[noreturn]] void refuse(const ScheduleContext& ctx, const std::string& rule, const std::string& message) {
  throw InputError(ctx.scenario.file, ctx.scenario.execution_pointer("schedule"), rule, message);
}

} // namespace

bool is_what_if_schedule(const std::string& name) {
  return std::any_of(order_schedules().begin(), order_schedules().end(),
                     [&](const OrderScheduleInfo& i) { return i.name == name; });
}

Schedule build_from_order(const ScheduleContext& ctx) {
  check_pipelinable(ctx);
  const Plan& plan = ctx.plan;
  const std::string& name = ctx.scenario.execution.schedule;
  if (!plan.training)
    refuse(ctx, "pipeline.training-only", name + " orders forward and backward passes; this run is inference");
  const int P = plan.forward_stage_count, L = plan.loss_stage;
  const int p = static_cast<int>(plan.ipus.size());
  const auto info = std::find_if(order_schedules().begin(), order_schedules().end(),
                                 [&](const OrderScheduleInfo& i) { return i.name == name; });
  const int v = P / p;
  if (name == "dualpipe")
    refuse(ctx, "pipeline.dualpipe-placement",
           "dualpipe runs two pipelines in opposite directions, IPU d holding stages d and p-1-d (two copies of "
           "the weights); a plan holds one pipeline, so lowering it to IPU programs is not built yet (its order "
           "and timing are in sim/schedule/order.hpp)");
  if (info->chunks == 2 && name != "interleaved-1f1b")
    refuse(ctx, "pipeline.v-placement",
           name + " needs the V placement (parts d and 2p-1-d on IPU d), whose two middle parts share an IPU and "
                  "are merged into one plan stage; lowering it to IPU programs is not built yet (its order and "
                  "timing are in sim/schedule/order.hpp)");
  if (P % p != 0 || (info->chunks == 1 && v != 1) || (info->chunks == 0 && v < 2))
    refuse(ctx, "pipeline.virtual-stages",
           name + (info->chunks == 1 ? " runs one forward stage per IPU" : " runs v >= 2 forward stages per IPU") +
               "; this model has " + std::to_string(P) + " forward stages on " + std::to_string(p) + " IPUs");
  // Part c*p+d on the IPU of part d (interleaved; v = 1: every part on its own IPU).
  std::vector<int> ipu_of_device;
  for (int d = 0; d < p; ++d) ipu_of_device.push_back(plan.stages[static_cast<std::size_t>(d)].ipu);
  for (int k = 0; k < P; ++k)
    if (plan.stages[static_cast<std::size_t>(k)].ipu != ipu_of_device[static_cast<std::size_t>(k % p)])
      refuse(ctx, "pipeline.virtual-stages",
             name + " needs forward stage c*p+d on the IPU of stage d (p = " + std::to_string(p) + "); stage " +
                 std::to_string(k) + " is on IPU " + std::to_string(plan.stages[static_cast<std::size_t>(k)].ipu));
  const std::int64_t m = ctx.depth();
  if (m > kMaxWhatIfDepth)
    depth_error(ctx, "pipeline.what-if-depth",
                name + " is simulated unrolled (its order is not periodic in general): at most " +
                    std::to_string(kMaxWhatIfDepth) + " micro-batches per step, this run has " + std::to_string(m) +
                    "; the bubble is a fixed cost per step, so a smaller G shows it as well");
  auto backward_of = [&](int k) -> const PlanStage& {
    return plan.stages[static_cast<std::size_t>(k == L ? L : 2 * L - k)];
  };
  OpTimes times = OpTimes::uniform(p, v, 0, 0, 0);
  for (int k = 0; k < P; ++k) {
    const auto d = static_cast<std::size_t>(k % p), c = static_cast<std::size_t>(k / p);
    const PlanStage& bwd = backward_of(k);
    times.f[d][c] = plan.stages[static_cast<std::size_t>(k)].forward_seconds;
    times.w[d][c] = bwd.weight_gradient_seconds;
    times.b[d][c] = bwd.backward_seconds - bwd.weight_gradient_seconds +
                    (ctx.recompute() && k != L ? bwd.recompute_seconds : 0.0);
  }
  // What W still needs of a stage's activations: its share of the backward's time, as a proxy
  // for dW's inputs (X and dY) against everything B reads.
  double w_share = 0, backward = 0;
  for (int k = 0; k < P; ++k) w_share += backward_of(k).weight_gradient_seconds, backward += backward_of(k).backward_seconds;
  w_share = backward > 0 ? std::clamp(w_share / backward, 0.0, 1.0) : 1.0;
  ScheduleOrder order;
  try {
    order = make_order(name, p, v, m, times, w_share);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const auto colon = what.find(": ");
    depth_error(ctx, what.substr(0, colon), what.substr(colon + 2));
  }
  ProgramBuilder b(ctx, name, ctx.recompute());
  b.repeat("batches", ctx.batches(), m, [&] {
    for (int d = 0; d < p; ++d)
      for (const OrderOp& op : order.ops[static_cast<std::size_t>(d)]) {
        const int k = op.chunk * p + d;
        const PlanStage& fwd = plan.stages[static_cast<std::size_t>(k)];
        if (op.kind == OpKind::F) {
          b.receive(fwd.ipu, ctx.copies_into(fwd.id, false));
          b.host_input(fwd, op.micro);
          b.compute(fwd, op.micro, Work::ForwardOnly);
          b.host_output(fwd, op.micro);
          b.send(fwd.ipu, ctx.copies_from(fwd.id, false));
          continue;
        }
        const PlanStage& bwd = backward_of(k);
        if (op.kind == OpKind::W) {
          b.compute(bwd, op.micro, Work::WeightGradient);
          continue;
        }
        b.receive(fwd.ipu, ctx.copies_into(bwd.id, true));
        b.compute(bwd, op.micro, op.kind == OpKind::B ? Work::InputGradient : (k == L ? Work::BackwardOnly : Work::All));
        b.send(fwd.ipu, ctx.copies_from(bwd.id, true));
      }
    b.weight_updates(/*all_at_once=*/true);
  });
  // Stashes from the order: a part holds a micro-batch in full from its F to its B and W's share
  // of it from B to W, the limit the greedy orders were built under; the memory model stashes
  // whole micro-batches, so the peak is rounded up.
  std::vector<int> stash(static_cast<std::size_t>(P), 0);
  for (int k = 0; k < P; ++k) {
    const auto d = static_cast<std::size_t>(k % p);
    double to_b = 0, to_w = 0, peak = 0;
    for (const OrderOp& op : order.ops[d]) {
      if (op.chunk != k / p) continue;
      if (op.kind == OpKind::F) to_b += 1;
      if (op.kind == OpKind::B) to_b -= 1, to_w += 1;
      if (op.kind == OpKind::W) to_w -= 1;
      if (op.kind == OpKind::BW) to_b -= 1;
      peak = std::max(peak, to_b + w_share * to_w);
    }
    stash[static_cast<std::size_t>(k)] = static_cast<int>(std::ceil(peak - 1e-9));
  }
  Schedule schedule = b.finish(ctx.batches() * m, 0, stash);
  return schedule;
}

} // namespace ipusim
