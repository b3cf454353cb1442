#pragma once
// A forward stage a schedule runs a second time, on another IPU (DualPipe's reverse
// pipeline): that IPU holds its own copy of the stage's weights (with their gradients and
// optimizer state) and stashes `stash_depth` of its micro-batches. Schedules produce them,
// the memory model charges them; plain data, so the engine's program header can carry it.
namespace ipusim {

struct StageMirror {
  int stage = 0;  // forward stage
  int ipu = 0;    // the (virtual) IPU the second copy runs on
  int stash_depth = 0;
};

} // namespace ipusim
