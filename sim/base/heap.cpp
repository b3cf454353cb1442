#include "sim/base/heap.hpp"

#include <malloc.h>

namespace ipusim {

void keep_freed_memory() {
  constexpr int kMmapThreshold = 32 << 20;  // glibc's most on 64-bit (mallopt(3))
  constexpr int kTrimThreshold = 512 << 20;
  // Setting either turns glibc's dynamic thresholds off; a refusal leaves the defaults,
  // which change speed only, never a result.
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

} // namespace ipusim
