#include "sim/base/heap.hpp"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

namespace ipusim {

void keep_freed_memory() {
  constexpr int kMmapThreshold = 32 << 20;  // glibc's most on 64-bit (mallopt(3))
  constexpr int kTrimThreshold = 512 << 20;
  // Setting either turns glibc's dynamic thresholds off; a refusal leaves the defaults,
  // which change speed only, never a result.
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

ProcessGrowth::ProcessGrowth() : start_(resident_bytes()) {}

bool ProcessGrowth::settle() {
  if (resident_bytes() - start_ <= kTrimAboveBytes) return true;
  ::malloc_trim(0);
  return resident_bytes() - start_ <= kStopAboveBytes;
}

} // namespace ipusim
