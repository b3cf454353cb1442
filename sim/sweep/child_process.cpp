#include "sim/sweep/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace ipusim::sweep {

namespace {

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// Everything the child does between fork and exec is async-signal-safe.
[[noreturn]] void child_main(const char* program, char* const* argv, int out_w, int err_w, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  const int null_in = ::open("/dev/null", O_RDONLY);
  if (null_in < 0 || ::dup2(null_in, 0) < 0 || ::dup2(out_w, 1) < 0 || ::dup2(err_w, 2) < 0) ::_exit(127);
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

} // namespace

ChildResult run_child(const std::string& program, const std::string& argv0, const std::vector<std::string>& args) {
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
  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw system_error("fork");
  }
  if (pid == 0) child_main(program.c_str(), argv.data(), out_pipe[1], err_pipe[1], parent);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  ChildResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  for (const auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw system_error("waitpid");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  }
  return result;
}

} // namespace ipusim::sweep
