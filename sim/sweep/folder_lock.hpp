#pragma once
// One sweep owns an output folder at a time. Shards of the same sweep (same points)
// share it; a sweep with other points is refused while any of them runs. Two open file
// description (OFD) locks on DIR/.ipusim-sweep.lock, which the kernel drops when a
// process dies, however it dies:
//   byte 0, "gate": held exclusively while a process checks and writes sweep.json;
//   byte 1, "running": held shared by every sweep process using the folder; whoever
//   gets it exclusively (under the gate) knows it is alone;
//   byte 16 + i, "point i": held exclusively by the process whose shard runs point i, so
//   the same sweep or shard started twice into one folder is refused instead of running
//   every point twice (shards of one sweep claim disjoint points and share the folder).
#include <cstddef>
#include <string>
#include <vector>

namespace ipusim::sweep {

class FolderLock {
public:
  explicit FolderLock(const std::string& dir);  // creates the lock file; throws InputError when it cannot
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  void lock_gate();        // waits
  void unlock_gate();
  bool try_run_alone();    // the running byte exclusively, without waiting
  void run_shared();       // the running byte shared (waits only for a process under the gate)
  void stop_running();
  // Claims the points (under the gate): true when none is claimed by another process.
  // On false nothing is held and `taken` is the first point another process holds.
  bool try_claim_points(const std::vector<std::size_t>& points, std::size_t& taken);
  // False when the file system has no such locks (then nothing is locked; see docs/sweeps.md).
  bool supported() const { return supported_; }

private:
  bool set(short type, long byte, bool wait);

  int fd_ = -1;
  bool supported_ = true;
};

} // namespace ipusim::sweep
