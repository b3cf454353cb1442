// Breadth-First Pipeline Parallelism (Lamy-Poirier, MLSys 2023, arXiv 2211.05953): the looping
// placement of interleaved 1F1B (v >= 2 chunks per device, chunk c of device d is part c*p+d),
// run breadth-first. Each device runs the forwards of every micro-batch of the batch through its
// chunk 0, then all of them through its chunk 1, and so on (GPipe within each loop); then the
// backwards, B and W as one, chunk by chunk in reverse, micro-batches in the same order. This is
// the order of the author's library, ServiceNow/Fast-LLM (fast_llm/engine/schedule/schedule.py,
// _create_steps, with the whole batch as one breadth-first group); PyTorch's ScheduleLoopedBFS
// (torch/distributed/pipelining/schedules.py) runs the same forwards and each chunk's backwards
// last micro-batch first.
//
// What it trades: with m >= p and equal chunks the step is (vm + p - 1)(F + B + W) of a chunk,
// the bubble of interleaving, (p-1)(F+B+W)/v of a stage per device; but every chunk holds all m
// micro-batches' activations until its backward, GPipe's memory (m per stage), where interleaved
// 1F1B holds about p. The paper's gain, fewer weight gathers and gradient reductions under fully
// sharded data parallelism (once per chunk per batch), is not modelled here.
#include <cstdint>
#include <stdexcept>

#include "sim/schedule/order.hpp"

namespace ipusim {

namespace {

// One device's ops: the forwards of micro-batches 0..m-1 through each chunk in turn, then their
// backwards through the chunks in reverse.
std::vector<OrderOp> breadth_first_ops(int v, std::int64_t m) {
  std::vector<OrderOp> ops;
  for (int c = 0; c < v; ++c)
    for (std::int64_t i = 0; i < m; ++i) ops.push_back({Pass::Forward, i, c});
  for (int c = v - 1; c >= 0; --c)
    for (std::int64_t i = 0; i < m; ++i) ops.push_back({Pass::Backward, i, c});
  return ops;
}

ScheduleOrder order_breadth_first(int p, int v, std::int64_t m) {
  if (v < 2)
    throw std::invalid_argument("pipeline.virtual-stages: breadth-first pipelining loops over at least 2 chunks per "
                                "IPU, not " + std::to_string(v));
  ScheduleOrder o = interleaved_layout("breadth-first", p, v, m);
  for (auto& ops : o.ops) ops = breadth_first_ops(v, m);
  return o;
}

} // namespace

const OrderScheduleInfo& breadth_first_order() {
  static const OrderScheduleInfo info{
      "breadth-first",
      "what-if: Breadth-First Pipeline Parallelism's looping schedule, v model chunks per IPU (chunk c of IPU d is "
      "part c*p+d): every micro-batch forward through one chunk before the next, then backward in reverse; "
      "interleaving's bubble, GPipe's stash",
      "v >= 2 forward stages per IPU, stage c*p+d on IPU d (the model's annotations)", PartPlacement::Interleaved,
      [](int p, int v, std::int64_t m, const OpTimes&, double) { return order_breadth_first(p, v, m); }};
  return info;
}

} // namespace ipusim
