#include "sim/sweep/folder_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/io/input_error.hpp"

namespace ipusim::sweep {

FolderLock::FolderLock(const std::string& dir) {
  const std::string path = dir + "/.ipusim-sweep.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(dir, "/", "output.unwritable", "cannot create the folder's lock file: " + std::string(std::strerror(errno)));
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases every lock of this description
}

bool FolderLock::set(short type, long byte, bool wait) {
  if (!supported_) return true;
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = byte;
  lock.l_len = 1;
  while (::fcntl(fd_, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return false;
    supported_ = false;  // EINVAL, ENOLCK: a file system without OFD locks
    return true;
  }
  return true;
}

void FolderLock::lock_gate() { set(F_WRLCK, 0, true); }
void FolderLock::unlock_gate() { set(F_UNLCK, 0, false); }
bool FolderLock::try_run_alone() { return set(F_WRLCK, 1, false); }
void FolderLock::run_shared() { set(F_RDLCK, 1, true); }
void FolderLock::stop_running() { set(F_UNLCK, 1, false); }

bool FolderLock::try_claim_points(const std::vector<std::size_t>& points, std::size_t& taken) {
  constexpr long kFirstPoint = 16;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (set(F_WRLCK, kFirstPoint + static_cast<long>(points[i]), false)) continue;
    taken = points[i];
    for (std::size_t k = 0; k < i; ++k) set(F_UNLCK, kFirstPoint + static_cast<long>(points[k]), false);
    return false;
  }
  return true;
}

} // namespace ipusim::sweep
