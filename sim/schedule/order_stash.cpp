#include "sim/schedule/order_stash.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim {

namespace {

// Micro-batches a part holds given what is waiting for its B and for its W.
int held(double to_b, double to_w, double w_share) { return static_cast<int>(std::ceil(to_b + w_share * to_w - 1e-9)); }

// Keeps `moments` free of one another's dominated entries: `now` joins unless some kept moment
// holds at least as much of every part, and it evicts those it holds at least as much of.
void keep_if_not_dominated(std::vector<std::vector<int>>& moments, const std::vector<int>& now) {
  auto covers = [](const std::vector<int>& a, const std::vector<int>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] < b[i]) return false;
    return true;
  };
  for (const auto& kept : moments)
    if (covers(kept, now)) return;
  moments.erase(std::remove_if(moments.begin(), moments.end(), [&](const auto& kept) { return covers(now, kept); }),
                moments.end());
  moments.push_back(now);
}

// One device's moments as (stage, micro-batches), the parts of one stage taken at their larger.
StashMoment as_stages(const std::vector<int>& counts, const std::vector<OrderPart>& parts) {
  StashMoment out;
  for (std::size_t c = 0; c < parts.size(); ++c) {
    if (parts[c].stage < 0 || counts[c] <= 0) continue;
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == parts[c].stage; });
    if (same == out.end()) out.emplace_back(parts[c].stage, counts[c]);
    else same->second = std::max(same->second, counts[c]);
  }
  return out;
}

} // namespace

OrderStash stash_from_order(const ScheduleOrder& order, const PartLayout& layout, int forward_stages) {
  OrderStash out;
  out.stage_depth.assign(static_cast<std::size_t>(forward_stages), 0);
  for (int d = 0; d < layout.devices; ++d) {
    const std::vector<OrderPart>& parts = layout.parts[static_cast<std::size_t>(d)];
    const std::size_t chunks = parts.size();
    std::vector<double> to_b(chunks, 0), to_w(chunks, 0), peak(chunks, 0);
    std::vector<int> now(chunks, 0);
    std::vector<std::vector<int>> moments;
    for (const OrderOp& op : order.ops[static_cast<std::size_t>(d)]) {
      const auto c = static_cast<std::size_t>(op.chunk);
      if (op.pass == Pass::Forward) to_b[c] += 1;
      if (op.pass == Pass::InputGradient) to_b[c] -= 1, to_w[c] += 1;
      if (op.pass == Pass::WeightGradient) to_w[c] -= 1;
      if (op.pass == Pass::Backward) to_b[c] -= 1;
      peak[c] = std::max(peak[c], to_b[c] + layout.w_share * to_w[c]);
      now[c] = held(to_b[c], to_w[c], layout.w_share);
      keep_if_not_dominated(moments, now);
    }
    IpuStashPeaks ipu{layout.ipu_of_device[static_cast<std::size_t>(d)], {}};
    for (const auto& counts : moments)
      if (StashMoment m = as_stages(counts, parts); !m.empty()) ipu.moments.push_back(std::move(m));
    out.ipu_peaks.push_back(std::move(ipu));
    for (std::size_t c = 0; c < chunks; ++c) {
      const OrderPart& part = parts[c];
      if (part.stage < 0) continue;
      const int depth = held(peak[c], 0, layout.w_share);
      if (part.mirrored) out.mirrors.push_back({part.stage, part.forward.ipu, depth});
      else {
        int& stage = out.stage_depth[static_cast<std::size_t>(part.stage)];
        stage = std::max(stage, depth);
      }
    }
  }
  // An IPU that runs several of the order's devices (1F1B and ZB-H1/H2 with stages sharing an
  // IPU: one device per stage) interleaves their ops in an order the devices' sequences do not
  // give, so no moment of it is known: its stages count at their own peaks.
  std::vector<IpuStashPeaks> known;
  for (IpuStashPeaks& peaks : out.ipu_peaks)
    if (std::count(layout.ipu_of_device.begin(), layout.ipu_of_device.end(), peaks.ipu) == 1)
      known.push_back(std::move(peaks));
  out.ipu_peaks = std::move(known);
  return out;
}

} // namespace ipusim
