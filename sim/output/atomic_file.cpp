#include "sim/output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "sim/io/input_error.hpp"

namespace ipusim {

void write_file_atomically(const std::string& path, const std::string& content, bool overwrite) {
  if (!overwrite && std::filesystem::exists(path))
    throw InputError(path, "", "output.exists", "the file exists; pass --force to overwrite it");
  const std::filesystem::path target(path);
  std::string hidden_name = ".";  // GCC 12 warns falsely on "." + std::string
  hidden_name += target.filename().string();
  hidden_name += ".tmp" + std::to_string(::getpid());
  const std::string temp = (target.parent_path() / hidden_name).string();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw InputError(path, "", "output.unwritable", std::string("cannot write: ") + std::strerror(errno));
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw InputError(path, "", "output.unwritable", "cannot write: " + why);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw InputError(path, "", "output.unwritable", "cannot write: " + why);
  }
}

} // namespace ipusim
