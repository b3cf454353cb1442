#include "sim/sweep/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace ipusim::sweep {

namespace {

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// Until exec, everything the child does is async-signal-safe.
void redirect(int out_w, int err_w, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  const int null_in = ::open("/dev/null", O_RDONLY);
  if (null_in < 0 || ::dup2(null_in, 0) < 0 || ::dup2(out_w, 1) < 0 || ::dup2(err_w, 2) < 0) ::_exit(127);
}

[[noreturn]] void exec_child(const char* program, char* const* argv) {
  ::execv(program, argv);
  // strerror may take locks another thread held at fork time: print the number.
  char text[] = "ipusim sweep: cannot execute the simulator: errno 000\n";
  const int e = errno;
  text[sizeof text - 5] = static_cast<char>('0' + e / 100 % 10);
  text[sizeof text - 4] = static_cast<char>('0' + e / 10 % 10);
  text[sizeof text - 3] = static_cast<char>('0' + e % 10);
  [[maybe_unused]] const auto written = ::write(2, text, sizeof text - 1);
  ::_exit(127);
}

[[noreturn]] void run_in_process(const InProcess& in_process, const std::vector<std::string>& args) {
  ::close_range(3, ~0U, 0);  // other children's pipes and this process's files are not the child's
  int code = 3;
  try {
    code = in_process(args);
  } catch (const std::exception& e) {
    std::cerr << "ipusim: internal fault: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

} // namespace

ChildProcess::ChildProcess(const std::string& program, const std::string& argv0, const std::vector<std::string>& args,
                           const InProcess& in_process) {
  std::vector<std::string> strings;
  strings.push_back(argv0);
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw system_error("pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw system_error("pipe");
  }
  if (in_process) {  // nothing buffered here may come out of the child too
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
  }
  start_ = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw system_error("fork");
  }
  if (pid_ == 0) {
    redirect(out_pipe[1], err_pipe[1], parent);
    if (in_process) run_in_process(in_process, args);
    exec_child(program.c_str(), argv.data());
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  fds_[0] = out_pipe[0];
  fds_[1] = err_pipe[0];
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), result_(std::move(other.result_)), start_(other.start_) {
  fds_[0] = other.fds_[0];
  fds_[1] = other.fds_[1];
  other.pid_ = -1;
  other.fds_[0] = other.fds_[1] = -1;
}

ChildProcess::~ChildProcess() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
  if (pid_ > 0) {  // never finished: do not leave it running or unreaped
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

void ChildProcess::poll_fds(std::vector<pollfd>& fds) const {
  for (int fd : fds_)
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
}

void ChildProcess::read_ready(const std::vector<pollfd>& fds) {
  char buffer[65536];
  for (int i = 0; i < 2; ++i) {
    if (fds_[i] < 0) continue;
    for (const pollfd& p : fds) {
      if (p.fd != fds_[i] || p.revents == 0) continue;
      const ssize_t n = ::read(fds_[i], buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? result_.out : result_.err).append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds_[i]);
        fds_[i] = -1;
      }
    }
  }
}

ChildResult ChildProcess::finish() {
  for (int& fd : fds_)
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0)
    if (errno != EINTR) throw system_error("waitpid");
  pid_ = -1;
  result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (WIFEXITED(status)) {
    result_.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result_.signal = WTERMSIG(status);
    result_.exit_code = 128 + result_.signal;
  }
  return std::move(result_);
}

ChildResult run_child(const std::string& program, const std::string& argv0, const std::vector<std::string>& args) {
  ChildProcess child(program, argv0, args);
  std::vector<pollfd> fds;
  while (!child.output_closed()) {
    fds.clear();
    child.poll_fds(fds);
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    child.read_ready(fds);
  }
  return child.finish();
}

} // namespace ipusim::sweep
