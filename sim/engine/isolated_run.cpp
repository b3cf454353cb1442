// SimGrid keeps global state (one engine, one clock per process), so each simulation
// runs in a forked child that streams its RunLog back through a pipe.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sim/engine/engine.hpp"

namespace ipusim {

namespace {

// Results are gathered in memory and sent with one write: a write per field made the
// pipe, not the simulation, the bottleneck.
class Writer {
public:
  template <class T> void value(const T& v) { buffer_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(const std::string& s) {
    value<std::uint64_t>(s.size());
    buffer_.append(s);
  }
  void flush(int fd) {
    const char* p = buffer_.data();
    std::size_t size = buffer_.size();
    while (size > 0) {
      const ssize_t n = ::write(fd, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(3);
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

private:
  std::string buffer_;
};

class Reader {
public:
  // Reads everything the child sends until it closes the pipe.
  explicit Reader(int fd) {
    char chunk[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      data_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  template <class T> T value() {
    T v{};
    if (data_.size() - position_ < sizeof v)
      throw EngineError("the simulation process ended before sending its results");
    std::memcpy(&v, data_.data() + position_, sizeof v);
    position_ += sizeof v;
    return v;
  }
  std::string text() {
    const auto size = value<std::uint64_t>();
    if (data_.size() - position_ < size) throw EngineError("the simulation process sent a truncated result");
    std::string s = data_.substr(position_, size);
    position_ += size;
    return s;
  }

private:
  std::string data_;
  std::size_t position_ = 0;
};

void send_log(Writer& out, const RunLog& log) {
  out.value<char>('L');
  out.value(log.end_time);
  out.value(log.activities);
  out.value<std::uint64_t>(log.events.size());
  for (const Event& e : log.events) out.value(e);
  out.value<std::uint64_t>(log.links.size());
  for (const LinkTraffic& l : log.links) {
    out.text(l.name);
    out.value(l.bytes);
  }
  out.value<std::uint64_t>(log.transfers.size());
  for (const TransferRecord& t : log.transfers) {
    out.value(t.src);
    out.value(t.dst);
    out.value(t.copy);
    out.value(t.start);
    out.value(t.end);
    out.value(t.bytes);
    out.value<std::uint64_t>(t.links.size());
    for (int l : t.links) out.value(l);
  }
}

RunLog receive_log(Reader& in) {
  const char tag = in.value<char>();
  if (tag == 'E') throw EngineError(in.text());
  if (tag != 'L') throw EngineError("the simulation process sent an unreadable result");
  RunLog log;
  log.end_time = in.value<double>();
  log.activities = in.value<std::uint64_t>();
  log.events.resize(in.value<std::uint64_t>());
  for (Event& e : log.events) e = in.value<Event>();
  log.links.resize(in.value<std::uint64_t>());
  for (LinkTraffic& l : log.links) {
    l.name = in.text();
    l.bytes = in.value<double>();
  }
  log.transfers.resize(in.value<std::uint64_t>());
  for (TransferRecord& t : log.transfers) {
    t.src = in.value<int>();
    t.dst = in.value<int>();
    t.copy = in.value<int>();
    t.start = in.value<double>();
    t.end = in.value<double>();
    t.bytes = in.value<double>();
    t.links.resize(in.value<std::uint64_t>());
    for (int& l : t.links) l = in.value<int>();
  }
  return log;
}

} // namespace

RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw EngineError(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw EngineError(std::string("cannot fork the simulation process: ") + std::strerror(errno));
  if (child == 0) {
    // Dies with the process that waits for it: a killed run or sweep leaves no simulation behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(3);  // the parent died before prctl took effect
    ::close(fds[0]);
    Writer out;
    try {
      send_log(out, run_engine_in_process(schedule, hardware));
    } catch (const std::exception& e) {
      out = Writer();
      out.value<char>('E');
      out.text(e.what());
    }
    out.flush(fds[1]);
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  Reader in(fds[0]);
  RunLog log;
  std::string failure;
  try {
    log = receive_log(in);
  } catch (const EngineError& e) {
    failure = e.what();
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw EngineError("the simulation process died with signal " + std::to_string(WTERMSIG(status)) +
                      (failure.empty() ? "" : ": " + failure));
  if (!failure.empty()) throw EngineError(failure);
  return log;
}

} // namespace ipusim
