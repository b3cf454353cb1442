// The what-if schedules (order.hpp) as per-IPU programs. The plan's forward stages are the
// order's parts (order_parts.hpp); the order is timed by the list-scheduling evaluator under
// the plan's costs with the devices on their IPUs (ops of parts on one IPU never overlap), and
// each IPU runs its parts' ops in evaluated start order: the evaluator places one op at a time,
// so that is one topological order for all IPUs and the programs cannot deadlock. Each F, B, W
// or BW becomes its compute step on the part's IPU, with the stage's copies: received before,
// sent after, asynchronously as under 1F1B (a copy exists only between stages on different
// IPUs). Weight update, replicas and all-reduce as for 1F1B. DualPipe runs every stage twice,
// the second time mirrored onto the IPU of stage P-1-k over mirrored copies, and sums the two
// weight copies' gradients IPU pair by IPU pair before the update (order_parts.hpp).
// Where an IPU's sequence repeats itself one or more micro-batches further (a 1F1B-like steady
// phase, found on the sequence and checked op for op), the program is its warm-up, a loop of one
// period and its cool-down, so the engine skips the periods of the steady state; elsewhere it
// is unrolled. Deeper than 3 x kOrderProbeDepth, a periodic order is not built at G: see
// extrapolated_order.
#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "sim/io/input_error.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/order_parts.hpp"
#include "sim/schedule/order_stash.hpp"
#include "sim/schedule/order_period.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

[[noreturn]] void refuse(const ScheduleContext& ctx, const std::string& rule, const std::string& message) {
  throw InputError(ctx.scenario.file, ctx.scenario.execution_pointer("schedule"), rule, message);
}

// An order that cannot be extended (no steady phase repeating alike at kOrderProbeDepth) is
// built in full before it is lowered (about 1.7 KiB per micro-batch on BERT's
// 5-stage plan with the generator's and the evaluator's work: 457 MB at 2^18); unrolled
// programs take about 20 KiB per micro-batch on a 4-IPU plan. Refused here, in milliseconds,
// rather than after gigabytes.
constexpr std::int64_t kMaxUnrolledDepth = 65536;
constexpr std::int64_t kMaxOrderDepth = 1 << 18;

// The order at one depth, timed, as each IPU's program runs it. The order itself (megabytes
// at the probe depths) is shared by the copies the extrapolation and the memo make.
struct Sequenced {
  std::shared_ptr<const ScheduleOrder> order;
  std::vector<IpuOps> ipus;
};

// DualPipe's generator numbers its second pipeline's micro-batches after the first's (from
// m/2), so those numbers move with the depth m. The programs number a micro-batch local index
// x pipelines + pipeline instead (DualPipe: the forward pipeline's k-th 2k, the reverse one's
// 2k+1): alike at any depth, so that an order's periods are found, compared and extended as
// one pipeline's are, and micro-batches finish in about their numbers' order, as the
// metrics' steady state expects. The pipelines must take equal runs of micro-batches.
std::int64_t pipelines_of(const ScheduleOrder& order) {
  const auto m = static_cast<std::int64_t>(order.pipeline_of_micro.size());
  std::int64_t pipelines = 1;
  for (const int pipeline : order.pipeline_of_micro) pipelines = std::max<std::int64_t>(pipelines, pipeline + 1);
  for (std::int64_t i = 0; i < m; ++i)
    if (m % pipelines != 0 || order.pipeline_of_micro[static_cast<std::size_t>(i)] != i / (m / pipelines))
      throw std::logic_error(order.name + ": its pipelines do not take equal runs of micro-batches");
  return pipelines;
}

std::int64_t depth_free_micro(std::int64_t micro, std::int64_t pipelines, std::int64_t m) {
  const std::int64_t per_pipeline = m / pipelines;
  return micro % per_pipeline * pipelines + micro / per_pipeline;
}

// The order unit of the scenario's schedule, by its registry entry.
const OrderScheduleInfo& order_of(const std::string& name) {
  const OrderScheduleInfo* order = schedule_info(name).order;
  if (order == nullptr) throw std::logic_error("build_from_order: the " + name + " schedule runs from no order");
  return *order;
}

std::vector<int> plan_ipu_ids(const Plan& plan) {
  std::vector<int> ipus;
  for (const PlanIpu& ipu : plan.ipus) ipus.push_back(ipu.id);
  return ipus;
}

// The evaluator places one op at a time, so its sequence, cut by IPU, is each IPU's program
// order; each IPU's part of it is split into warm-up, steady phase and cool-down.
Sequenced build_sequenced_order(const OrderScheduleInfo& schedule, const PartLayout& layout,
                                const std::vector<int>& ipus, std::int64_t depth) {
  std::vector<std::size_t> slot_of_device;  // the order's device's IPU's place in `ipus`
  for (const int ipu : layout.ipu_of_device)
    slot_of_device.push_back(static_cast<std::size_t>(std::find(ipus.begin(), ipus.end(), ipu) - ipus.begin()));
  Sequenced out;
  const auto order = std::make_shared<const ScheduleOrder>(
      schedule.generate(layout.devices, layout.chunks, depth, layout.times, layout.w_share));
  out.order = order;
  const std::int64_t pipelines = pipelines_of(*order);
  std::vector<std::vector<SequencedOp>> sequence(ipus.size());
  std::vector<std::size_t> ops_per_slot(ipus.size(), 0);
  for (std::size_t d = 0; d < order->ops.size(); ++d) ops_per_slot[slot_of_device[d]] += order->ops[d].size();
  for (std::size_t i = 0; i < ipus.size(); ++i) sequence[i].reserve(ops_per_slot[i]);
  for (const auto& [d, i] : placement_sequence(*order, layout.times, 0, layout.ipu_of_device)) {
    const auto device = static_cast<std::size_t>(d);
    OrderOp op = order->ops[device][i];
    op.micro = depth_free_micro(op.micro, pipelines, depth);
    sequence[slot_of_device[device]].push_back({d, op});
  }
  std::vector<Period> period;
  std::vector<std::size_t> lengths;
  for (const auto& ops : sequence) period.push_back(find_period(ops)), lengths.push_back(ops.size());
  align_periods(period, lengths);
  for (std::size_t i = 0; i < sequence.size(); ++i) out.ipus.push_back(split_sequence(sequence[i], period[i]));
  return out;
}

// Everything a sequenced order is made from.
struct SequenceKey {
  std::string schedule;
  int devices = 0, chunks = 0;
  std::int64_t depth = 0;
  OpTimes times;
  double w_share = 0;
  std::vector<int> ipu_of_device, ipus;

  bool operator==(const SequenceKey&) const = default;
};

// build_sequenced_order, remembering the last few: a run that does not fit builds the
// schedules of the memory advice's fixes too, and the fixes that keep the stage times (more
// micro-batches, another replica count) order the same ops at the same probe depths again.
// A few megabytes each at the probe depths; behind a lock, as Python may run scenarios
// from several threads.
Sequenced sequence_order(const OrderScheduleInfo& schedule, const PartLayout& layout, const std::vector<int>& ipus,
                         std::int64_t depth) {
  constexpr std::size_t kKept = 4;
  static std::mutex lock;
  static std::deque<std::pair<SequenceKey, Sequenced>> kept;
  SequenceKey key{schedule.name, layout.devices, layout.chunks, depth, layout.times, layout.w_share,
                  layout.ipu_of_device, ipus};
  {
    const std::lock_guard<std::mutex> hold(lock);
    for (const auto& [k, sequenced] : kept)
      if (k == key) return sequenced;
  }
  Sequenced built = build_sequenced_order(schedule, layout, ipus, depth);
  const std::lock_guard<std::mutex> hold(lock);
  if (kept.size() == kKept) kept.pop_front();
  kept.emplace_back(std::move(key), built);
  return built;
}

// Past three probe depths the order is not built at m: it is built at two depths of m's residue
// modulo the common stride S, a >= probe_depth and about 2a, and when the deeper one is the
// shallower one with (its depth - a) / S more periods on every IPU (checked op for op), m's
// programs are the shallower one with (m - a) / S more: memory does not grow with G.
// Nothing when the order cannot be extended so.
std::optional<Sequenced> extrapolated_order(const OrderScheduleInfo& schedule, const PartLayout& layout,
                                            const std::vector<int>& ipus, std::int64_t m, std::int64_t probe_depth) {
  try {
    Sequenced probe = sequence_order(schedule, layout, ipus, probe_depth);
    const std::int64_t stride = probe.ipus.front().stride;
    if (stride <= 0 || stride > probe_depth) return std::nullopt;
    const std::int64_t a = probe_depth + (m - probe_depth) % stride;
    // Twice as deep: a shared IPU's list schedule can drift for hundreds of micro-batches
    // before it settles, and a pattern that held only in a transient must not be extended.
    const std::int64_t more = (a + stride - 1) / stride;
    // The probe is the shallow build when m's residue puts it at the probe's depth.
    Sequenced shallow = a == probe_depth ? std::move(probe) : sequence_order(schedule, layout, ipus, a);
    const Sequenced deep = sequence_order(schedule, layout, ipus, a + more * stride);
    bool periodic = true;
    for (std::size_t i = 0; i < ipus.size() && periodic; ++i)
      periodic = shallow.ipus[i].times > 0 && shallow.ipus[i].stride == stride &&
                 deep.ipus[i] == extended(shallow.ipus[i], more);
    if (!periodic) return std::nullopt;
    for (IpuOps& ops : shallow.ipus) ops = extended(std::move(ops), (m - a) / stride);
    return shallow;
  } catch (const std::invalid_argument&) {
    // The probe depths break a constraint m keeps: built at m instead, where the error is m's.
    return std::nullopt;
  }
}

// The order built micro-batch by micro-batch at m, refused when that would take gigabytes; a
// constraint m breaks becomes m's depth error.
Sequenced order_at_full_depth(const ScheduleContext& ctx, const OrderScheduleInfo& schedule, const PartLayout& layout,
                              const std::vector<int>& ipus, std::int64_t probe_depth) {
  const std::string& name = ctx.scenario.execution.schedule;
  const std::int64_t m = ctx.depth();
  if (m > kMaxOrderDepth)
    depth_error(ctx, "pipeline.what-if-depth",
                name + "'s order for this plan cannot be extended from shallower builds (no steady phase "
                       "that repeats alike from " + std::to_string(probe_depth) +
                    " micro-batches on), so it is built micro-batch by micro-batch: at most " +
                    std::to_string(kMaxOrderDepth) +
                    " micro-batches per step, this run has " + std::to_string(m) +
                    "; the bubble is a fixed cost per step, so a smaller G shows it as well");
  try {
    return sequence_order(schedule, layout, ipus, m);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const auto colon = what.find(": ");
    depth_error(ctx, what.substr(0, colon), what.substr(colon + 2));
  }
}

// An unrolled IPU program of more than kMaxUnrolledDepth micro-batches' ops (3 per part) is refused.
void check_unrolled_size(const ScheduleContext& ctx, const Sequenced& lowered_order) {
  std::int64_t unrolled = 0;
  for (const IpuOps& ops : lowered_order.ipus) unrolled = std::max(unrolled, static_cast<std::int64_t>(ops.unrolled()));
  if (unrolled > 3 * static_cast<std::int64_t>(ctx.plan.forward_stage_count) * kMaxUnrolledDepth)
    depth_error(ctx, "pipeline.what-if-depth",
                ctx.scenario.execution.schedule +
                    "'s order for this plan has no steady phase that repeats micro-batch by micro-batch, so it is "
                    "simulated unrolled: at most " + std::to_string(kMaxUnrolledDepth) +
                    " micro-batches per step, this run has " + std::to_string(ctx.depth()) +
                    "; the bubble is a fixed cost per step, so a smaller G shows it as well");
}

// Each F, B, W or BW as its compute step on its part's IPU, with the stage's copies: received
// before, sent after. DualPipe's mirrored parts send and receive over mirrored copies.
class OpEmitter {
public:
  OpEmitter(const Plan& plan, const PartLayout& layout, const ScheduleContext& lowered_ctx, ProgramBuilder& b)
      : plan_(plan), layout_(layout), lowered_ctx_(lowered_ctx), b_(b) {}

  void operator()(const SequencedOp& s) const {
    const OrderOp& op = s.op;
    const OrderPart& part = layout_.parts[static_cast<std::size_t>(s.device)][static_cast<std::size_t>(op.chunk)];
    if (part.stage < 0) return;
    if (op.pass == Pass::Forward) forward(part, op.micro);
    else if (op.pass == Pass::WeightGradient) b_.compute(part.backward, op.micro, Pass::WeightGradient);
    else backward(part, op);
  }

private:
  void forward(const OrderPart& part, std::int64_t micro) const {
    const PlanStage& fwd = part.forward;
    if (part.first) {
      b_.receive(fwd.ipu, copies(part, fwd.id, true, false));
      b_.host_input(fwd, micro);
    }
    b_.compute(fwd, micro, Pass::Forward);
    if (part.last) {
      b_.host_output(fwd, micro);
      b_.send(fwd.ipu, copies(part, fwd.id, false, false));
    }
  }

  // B or BW.
  void backward(const OrderPart& part, const OrderOp& op) const {
    const PlanStage& fwd = part.forward;
    const PlanStage& bwd = part.backward;
    if (part.last) b_.receive(fwd.ipu, copies(part, bwd.id, true, true));
    b_.compute(bwd, op.micro, op.pass);
    if (part.first) b_.send(fwd.ipu, copies(part, bwd.id, false, true));
  }

  std::vector<const PlanCopy*> copies(const OrderPart& part, int stage, bool into, bool gradient) const {
    auto found = into ? lowered_ctx_.copies_into(stage, gradient) : lowered_ctx_.copies_from(stage, gradient);
    std::erase_if(found, [&](const PlanCopy* c) { return is_mirrored_copy(plan_, *c) != part.mirrored; });
    return found;
  }

  const Plan& plan_;
  const PartLayout& layout_;
  const ScheduleContext& lowered_ctx_;
  ProgramBuilder& b_;
};

// Each batch: every IPU's warm-up, steady-phase loop and cool-down, the gradient sums of
// DualPipe's two weight copies, then the weight update.
void emit_batches(const ScheduleContext& ctx, const Sequenced& lowered_order, const OpEmitter& emit,
                  const std::vector<const PlanCopy*>& gradient_sums, ProgramBuilder& b) {
  const std::string& name = ctx.scenario.execution.schedule;
  b.repeat("batches", ctx.batches(), ctx.depth(), [&] {
    int steady = -1;
    for (const IpuOps& ops : lowered_order.ipus) {
      for (const SequencedOp& s : ops.warm_up) emit(s);
      steady = b.repeat(name + " steady phase", ops.times, ops.stride, [&] {
        for (const SequencedOp& s : ops.period) emit(s);
      }, steady);
      for (const SequencedOp& s : ops.cool_down) emit(s);
    }
    if (!gradient_sums.empty()) b.exchange(gradient_sums, Pass::AllReduce);
    b.weight_updates(/*all_at_once=*/true);
  });
}

} // namespace

Schedule build_from_order(const ScheduleContext& ctx) { return build_from_order(ctx, kOrderProbeDepth); }

Schedule build_from_order(const ScheduleContext& ctx, std::int64_t probe_depth) {
  check_pipelinable(ctx);
  const Plan& plan = ctx.plan;
  const std::string& name = ctx.scenario.execution.schedule;
  if (!plan.training)
    refuse(ctx, "pipeline.training-only", name + " orders forward and backward passes; this run is inference");
  const OrderScheduleInfo& unit = order_of(name);
  const PartLayout layout = lay_out_parts(ctx, unit);
  const std::int64_t m = ctx.depth();
  const std::vector<int> ipus = plan_ipu_ids(plan);
  std::optional<Sequenced> lowered_order;
  // The extension builds at about the probe depth and twice it (and a third when G's residue
  // is not the probe's): below three probe depths building at G costs less.
  if (m > 3 * probe_depth) lowered_order = extrapolated_order(unit, layout, ipus, m, probe_depth);
  if (!lowered_order) lowered_order = order_at_full_depth(ctx, unit, layout, ipus, probe_depth);
  check_unrolled_size(ctx, *lowered_order);

  // DualPipe's mirrored parts send and receive over mirrored copies (lowering_plan).
  const Plan lowered = lowering_plan(plan, layout);
  const ScheduleContext lowered_ctx{ctx.scenario, lowered, ctx.sync_seconds};
  std::vector<const PlanCopy*> gradient_sums;
  for (const PlanCopy& c : lowered.copies)
    if (c.from_stage < 0) gradient_sums.push_back(&c);
  ProgramBuilder b(lowered_ctx, name, ctx.recompute());
  emit_batches(ctx, *lowered_order, OpEmitter(plan, layout, lowered_ctx, b), gradient_sums, b);
  // Stashes from the order, per stage and per IPU at once (order_stash.cpp).
  OrderStash stash = stash_from_order(*lowered_order->order, layout, plan.forward_stage_count);
  Schedule schedule = b.finish(ctx.batches() * m, 0, std::move(stash.stage_depth));
  schedule.mirrors = std::move(stash.mirrors);
  schedule.stash_at_once = std::move(stash.ipu_peaks);
  return schedule;
}

} // namespace ipusim
