#pragma once
// What one IPU stashes at once. A schedule run from an order knows, for each IPU, the moments
// at which its stages' stashes could peak together; the memory model counts the moment with
// the most bytes. Adding each stage's own peak instead would count micro-batches the IPU never
// holds at the same time (a V placement's two stages peak at different times). Plain data,
// produced by sim/schedule, read by sim/memory.
#include <utility>
#include <vector>

namespace ipusim {

// (forward stage, micro-batches it stashes) of every stage holding a stash at that moment.
using StashMoment = std::vector<std::pair<int, int>>;

struct IpuStashPeaks {
  int ipu = 0;                       // virtual IPU
  std::vector<StashMoment> moments;  // none holding no more of every stage than another: the peak is one of them
};

} // namespace ipusim
