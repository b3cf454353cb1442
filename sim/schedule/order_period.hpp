#pragma once
// The steady phase of one IPU's sequence of order ops: a run of `times` copies of
// [first, first + length), copy j the same ops of the same parts `stride` * j micro-batches
// further. Found on the sequence itself and checked op for op; plain data, no plan.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/schedule/order.hpp"

namespace ipusim {

struct SequencedOp {
  int device = 0;  // the order's device
  OrderOp op;

  bool operator==(const SequencedOp&) const = default;
};

struct Period {
  std::size_t first = 0;
  std::size_t length = 0;
  std::int64_t times = 0;  // 0: no period (every op before `first`, which is the sequence's end)
  std::int64_t stride = 0;
};

// The period saving the most ops (the shortest of equals) of at most `max_length` ops, or
// none when no stretch repeats at least twice.
Period find_period(const std::vector<SequencedOp>& sequence, std::size_t max_length = 256);

// The IPUs' periods made one loop: each advanced by the same number of micro-batches per
// iteration (the least common multiple of their strides, a period of stride s taken
// lcm/s times per iteration), as the engine's steady state compares every IPU's position
// iteration for iteration. A period too short for one such iteration is dropped (unrolled).
void align_periods(std::vector<Period>& periods, const std::vector<std::size_t>& sequence_lengths);

// One IPU's ops as its program runs them: a warm-up, `times` runs of `period` (run j the same
// ops `stride` * j micro-batches further) and a cool-down.
struct IpuOps {
  std::vector<SequencedOp> warm_up, period, cool_down;
  std::int64_t times = 0, stride = 0;

  bool operator==(const IpuOps&) const = default;
  std::size_t unrolled() const { return warm_up.size() + period.size() + cool_down.size(); }
};
IpuOps split_sequence(const std::vector<SequencedOp>& sequence, const Period& period);
// The same program `k` periods longer: the cool-down comes k strides later.
IpuOps extended(IpuOps ops, std::int64_t k);

} // namespace ipusim
