#include "sim/output/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>
#include <vector>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void unwritable(const std::string& path, const std::string& why) {
  throw InputError(path, "/", "output.unwritable", "cannot write the file: " + why);
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A stream that writes through to a file descriptor, remembering the first error.
class FdBuffer : public std::streambuf {
public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  // Writes what is buffered; false with errno set on failure (now or earlier).
  bool drain() {
    const char* p = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) error_ = n == 0 ? EIO : errno;
      else p += n, left -= static_cast<std::size_t>(n);
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    errno = error_;
    return error_ == 0;
  }

private:
  int overflow(int c) override {
    if (!drain()) return traits_type::eof();
    if (c != traits_type::eof()) sputc(static_cast<char>(c));
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

// Writes what `write` makes to `fd`; false with errno set on failure. What `write`
// throws is passed on.
bool write_all(int fd, const ContentWriter& write) {
  FdBuffer buffer(fd);
  std::ostream out(&buffer);
  write(out);
  return buffer.drain();
}

ContentWriter writer_of(const std::string& content) {
  return [&content](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); };
}

bool is_temp_name(const std::string& name) {
  // .NAME.tmp-PID-N
  const auto tmp = name.rfind(".tmp-");
  if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos || tmp == 0) return false;
  const std::string tail = name.substr(tmp + 5);
  const auto dash = tail.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == tail.size()) return false;
  return tail.find_first_not_of("0123456789-") == std::string::npos && tail.find('-', dash + 1) == std::string::npos;
}

// What `path` is, after following symbolic links; the target for a link.
struct Target {
  std::string path;      // the file to write (a link's target, made absolute)
  bool exists = false;
  mode_t mode = 0;
  std::string via_link;  // the link named, when there was one
};

Target resolve(const std::string& path) {
  if (path.empty()) throw InputError("<output>", "/", "output.unwritable", "an output needs a file name");
  if (path.find('\0') != std::string::npos) throw InputError(path, "/", "output.unwritable", "the name holds a NUL");
  Target t;
  t.path = path;
  struct stat link_info {};
  if (::lstat(path.c_str(), &link_info) != 0) {
    if (errno == ENOENT) return t;
    unwritable(path, std::strerror(errno));
  }
  if (S_ISLNK(link_info.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::canonical(path, ec);
    if (ec) {
      throw InputError(path, "/", "output.not-regular",
                       "is a symbolic link to a file that does not exist (" + ec.message() +
                           "); name the file to write, or remove the link");
    }
    t.via_link = path;
    t.path = target.string();
  }
  struct stat info {};
  if (::stat(t.path.c_str(), &info) != 0) unwritable(path, std::strerror(errno));
  t.exists = true;
  t.mode = info.st_mode;
  return t;
}

std::atomic<unsigned> temp_counter{0};

// The writer PID in a temporary name .NAME.tmp-PID-N, or 0.
pid_t temp_writer(const std::string& name) {
  if (!is_temp_name(name)) return 0;
  const std::string tail = name.substr(name.rfind(".tmp-") + 5);
  try {
    return static_cast<pid_t>(std::stol(tail.substr(0, tail.find('-'))));
  } catch (const std::exception&) {
    return 0;
  }
}

// Temporary files (or report folders) for `target` that a killed writer left: named for
// this target, by a process that no longer exists. Removed before the next write to it.
void remove_stale_temps(const fs::path& target) {
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = "." + target.filename().string() + ".tmp-";
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t writer = temp_writer(name);
    if (writer > 0 && writer != ::getpid() && ::kill(writer, 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::closedir(dir);
  for (const std::string& name : stale) {
    const fs::path p = folder / name;
    std::error_code ec;
    if (fs::symlink_status(p, ec).type() == fs::file_type::directory) fs::remove_all(p, ec);
    else ::unlink(p.c_str());
  }
}

} // namespace

void check_output(const std::string& path, bool overwrite) {
  if (path == "-") return;
  const Target t = resolve(path);
  if (!t.exists || S_ISCHR(t.mode) || S_ISFIFO(t.mode)) return;
  if (!S_ISREG(t.mode))
    throw InputError(path, "/", "output.not-regular",
                     std::string("is ") + kind_of(t.mode) + (t.via_link.empty() ? "" : " (through a symbolic link)") +
                         ", which ipusim does not write results into; name a file");
  if (!overwrite)
    throw InputError(path, "/", "output.exists",
                     std::string("the file exists") + (t.via_link.empty() ? "" : " (the link's target " + t.path + ")") +
                         "; pass --force to overwrite it");
}

void write_output(const std::string& path, const std::string& content, bool overwrite) {
  write_output(path, writer_of(content), overwrite);
}

void write_output(const std::string& path, const ContentWriter& write, bool overwrite) {
  check_output(path, overwrite);
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw InputError("-", "/", "output.unwritable", "cannot write to standard output");
    return;
  }
  const Target t = resolve(path);
  if (t.exists && (S_ISCHR(t.mode) || S_ISFIFO(t.mode))) {
    // A stream: written through, never created, truncated or renamed over.
    const int fd = ::open(t.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) unwritable(path, std::strerror(errno));
    bool ok = false;
    try {
      ok = write_all(fd, write);
    } catch (...) {
      ::close(fd);
      throw;
    }
    const int e = errno;
    ::close(fd);
    if (!ok) unwritable(path, std::strerror(e));
    return;
  }
  replace_file(t.path, write, /*durable=*/true);
}

void replace_file(const std::string& path, const std::string& content, bool durable) {
  replace_file(path, writer_of(content), durable);
}

void replace_file(const std::string& path, const ContentWriter& write, bool durable) {
  remove_stale_temps(fs::path(path));
  commit_temp_file(write_temp_file(path, write, durable), path);
}

std::string write_temp_file(const std::string& path, const ContentWriter& write, bool durable) {
  const fs::path target(path);
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    std::string name = ".";  // GCC 12 warns falsely on "." + std::string
    name += target.filename().string();
    name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(temp_counter++);
    temp = (target.parent_path() / name).string();
    // O_EXCL | O_NOFOLLOW: a new file of ours, never an existing name or a link's target.
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != EEXIST || attempt > 100)) unwritable(path, std::strerror(errno));
  }
  bool ok = false;
  try {
    ok = write_all(fd, write) && (!durable || ::fsync(fd) == 0);
  } catch (...) {  // the content could not be made: no file, and no temporary left behind
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  const int e = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(temp.c_str());
    unwritable(path, std::strerror(ok ? errno : e));
  }
  return temp;
}

void commit_temp_file(const std::string& temp, const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    ::unlink(temp.c_str());
    throw InputError(path, "/", "output.not-regular", "is a folder, which ipusim does not write results into");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    unwritable(path, why);
  }
}

std::string make_temp_folder(const std::string& path) {
  const fs::path target = fs::path(path).lexically_normal();
  const fs::path named = target.filename().empty() ? target.parent_path() : target;
  remove_stale_temps(named);
  for (int attempt = 0;; ++attempt) {
    std::string name = ".";
    name += named.filename().string();
    name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(temp_counter++);
    const fs::path temp = named.parent_path() / name;
    if (::mkdir(temp.c_str(), 0755) == 0) return temp.string();
    if (errno != EEXIST || attempt > 100) unwritable(path, std::strerror(errno));
  }
}

std::size_t remove_temp_files(const std::string& folder) {
  std::size_t removed = 0;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (is_temp_name(name) && ::unlinkat(::dirfd(dir), name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

} // namespace ipusim
