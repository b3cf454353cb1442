#include "sim/schedule/order_period.hpp"

#include <numeric>

namespace ipusim {

Period find_period(const std::vector<SequencedOp>& s, std::size_t max_length) {
  Period best;
  best.first = s.size();
  std::size_t saved = 0;
  for (std::size_t length = 1; length <= max_length && 2 * length <= s.size(); ++length) {
    // A run of i where op i + length is op i `stride` micro-batches further holds
    // run / length + 1 whole copies of its first `length` ops.
    std::size_t start = 0, run = 0;
    std::int64_t stride = 0;
    auto close = [&] {
      const auto times = static_cast<std::int64_t>(run / length + 1);
      const std::size_t ops_saved = static_cast<std::size_t>(times - 1) * length;
      if (run > 0 && times >= 2 && ops_saved > saved) {
        saved = ops_saved;
        best = {start, length, times, stride};
      }
      run = 0;
    };
    for (std::size_t i = 0; i + length < s.size(); ++i) {
      const SequencedOp& a = s[i];
      const SequencedOp& b = s[i + length];
      const std::int64_t shift = b.op.micro - a.op.micro;
      const bool same = a.device == b.device && a.op.chunk == b.op.chunk && a.op.pass == b.op.pass &&
                        a.op.paired_with_next == b.op.paired_with_next && shift > 0;
      if (same && run > 0 && shift == stride) {
        ++run;
        continue;
      }
      close();
      if (same) start = i, stride = shift, run = 1;
    }
    close();
    // The shortest period covering most of the sequence: longer ones repeat it.
    if (2 * saved > s.size()) break;
  }
  return best;
}

void align_periods(std::vector<Period>& periods, const std::vector<std::size_t>& lengths) {
  std::int64_t common = 1;
  for (const Period& p : periods)
    if (p.times > 0) common = std::lcm(common, p.stride);
  for (std::size_t i = 0; i < periods.size(); ++i) {
    Period& p = periods[i];
    if (p.times <= 0 || p.stride == common) continue;
    const std::int64_t k = common / p.stride;
    p.length *= static_cast<std::size_t>(k);
    p.times /= k;
    p.stride = common;
    if (p.times == 0) p = {lengths[i], 0, 0, 0};
  }
}

IpuOps split_sequence(const std::vector<SequencedOp>& s, const Period& p) {
  IpuOps ops;
  if (p.times <= 0) {
    ops.warm_up = s;
    return ops;
  }
  const auto begin = s.begin();
  const auto first = static_cast<std::ptrdiff_t>(p.first), length = static_cast<std::ptrdiff_t>(p.length);
  ops.warm_up.assign(begin, begin + first);
  ops.period.assign(begin + first, begin + first + length);
  ops.cool_down.assign(begin + first + length * p.times, s.end());
  ops.times = p.times;
  ops.stride = p.stride;
  return ops;
}

IpuOps extended(IpuOps ops, std::int64_t k) {
  ops.times += k;
  for (SequencedOp& s : ops.cool_down) s.op.micro += k * ops.stride;
  return ops;
}

} // namespace ipusim
