#include "sim/io/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

class Descriptor {
public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

private:
  int fd_;
};

} // namespace

InputFile read_input_file(const std::string& path, const std::string& named_in, const std::string& pointer,
                          std::size_t max_bytes) {
  const std::string quoted = "\"" + path + "\"";
  const auto fail = [&](const std::string& rule, const std::string& why) -> InputError {
    return InputError(named_in, pointer, rule, quoted + " " + why);
  };
  if (path.find('\0') != std::string::npos)
    throw fail("file.bad-name", "contains a NUL character, which no file name can hold");
  // O_NONBLOCK: opening a FIFO without a writer would block; it is refused below anyway.
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int e = errno;
    switch (e) {
    case ENOENT: throw fail("file.missing", "does not exist");
    case ENOTDIR: throw fail("file.missing", "does not exist (a part of the path is not a folder)");
    case EACCES:
    case EPERM: throw fail("file.unreadable", "cannot be read: permission denied");
    case ELOOP: throw fail("file.unreadable", "cannot be read: too many levels of symbolic links (a symlink loop)");
    case ENAMETOOLONG:
      throw fail("file.bad-name", "is too long a name (at most 255 bytes per path component, 4096 in all)");
    default: throw fail("file.unreadable", std::string("cannot be opened: ") + std::strerror(e));
    }
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw fail("file.unreadable", std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    throw fail(S_ISDIR(info.st_mode) ? "file.unreadable" : "file.not-regular",
               std::string("is ") + file_type(info.st_mode) + ", not a file ipusim can read (give a regular JSON file)");
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes)
    throw fail("file.too-large", "holds " + std::to_string(info.st_size) + " bytes; input files may hold at most " +
                                     std::to_string(max_bytes));
  InputFile out;
  out.device = static_cast<std::uint64_t>(info.st_dev);
  out.inode = static_cast<std::uint64_t>(info.st_ino);
  out.text.reserve(static_cast<std::size_t>(info.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("file.unreadable", std::string("cannot be read: ") + std::strerror(errno));
    if (n == 0) break;
    out.text.append(chunk, static_cast<std::size_t>(n));
    if (out.text.size() > max_bytes)  // a file that grows while we read it
      throw fail("file.too-large", "holds more than " + std::to_string(max_bytes) + " bytes, the most an input may hold");
  }
  return out;
}

} // namespace ipusim
