// GPipe and 1F1B timed as build_async lays them out (sim/schedule/asynchronous.cpp): each
// forward stage's IPU runs its task list in order; a forward receives its input copy, streams
// in, computes, streams out and sends; a backward receives its gradient copy, computes and
// sends. A task starts once its IPU is free and its input has landed (the transfer's time
// after its send). The batch ends with every IPU's weight update at once (training) or a sync.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/io/input_error.hpp"
#include "sim/search/schedule_evaluators.hpp"

namespace ipusim {

namespace {

struct Task {
  bool forward;
  std::int64_t micro_batch;
};

// build_async's phases: GPipe m forwards then m backwards; 1F1B min(p-s-1, m) warm-up
// forwards, then forward w+i with backward i, then the last w backwards.
std::vector<Task> tasks_of(bool one_f_one_b, int s, int p, std::int64_t m, bool training) {
  std::vector<Task> out;
  if (!training || !one_f_one_b) {
    for (std::int64_t i = 0; i < m; ++i) out.push_back({true, i});
    if (training)
      for (std::int64_t i = 0; i < m; ++i) out.push_back({false, i});
    return out;
  }
  const std::int64_t w = std::min<std::int64_t>(p - s - 1, m);
  for (std::int64_t i = 0; i < w; ++i) out.push_back({true, i});
  for (std::int64_t i = 0; i < m - w; ++i) out.push_back({true, w + i}), out.push_back({false, i});
  for (std::int64_t i = m - w; i < m; ++i) out.push_back({false, i});
  return out;
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
  const bool one_f_one_b = ex.schedule == "1f1b";

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
  std::vector<std::vector<Task>> tasks;
  for (int s = 0; s < p; ++s) tasks.push_back(tasks_of(one_f_one_b, s, p, m, training));

  // Each replica on its own IPUs and links (their latencies may differ): played one by one,
  // the batch ends when the slowest is done.
  const int replicas = timer.replicas();
  const std::size_t copies = plan.copies.size();
  std::vector<std::vector<double>> duration(static_cast<std::size_t>(replicas), std::vector<double>(copies));
  std::vector<std::vector<std::vector<double>>> sent(static_cast<std::size_t>(replicas));
  double makespan = 0, busiest = 0, first_start = 0, first_end = 0;
  for (int r = 0; r < replicas; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    LinkUse unused;
    for (const PlanCopy& c : plan.copies)
      duration[ri][static_cast<std::size_t>(c.id)] =
          timer.transfer_seconds(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu), c.bytes, 0, unused);
    auto& sent_r = sent[ri];
    sent_r.assign(copies, std::vector<double>(static_cast<std::size_t>(m), -1));
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    std::vector<double> clock(static_cast<std::size_t>(p), 0), busy(clock.size(), 0);
    for (std::size_t left = static_cast<std::size_t>(p); left > 0;) {
      bool progressed = false;
      for (int s = 0; s < p; ++s) {
        const auto si = static_cast<std::size_t>(s);
        while (next[si] < tasks[si].size()) {
          const Task& task = tasks[si][next[si]];
          const auto mb = static_cast<std::size_t>(task.micro_batch);
          double start = clock[si];
          bool ready = true;
          for (const PlanCopy* c : in[2 * si + (task.forward ? 0 : 1)]) {
            const double at = sent_r[static_cast<std::size_t>(c->id)][mb];
            if (at < 0) ready = false;
            else start = std::max(start, at + duration[ri][static_cast<std::size_t>(c->id)]);
          }
          if (!ready) break;
          double t = start;
          if (task.forward) {
            const PlanStage& st = plan.stages[si];
            t += host(st.host_input_bytes) + st.forward_seconds + host(st.host_output_bytes);
          } else {
            const PlanStage& st = plan.stages[static_cast<std::size_t>(2 * L - s)];
            t += st.backward_seconds + (recompute && s != L ? st.recompute_seconds : 0.0);
          }
          busy[si] += t - start;
          for (const PlanCopy* c : out[2 * si + (task.forward ? 0 : 1)]) sent_r[static_cast<std::size_t>(c->id)][mb] = t;
          if (r == 0 && mb == 0 && s == 0 && task.forward) first_start = start;
          if (r == 0 && mb == 0 && s == (training ? 0 : p - 1) && task.forward != training) first_end = t;
          clock[si] = t;
          if (++next[si] == tasks[si].size()) --left;
          progressed = true;
        }
      }
      if (!progressed && left > 0) throw std::logic_error("asynchronous schedule evaluator: tasks wait on each other");
    }
    makespan = std::max(makespan, *std::max_element(clock.begin(), clock.end()));
    busiest = std::max(busiest, *std::max_element(busy.begin(), busy.end()));
  }

  // Copies in flight at once on one directed link share it: the same copy's successive
  // micro-batches, or copies (of any replica) whose routes cross.
  std::map<int, std::vector<std::pair<int, int>>> users;  // slot -> (replica, copy id)
  for (int r = 0; r < replicas; ++r)
    for (const PlanCopy& c : plan.copies)
      for (int slot : routes.path(timer.physical(r, c.src_ipu), timer.physical(r, c.dst_ipu)).slots)
        users[slot].push_back({r, c.id});
  auto overlaps = [&](std::pair<int, int> a, std::pair<int, int> b) {
    std::vector<std::pair<double, double>> spans;
    for (auto [r, id] : {a, b}) {
      const double d = duration[static_cast<std::size_t>(r)][static_cast<std::size_t>(id)];
      for (double at : sent[static_cast<std::size_t>(r)][static_cast<std::size_t>(id)]) spans.emplace_back(at, at + d);
      if (a == b) break;
    }
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].second) return true;
    return false;
  };
  for (const auto& [slot, list] : users) {
    bool shared = false;
    for (std::size_t i = 0; i < list.size() && !shared; ++i)
      for (std::size_t j = i; j < list.size() && !shared; ++j) shared = overlaps(list[i], list[j]);
    if (shared) {
      timer.contention |= kSharedCopyLinks;
      break;
    }
  }
  if (ex.host_io && hw.host_link.shared_by > 1) {
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
  e.step_seconds = static_cast<double>(batches) * (makespan + e.update_seconds);
  if (!training) e.update_seconds = 0;
  e.contention = timer.contention;
  return e;
}

} // namespace ipusim
