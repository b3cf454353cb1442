#pragma once
// How this process's heap gives memory back. A run builds and drops tens of megabytes
// (schedule orders at their probe depths, programs, the memory advice's rebuilds); glibc's
// defaults return a freed block above 128 KiB to the kernel at once (mmap, or trimming the
// heap's top), so the next build faults every page in again. Page faults are most of what
// a large run costs on a virtualised host (docs/benchmark.md, "Freed memory kept").

namespace ipusim {

// Keeps freed memory in the heap for reuse: blocks up to 32 MiB come from the heap, and
// the heap is trimmed only when 512 MiB lie free at its top. The peak RSS is what the run
// needs at once, as before; the process returns it when it ends. Call once, early, in a
// process that ipusim owns (the CLI, a forked simulation), not in a host such as Python.
void keep_freed_memory();

// Faults about `bytes` of this thread's heap in at once, for the allocations to come: a block
// taken, its pages populated in one call (madvise MADV_POPULATE_WRITE, Linux 5.14) and given
// back to the heap, which keeps it (keep_freed_memory). On this project's virtualised machine a
// page faulted in on first touch costs about 5.6 us of CPU and one populated about 1.3 us
// (docs/benchmark.md, "Pages faulted in at once"). Under 1 MiB, or where the kernel refuses the
// advice, nothing is done; a process's own figures never change, only its speed.
void prefault_heap(double bytes);

// This process's resident memory (/proc/self/statm), 0 when unknown.
double resident_bytes();

// A process that runs one piece of work after another (a sweep's points, the validation's
// entries, each a simulation) keeps what each leaves until it exits: SimGrid's platforms and
// the heap's fragments, about 20 MiB a ResNet-50 Pod256 run, some 100 MiB of freed heap not
// yet given back. ProcessGrowth gives the freed heap back once the process has grown by
// kTrimAboveBytes and says when it has grown by kStopAboveBytes, to take no more work.

class ProcessGrowth {
public:
  static constexpr double kTrimAboveBytes = 64.0 * (1 << 20);
  static constexpr double kStopAboveBytes = 256.0 * (1 << 20);

  ProcessGrowth();
  // After a piece of work: gives the freed heap back if grown past kTrimAboveBytes (small work
  // leaves little, and trimming after each would cost more than it saves); false once grown
  // past kStopAboveBytes even so.
  bool settle();

private:
  double start_;
};

} // namespace ipusim
