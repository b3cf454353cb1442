#include "sim/base/forked.hpp"

#include "sim/base/heap.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <thread>


namespace ipusim {

void ByteWriter::flush() {
  const char* p = buffer_.data();
  std::size_t size = buffer_.size();
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);  // the parent has gone: nobody to report to
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

bool ByteReader::fill() {
  while (true) {
    const ssize_t n = ::read(fd_, buffer_, sizeof buffer_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    begin_ = 0;
    end_ = static_cast<std::size_t>(n);
    return true;
  }
}

void ByteReader::read(void* out, std::size_t size) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    if (begin_ == end_ && !fill()) throw ChildProcessError("the child process ended before sending its results");
    const std::size_t n = std::min(size, end_ - begin_);
    std::memcpy(p, buffer_ + begin_, n);
    begin_ += n;
    p += n;
    size -= n;
  }
}

std::string ByteReader::text() {
  const auto size = value<std::uint64_t>();
  std::string s(size, '\0');
  read(s.data(), size);
  return s;
}

char ByteReader::tag() {
  const char t = value<char>();
  if (t == 'X') throw ChildProcessError(text());
  return t;
}

void run_forked(const std::function<void(ByteWriter&)>& child, const std::function<void(ByteReader&)>& parent,
                const std::string& what, ChildHeap heap) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw ChildProcessError(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::cout.flush();  // what is buffered here must not come out of the child too
  std::fflush(nullptr);
  const pid_t waiter = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw ChildProcessError(std::string("cannot fork " + what + ": ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Dies with the process that waits for it: a killed run or sweep leaves no simulation behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != waiter) _exit(3);  // the parent died before prctl took effect
    ::close(fds[0]);
    keep_freed_memory();  // the child is ipusim's own even when the parent is Python
    ByteWriter out(fds[1]);
    auto work = [&] {
      try {
        child(out);
      } catch (const std::exception& e) {
        out.discard();
        out.record('X');
        out.text(e.what());
      }
    };
    if (heap == ChildHeap::Fresh) std::thread(work).join();  // its own malloc arena (forked.hpp)
    else work();
    out.flush();
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  std::string failure;
  auto reap = [&] {
    ::close(fds[0]);  // a child still writing gets EPIPE and ends
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };
  int status = 0;
  try {
    ByteReader in(fds[0]);
    parent(in);
  } catch (const ChildProcessError& e) {
    failure = e.what();
  } catch (...) {
    reap();
    throw;
  }
  status = reap();
  if (WIFSIGNALED(status))
    throw ChildProcessError(what + " died with signal " + std::to_string(WTERMSIG(status)) +
                      (failure.empty() ? "" : ": " + failure));
  if (!failure.empty()) throw ChildProcessError(failure);
}

} // namespace ipusim
