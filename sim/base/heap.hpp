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

} // namespace ipusim
