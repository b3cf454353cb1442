// GPipe and 1F1B timed as build_async lays them out (sim/schedule/asynchronous.cpp): each
// forward stage's IPU runs its task list in order; a forward receives its input copy, streams
// in, computes, streams out and sends; a backward receives its gradient copy, computes and
// sends. A task starts once its IPU is free and its input has landed (the transfer's time
// after its send). The batch ends with every IPU's weight update at once (training) or a sync.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/io/input_error.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/schedule_evaluators.hpp"

namespace ipusim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Task {
  bool forward;
  std::int64_t micro_batch;
};

// Task k of forward stage s's list, as build_async's phases lay it out (computed, not listed,
// so memory does not grow with the micro-batches): GPipe m forwards then m backwards; 1F1B
// min(p-s-1, m) warm-up forwards, then forward w+i with backward i, then the last w backwards.
Task task_of(bool one_f_one_b, int s, int p, std::int64_t m, bool training, std::int64_t k) {
  if (!training) return {true, k};
  if (!one_f_one_b) return k < m ? Task{true, k} : Task{false, k - m};
  const std::int64_t w = std::min<std::int64_t>(p - s - 1, m);
  if (k < w) return {true, k};
  const std::int64_t j = k - w;
  if (j < 2 * (m - w)) return j % 2 == 0 ? Task{true, w + j / 2} : Task{false, j / 2};
  return {false, (m - w) + (j - 2 * (m - w))};
}

// The step's shape, alike in every replica.
struct AsyncStep {
  AsyncStep(const Execution& execution, const Plan& step_plan);

  const Execution& ex;
  const Plan& plan;
  int p = 0;  // forward stages
  int L = 0;  // the loss stage
  bool training = false, recompute = false, one_f_one_b = false;
  std::int64_t m = 0;          // micro-batches per batch
  std::int64_t per_stage = 0;  // tasks in each forward stage's list
  // Copies into and out of each forward stage's forward (index 2s) and backward (index 2s + 1).
  std::vector<std::vector<const PlanCopy*>> in, out;
};

AsyncStep::AsyncStep(const Execution& execution, const Plan& step_plan)
    : ex(execution), plan(step_plan), p(plan.forward_stage_count), L(plan.loss_stage), training(plan.training),
      recompute(ex.recomputation == Recomputation::Pipeline),
      one_f_one_b(schedule_info(ex.schedule).step_model == StepModel::OneForwardOneBackward),
      m(training ? ex.gradient_accumulation : ex.batches_per_step), per_stage(training ? 2 * m : m),
      in(static_cast<std::size_t>(2 * p)), out(in.size()) {
  for (const PlanCopy& c : plan.copies) {
    const int to = c.gradient ? 2 * L - c.to_stage : c.to_stage;
    const int from = c.gradient ? 2 * L - c.from_stage : c.from_stage;
    in[static_cast<std::size_t>(2 * to + (c.gradient ? 1 : 0))].push_back(&c);
    out[static_cast<std::size_t>(2 * from + (c.gradient ? 1 : 0))].push_back(&c);
  }
}

void check_one_stage_per_ipu(const Execution& ex, const Plan& plan) {
  for (const PlanIpu& ipu : plan.ipus)
    if (ipu.stages.size() > (plan.training ? 2u : 1u))
      throw InputError("", "/ops", "pipeline.one-stage-per-ipu",
                       "the " + ex.schedule + " schedule runs one forward stage per IPU, but IPU " +
                           std::to_string(ipu.id) + " holds several");
}

// Per replica, per copy: the link slots it shares with another copy. Who uses each directed
// link: one copy of two replicas on one link moves at the same times (the replicas run alike),
// so that shares it (noted on `timer`); copies of one replica that share a link are checked as
// they are sent.
std::vector<std::vector<std::vector<int>>> shared_copy_slots(const Plan& plan, RouteTable& routes,
                                                             TransferTimer& timer) {
  const int replicas = timer.replicas();
  std::map<int, std::vector<std::pair<int, int>>> users;  // slot -> (replica, copy id)
  for (int r = 0; r < replicas; ++r)
    for (const PlanCopy& c : plan.copies)
      for (int slot : routes.path(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu)).slots)
        users[slot].push_back({r, c.id});
  std::vector<std::vector<std::vector<int>>> shared_slots(static_cast<std::size_t>(replicas),
                                                          std::vector<std::vector<int>>(plan.copies.size()));
  for (const auto& [slot, list] : users) {
    for (std::size_t i = 0; i < list.size(); ++i)
      for (std::size_t j = i + 1; j < list.size(); ++j)
        if (list[i].first != list[j].first) timer.contention |= kSharedCopyLinks;
    bool several = false;
    for (const auto& u : list) several = several || u.second != list.front().second;
    if (several)
      for (const auto& [r, id] : list) shared_slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(id)].push_back(slot);
  }
  return shared_slots;
}

// One replica on its own IPUs and links (their latencies may differ). A copy's arrivals wait in
// a queue until taken (in micro-batch order); the stages are played a task each in turn, so a
// queue is as long as the schedule's order makes it, not as far as a stage runs ahead in time.
class ReplicaPlay {
public:
  ReplicaPlay(const AsyncStep& step, TransferTimer& timer, const std::vector<std::vector<int>>& shared_slots, int r)
      : step_(step), timer_(timer), shared_slots_(shared_slots), duration_(step.plan.copies.size()),
        last_end_(duration_.size(), -kNever), arrivals_(duration_.size()), next_(static_cast<std::size_t>(step.p), 0),
        clock_(static_cast<std::size_t>(step.p), 0), busy_(clock_.size(), 0) {
    LinkUse unused;
    for (const PlanCopy& c : step.plan.copies)
      duration_[static_cast<std::size_t>(c.id)] =
          timer.transfer_seconds(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu), c.bytes, 0, unused);
  }

  void play() {
    for (std::size_t left = static_cast<std::size_t>(step_.p); left > 0;) {
      bool progressed = false;
      for (int s = 0; s < step_.p; ++s) {
        const auto si = static_cast<std::size_t>(s);
        // One task per stage per sweep: a stage run to its end first would queue all its sends
        // (GPipe's forwards: the whole batch) before the next stage took any.
        if (next_[si] == step_.per_stage || !run_next_task(s)) continue;
        if (++next_[si] == step_.per_stage) --left;
        progressed = true;
      }
      if (!progressed && left > 0) throw std::logic_error("asynchronous schedule evaluator: tasks wait on each other");
    }
  }

  // GPipe's batch in closed form where each stage takes its copies from the stage before it
  // alone and no two copies share a link; false (nothing set) otherwise, and play() is needed.
  bool play_gpipe();

  double makespan() const { return *std::max_element(clock_.begin(), clock_.end()); }
  double busiest() const { return *std::max_element(busy_.begin(), busy_.end()); }
  // The first micro-batch's way through the pipeline.
  double first_start = 0, first_end = 0;

private:
  // Whether every copy into stage s's forward (or backward) comes from the stage before it in
  // that pass, and its longest transfer then.
  bool chained(int s, bool forward, double& longest) const {
    const std::vector<const PlanCopy*>& inputs = step_.in[2 * static_cast<std::size_t>(s) + (forward ? 0 : 1)];
    longest = 0;
    for (const PlanCopy* c : inputs) {
      const int from = forward ? c->from_stage : 2 * step_.L - c->from_stage;
      if (from != (forward ? s - 1 : s + 1) || !shared_slots_[static_cast<std::size_t>(c->id)].empty()) return false;
      longest = std::max(longest, duration_[static_cast<std::size_t>(c->id)]);
    }
    const bool first = forward ? s == 0 : s == step_.L;
    return first == inputs.empty();
  }

  // A copy of this pass from stage s still moving when the next micro-batch's is sent: its
  // sends `spacing` apart (the least gap between two of them) share its link. Compared as
  // send() compares a send with the previous one's end, so both flag the same runs.
  void note_backlog(int s, bool forward, double first_send, double spacing) {
    if (step_.m < 2) return;
    for (const PlanCopy* c : step_.out[2 * static_cast<std::size_t>(s) + (forward ? 0 : 1)])
      if (first_send + spacing < first_send + duration_[static_cast<std::size_t>(c->id)])
        timer_.contention |= kSharedCopyLinks;
  }

  // Stage s's next task, once its inputs have all arrived; false while one is missing.
  bool run_next_task(int s) {
    const auto si = static_cast<std::size_t>(s);
    const Task task = task_of(step_.one_f_one_b, s, step_.p, step_.m, step_.training, next_[si]);
    const std::vector<const PlanCopy*>& inputs = step_.in[2 * si + (task.forward ? 0 : 1)];
    double start = clock_[si];
    for (const PlanCopy* c : inputs) {
      const auto& queue = arrivals_[static_cast<std::size_t>(c->id)];
      if (queue.empty()) return false;
      start = std::max(start, queue.front());
    }
    for (const PlanCopy* c : inputs) arrivals_[static_cast<std::size_t>(c->id)].pop_front();
    const double t = start + task_seconds(task, s);
    busy_[si] += t - start;
    clock_[si] = t;
    for (const PlanCopy* c : step_.out[2 * si + (task.forward ? 0 : 1)]) send(*c, t);
    if (task.micro_batch == 0 && s == 0 && task.forward) first_start = start;
    if (task.micro_batch == 0 && s == (step_.training ? 0 : step_.p - 1) && task.forward != step_.training)
      first_end = t;
    return true;
  }

  double task_seconds(const Task& task, int s) const {
    if (task.forward) {
      const PlanStage& st = step_.plan.stages[static_cast<std::size_t>(s)];
      return host(st.host_input_bytes) + st.forward_seconds + host(st.host_output_bytes);
    }
    const PlanStage& st = step_.plan.stages[static_cast<std::size_t>(2 * step_.L - s)];
    return st.backward_seconds + (step_.recompute && s != step_.L ? st.recompute_seconds : 0.0);
  }

  double host(double bytes) const {
    const Execution& ex = step_.ex;
    return ex.host_io && bytes > 0 && ex.io_tiles == 0 ? timer_.host_seconds(bytes) : 0.0;
  }

  void send(const PlanCopy& c, double t) {
    const auto id = static_cast<std::size_t>(c.id);
    const double end = t + duration_[id];
    if (t < last_end_[id]) timer_.contention |= kSharedCopyLinks;  // the previous micro-batch's still moving
    last_end_[id] = end;
    if (!shared_slots_[id].empty()) note_overlaps(shared_slots_[id], t, end);
    arrivals_[id].push_back(end);
  }

  // A transfer from t to end on shared slots, noted as contention when it overlaps another there.
  void note_overlaps(const std::vector<int>& slots, double t, double end) {
    // Transfers ending before every IPU's clock cannot overlap any later one.
    const double now = *std::min_element(clock_.begin(), clock_.end());
    for (int slot : slots) {
      auto& spans = busy_slots_[slot];
      spans.erase(std::remove_if(spans.begin(), spans.end(), [&](const auto& x) { return x.second <= now; }),
                  spans.end());
      for (const auto& [s0, e0] : spans)
        if (t < e0 && s0 < end) timer_.contention |= kSharedCopyLinks;
      spans.emplace_back(t, end);
    }
  }

  const AsyncStep& step_;
  TransferTimer& timer_;
  const std::vector<std::vector<int>>& shared_slots_;  // per copy
  std::vector<double> duration_, last_end_;            // per copy
  std::vector<std::deque<double>> arrivals_;           // per copy
  std::map<int, std::vector<std::pair<double, double>>> busy_slots_;  // shared slots: transfers not yet over
  std::vector<std::int64_t> next_;                     // per stage: its next task
  std::vector<double> clock_, busy_;                   // per stage
};

// Each task waits for its own stage's previous task and for its input copies, so a task's end
// is the longest path to it through the grid of (stage, micro-batch) tasks. Forwards: every
// micro-batch is there at the start, so the path to stage s's i-th forward visits each stage
// once (its forward and the copy out of it) and spends its i other tasks on the slowest stage
// so far: F(s, i) = sum_{l<=s} f_l + sum_{l<s} d_l + i max_{l<=s} f_l. Backwards (training,
// micro-batches in order): a path enters at stage k's first backward after its last forward,
// F(k, m-1), and goes down to stage s: B(s, i) = max_{k=s..L} F(k, m-1) + sum_{l=s..k} b_l +
// sum_{l=s..k-1} e_l + i max_{l=s..k} b_l. Each is linear or a maximum of lines in i, so the
// least gap between two sends of a copy is the first one.
bool ReplicaPlay::play_gpipe() {
  const int p = step_.p, L = step_.L;
  if (step_.one_f_one_b && step_.training) return false;
  if (step_.training && L != p - 1) return false;
  std::vector<double> f(static_cast<std::size_t>(p)), d(f.size()), b(f.size()), e(f.size());
  for (int s = 0; s < p; ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (!chained(s, true, d[si])) return false;
    if (step_.training && !chained(s, false, e[si])) return false;
    f[si] = task_seconds({true, 0}, s);
    b[si] = step_.training ? task_seconds({false, 0}, s) : 0.0;
  }
  const double m = static_cast<double>(step_.m);
  // F(s, 0) and the slowest forward up to s.
  std::vector<double> first_forward(f.size()), slowest(f.size());
  for (int s = 0; s < p; ++s) {
    const auto si = static_cast<std::size_t>(s);
    first_forward[si] = (s == 0 ? 0.0 : first_forward[si - 1] + d[si]) + f[si];
    slowest[si] = std::max(s == 0 ? 0.0 : slowest[si - 1], f[si]);
    note_backlog(s, true, first_forward[si], slowest[si]);
  }
  auto last_forward = [&](std::size_t s) { return first_forward[s] + (m - 1) * slowest[s]; };
  first_start = 0;
  if (!step_.training) {
    for (std::size_t s = 0; s < f.size(); ++s) clock_[s] = last_forward(s), busy_[s] = m * f[s];
    first_end = first_forward.back();
    return true;
  }
  for (int s = L; s >= 0; --s) {
    const auto si = static_cast<std::size_t>(s);
    // Over the entry stage k: the first and the second backward's ends, and the last's.
    double first = -kNever, second = -kNever, last = -kNever, down = 0, slow = 0;
    for (int k = s; k <= L; ++k) {
      const auto ki = static_cast<std::size_t>(k);
      down += b[ki] + (k > s ? e[ki - 1] : 0.0);
      slow = std::max(slow, b[ki]);
      const double enter = last_forward(ki) + down;
      first = std::max(first, enter);
      second = std::max(second, enter + slow);
      last = std::max(last, enter + (m - 1) * slow);
    }
    clock_[si] = last;
    busy_[si] = m * (f[si] + b[si]);
    if (s > 0) note_backlog(s, false, first, second - first);
    if (s == 0) first_end = first;
  }
  return true;
}

// Streams of IPUs behind one host link share it (unless prefetched through the gateway).
void note_shared_host_link(const Execution& ex, const Plan& plan, const HardwareConfig& hw, TransferTimer& timer) {
  if (!ex.host_io || hw.host_link.shared_by <= 1 || timer.prefetched()) return;
  std::vector<int> streaming;
  for (const PlanStage& st : plan.stages)
    if (!st.backward && (st.host_input_bytes > 0 || st.host_output_bytes > 0)) streaming.push_back(st.ipu);
  timer.note_host_streams(streaming);
}

} // namespace

StepEstimate estimate_async_step(const Execution& ex, const Plan& plan, RouteTable& routes) {
  const HardwareConfig& hw = routes.hardware();
  TransferTimer timer(ex, plan, routes);
  check_one_stage_per_ipu(ex, plan);
  const AsyncStep step(ex, plan);
  if (ex.host_io && ex.io_tiles > 0) timer.contention |= kIoTiles;
  const auto shared_slots = shared_copy_slots(plan, routes, timer);

  // Played replica by replica, the batch ends when the slowest is done.
  double makespan = 0, busiest = 0, first_start = 0, first_end = 0;
  for (int r = 0; r < timer.replicas(); ++r) {
    ReplicaPlay replica(step, timer, shared_slots[static_cast<std::size_t>(r)], r);
    if (!replica.play_gpipe()) replica.play();
    makespan = std::max(makespan, replica.makespan());
    busiest = std::max(busiest, replica.busiest());
    if (r == 0) first_start = replica.first_start, first_end = replica.first_end;
  }
  note_shared_host_link(ex, plan, hw, timer);

  const bool training = plan.training;
  const std::int64_t m = step.m;
  const std::int64_t batches = training ? ex.batches_per_step : 1;
  StepEstimate e;
  e.cycle_seconds = busiest / static_cast<double>(m);
  e.fill_flush_seconds = makespan - static_cast<double>(m) * e.cycle_seconds;
  e.latency_seconds = first_end - first_start;
  e.update_seconds = training ? timer.weight_update_seconds(true) : timer.sync();
  e.step_seconds = timer.step_seconds(static_cast<double>(batches) * (makespan + e.update_seconds), batches * m);
  if (!training) e.update_seconds = 0;
  e.contention = timer.contention;
  return e;
}

} // namespace ipusim
