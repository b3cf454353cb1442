#include "sim/output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sim/io/input_error.hpp"

namespace ipusim {

void write_file_atomically(const std::string& path, const std::string& content, bool overwrite) {
  write_file_atomically(path, [&](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); },
                        overwrite);
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write, bool overwrite) {
  if (!overwrite && std::filesystem::exists(path))
    throw InputError(path, "", "output.exists", "the file exists; pass --force to overwrite it");
  const std::filesystem::path target(path);
  std::string hidden_name = ".";  // GCC 12 warns falsely on "." + std::string
  hidden_name += target.filename().string();
  hidden_name += ".tmp" + std::to_string(::getpid());
  const std::string temp = (target.parent_path() / hidden_name).string();
  auto fail = [&](const std::string& why) {
    ::unlink(temp.c_str());
    throw InputError(path, "", "output.unwritable", "cannot write: " + why);
  };
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "output.unwritable", std::string("cannot write: ") + std::strerror(errno));
    try {
      write(out);
    } catch (...) {
      out.close();
      ::unlink(temp.c_str());
      throw;
    }
    out.flush();
    if (!out) fail(std::strerror(errno));
  }
  const int fd = ::open(temp.c_str(), O_RDONLY);
  if (fd < 0) fail(std::strerror(errno));
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || std::rename(temp.c_str(), path.c_str()) != 0) fail(std::strerror(errno));
}

} // namespace ipusim
