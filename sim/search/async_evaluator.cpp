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

} // namespace

StepEstimate estimate_async_step(const Execution& ex, const Plan& plan, RouteTable& routes) {
  const HardwareConfig& hw = routes.hardware();
  TransferTimer timer(ex, plan, routes);
  const int p = plan.forward_stage_count;
  const int L = plan.loss_stage;
  const bool training = plan.training;
  const bool recompute = ex.recomputation == Recomputation::Pipeline;
  const std::int64_t m = training ? ex.gradient_accumulation : ex.batches_per_step;
  const std::int64_t batches = training ? ex.batches_per_step : 1;
  for (const PlanIpu& ipu : plan.ipus)
    if (ipu.stages.size() > (training ? 2u : 1u))
      throw InputError("", "/ops", "pipeline.one-stage-per-ipu",
                       "the " + ex.schedule + " schedule runs one forward stage per IPU, but IPU " +
                           std::to_string(ipu.id) + " holds several");
  const bool one_f_one_b = schedule_info(ex.schedule).step_model == StepModel::OneForwardOneBackward;

  // Copies into and out of each forward stage's forward (index 0) and backward (index 1).
  std::vector<std::vector<const PlanCopy*>> in(static_cast<std::size_t>(2 * p)), out(in.size());
  for (const PlanCopy& c : plan.copies) {
    const int to = c.gradient ? 2 * L - c.to_stage : c.to_stage;
    const int from = c.gradient ? 2 * L - c.from_stage : c.from_stage;
    in[static_cast<std::size_t>(2 * to + (c.gradient ? 1 : 0))].push_back(&c);
    out[static_cast<std::size_t>(2 * from + (c.gradient ? 1 : 0))].push_back(&c);
  }
  auto host = [&](double bytes) { return ex.host_io && bytes > 0 && ex.io_tiles == 0 ? timer.host_seconds(bytes) : 0.0; };
  if (ex.host_io && ex.io_tiles > 0) timer.contention |= kIoTiles;
  const std::int64_t per_stage = training ? 2 * m : m;

  // Who uses each directed link: one copy of two replicas on one link moves at the same
  // times (the replicas run alike), so that shares it; copies of one replica that share a
  // link are checked as they are sent.
  const int replicas = timer.replicas();
  const std::size_t copies = plan.copies.size();
  std::map<int, std::vector<std::pair<int, int>>> users;  // slot -> (replica, copy id)
  for (int r = 0; r < replicas; ++r)
    for (const PlanCopy& c : plan.copies)
      for (int slot : routes.path(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu)).slots)
        users[slot].push_back({r, c.id});
  std::vector<std::vector<std::vector<int>>> shared_slots(static_cast<std::size_t>(replicas),
                                                          std::vector<std::vector<int>>(copies));
  for (const auto& [slot, list] : users) {
    for (std::size_t i = 0; i < list.size(); ++i)
      for (std::size_t j = i + 1; j < list.size(); ++j)
        if (list[i].first != list[j].first) timer.contention |= kSharedCopyLinks;
    bool several = false;
    for (const auto& u : list) several = several || u.second != list.front().second;
    if (several)
      for (const auto& [r, id] : list) shared_slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(id)].push_back(slot);
  }

  // Each replica on its own IPUs and links (their latencies may differ): played one by one,
  // the batch ends when the slowest is done. A copy's arrivals wait in a queue until taken
  // (in micro-batch order); the stages are played a task each in turn, so a queue is as long
  // as the schedule's order makes it, not as far as a stage runs ahead in time.
  double makespan = 0, busiest = 0, first_start = 0, first_end = 0;
  for (int r = 0; r < replicas; ++r) {
    std::vector<double> duration(copies), last_end(copies, -kNever);
    LinkUse unused;
    for (const PlanCopy& c : plan.copies)
      duration[static_cast<std::size_t>(c.id)] =
          timer.transfer_seconds(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu), c.bytes, 0, unused);
    std::vector<std::deque<double>> arrivals(copies);
    std::map<int, std::vector<std::pair<double, double>>> busy_slots;  // shared slots: transfers not yet over
    std::vector<std::int64_t> next(static_cast<std::size_t>(p), 0);
    std::vector<double> clock(static_cast<std::size_t>(p), 0), busy(clock.size(), 0);
    auto send = [&](const PlanCopy& c, double t) {
      const auto id = static_cast<std::size_t>(c.id);
      const double end = t + duration[id];
      if (t < last_end[id]) timer.contention |= kSharedCopyLinks;  // the previous micro-batch's still moving
      last_end[id] = end;
      if (!shared_slots[static_cast<std::size_t>(r)][id].empty()) {
        // Transfers ending before every IPU's clock cannot overlap any later one.
        const double now = *std::min_element(clock.begin(), clock.end());
        for (int slot : shared_slots[static_cast<std::size_t>(r)][id]) {
          auto& spans = busy_slots[slot];
          spans.erase(std::remove_if(spans.begin(), spans.end(), [&](const auto& x) { return x.second <= now; }),
                      spans.end());
          for (const auto& [s0, e0] : spans)
            if (t < e0 && s0 < end) timer.contention |= kSharedCopyLinks;
          spans.emplace_back(t, end);
        }
      }
      arrivals[id].push_back(end);
    };
    for (std::size_t left = static_cast<std::size_t>(p); left > 0;) {
      bool progressed = false;
      for (int s = 0; s < p; ++s) {
        const auto si = static_cast<std::size_t>(s);
        // One task per stage per sweep: a stage run to its end first would queue all its sends
        // (GPipe's forwards: the whole batch) before the next stage took any.
        if (next[si] == per_stage) continue;
        const Task task = task_of(one_f_one_b, s, p, m, training, next[si]);
        double start = clock[si];
        bool ready = true;
        for (const PlanCopy* c : in[2 * si + (task.forward ? 0 : 1)]) {
          const auto& queue = arrivals[static_cast<std::size_t>(c->id)];
          if (queue.empty()) ready = false;
          else start = std::max(start, queue.front());
        }
        if (!ready) continue;
        for (const PlanCopy* c : in[2 * si + (task.forward ? 0 : 1)]) arrivals[static_cast<std::size_t>(c->id)].pop_front();
        double t = start;
        if (task.forward) {
          const PlanStage& st = plan.stages[si];
          t += host(st.host_input_bytes) + st.forward_seconds + host(st.host_output_bytes);
        } else {
          const PlanStage& st = plan.stages[static_cast<std::size_t>(2 * L - s)];
          t += st.backward_seconds + (recompute && s != L ? st.recompute_seconds : 0.0);
        }
        busy[si] += t - start;
        clock[si] = t;
        for (const PlanCopy* c : out[2 * si + (task.forward ? 0 : 1)]) send(*c, t);
        if (r == 0 && task.micro_batch == 0 && s == 0 && task.forward) first_start = start;
        if (r == 0 && task.micro_batch == 0 && s == (training ? 0 : p - 1) && task.forward != training) first_end = t;
        if (++next[si] == per_stage) --left;
        progressed = true;
      }
      if (!progressed && left > 0) throw std::logic_error("asynchronous schedule evaluator: tasks wait on each other");
    }
    makespan = std::max(makespan, *std::max_element(clock.begin(), clock.end()));
    busiest = std::max(busiest, *std::max_element(busy.begin(), busy.end()));
  }

  if (ex.host_io && hw.host_link.shared_by > 1 && !timer.prefetched()) {
    std::map<int, int> streaming;
    for (int r = 0; r < timer.replicas(); ++r)
      for (const PlanStage& st : plan.stages)
        if (!st.backward && (st.host_input_bytes > 0 || st.host_output_bytes > 0) &&
            ++streaming[timer.physical(r, st.ipu) / hw.host_link.shared_by] > 1)
          timer.contention |= kSharedHostLink;
  }

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
