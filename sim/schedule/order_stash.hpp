#pragma once
// Stashes from an order (docs/schedules.md, "Stash depths"): per stage for the report, and per
// IPU at once for the memory total.
#include <vector>

#include "sim/plan/stage_mirror.hpp"
#include "sim/plan/stash_peaks.hpp"
#include "sim/schedule/order.hpp"
#include "sim/schedule/order_parts.hpp"

namespace ipusim {

struct OrderStash {
  // Per forward stage: micro-batches at its part's peak, rounded up (a stage split in two parts
  // stashes the larger of its parts' peaks).
  std::vector<int> stage_depth;
  std::vector<StageMirror> mirrors;     // DualPipe's second copies, with their own peaks
  // Per IPU that runs one device of the order: the moments its stashes could peak together.
  std::vector<IpuStashPeaks> ipu_peaks;
};

// A part holds a micro-batch in full from its F to its B and W's share of it (the layout's
// w_share) from B to W, the limit the greedy orders were built under; whole micro-batches are
// stashed, so each part's holding at a moment is rounded up.
OrderStash stash_from_order(const ScheduleOrder& order, const PartLayout& layout, int forward_stages);

} // namespace ipusim
