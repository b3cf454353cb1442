// 1F1B and Megatron's interleaved 1F1B (Narayanan et al., SC'21) as orders: the rule of
// Megatron-LM's forward_backward_pipelining_with_interleaving, as sail-sg's scheduler/vpp.py
// writes it. Device d runs 2(p-d-1) + (v-1)p warm-up forwards, then one forward one backward
// (B and W together), then drains; forwards walk the chunks in groups of p micro-batches.
#include <algorithm>
#include <stdexcept>

#include "sim/schedule/order.hpp"

namespace ipusim {

ScheduleOrder order_1f1b(int p, std::int64_t m) {
  ScheduleOrder o = interleaved_layout("1f1b", p, 1, m);
  for (int d = 0; d < p; ++d) {
    auto& ops = o.ops[static_cast<std::size_t>(d)];
    const std::int64_t warm = std::min<std::int64_t>(p - d - 1, m);
    for (std::int64_t i = 0; i < warm; ++i) ops.push_back({Pass::Forward, i, 0});
    for (std::int64_t i = 0; i < m - warm; ++i) {
      ops.push_back({Pass::Forward, warm + i, 0});
      ops.push_back({Pass::Backward, i, 0});
    }
    for (std::int64_t i = m - warm; i < m; ++i) ops.push_back({Pass::Backward, i, 0});
  }
  return o;
}

ScheduleOrder order_interleaved(int p, int v, std::int64_t m) {
  if (v < 2) throw std::invalid_argument("pipeline.virtual-stages: interleaved 1F1B needs at least 2 chunks per IPU");
  if (m % p != 0)
    throw std::invalid_argument("pipeline.depth-multiple: interleaved 1F1B needs the micro-batches (" +
                                std::to_string(m) + ") to be a multiple of the pipeline depth (" + std::to_string(p) +
                                ")");
  ScheduleOrder o = interleaved_layout("interleaved-1f1b", p, v, m);
  const std::int64_t total = m * v, group = static_cast<std::int64_t>(p) * v;
  auto chunk = [&](std::int64_t k, bool forward) {
    const int c = static_cast<int>((k % group) / p);
    return forward ? c : v - 1 - c;
  };
  auto micro = [&](std::int64_t k) { return (k / group) * p + k % p; };
  for (int d = 0; d < p; ++d) {
    auto& ops = o.ops[static_cast<std::size_t>(d)];
    const std::int64_t warm = std::min<std::int64_t>(2 * (p - d - 1) + static_cast<std::int64_t>(v - 1) * p, total);
    for (std::int64_t k = 0; k < warm; ++k) ops.push_back({Pass::Forward, micro(k), chunk(k, true)});
    for (std::int64_t k = 0; k < total - warm; ++k) {
      ops.push_back({Pass::Forward, micro(k + warm), chunk(k + warm, true)});
      ops.push_back({Pass::Backward, micro(k), chunk(k, false)});
    }
    for (std::int64_t k = total - warm; k < total; ++k) ops.push_back({Pass::Backward, micro(k), chunk(k, false)});
  }
  return o;
}

// Training 1F1B's order where stages share an IPU: one part per forward stage. Not listed as
// a schedule of its own: the 1f1b entry (asynchronous.cpp) points at it.
const OrderScheduleInfo& one_f_one_b_order() {
  static const OrderScheduleInfo info{
      "1f1b", "1F1B (PipeDream-Flush) from its order, for training with stages sharing an IPU",
      "any placement: one part per forward stage, stages on one IPU share it", PartPlacement::OnePerStage,
      [](int p, int, std::int64_t m, const OpTimes&, double) { return order_1f1b(p, m); }};
  return info;
}

const OrderScheduleInfo& interleaved_1f1b_order() {
  static const OrderScheduleInfo info{
      "interleaved-1f1b",
      "what-if: Megatron's interleaved 1F1B, v model chunks per IPU (chunk c of IPU d is part c*p+d)",
      "G a multiple of the IPUs p in the pipeline; v >= 2 forward stages per IPU, stage c*p+d on IPU d (the "
      "model's annotations)",
      PartPlacement::Interleaved,
      [](int p, int v, std::int64_t m, const OpTimes&, double) { return order_interleaved(p, v, m); }};
  return info;
}

} // namespace ipusim
