#include "sim/base/heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

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

void prefault_heap(double bytes) {
  constexpr double kLeast = 1 << 20;
  // Blocks below the mmap threshold (keep_freed_memory), so that freeing them keeps them in the heap.
  constexpr std::size_t kBlock = 16 << 20;
  constexpr double kMost = 1024.0 * (1 << 20);
  if (!(bytes >= kLeast)) return;
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::vector<void*> blocks;
  for (double left = std::min(bytes, kMost); left > 0; left -= kBlock) {
    const std::size_t size = left < kBlock ? static_cast<std::size_t>(left) : kBlock;
    void* block = std::malloc(size);
    if (block == nullptr) break;
    blocks.push_back(block);
    const auto from = (reinterpret_cast<std::uintptr_t>(block) + page - 1) & ~(page - 1);
    const auto to = (reinterpret_cast<std::uintptr_t>(block) + size) & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
    if (to > from && ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) != 0) break;
#else
    (void)from, (void)to;
    break;
#endif
  }
  for (void* block : blocks) std::free(block);
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
