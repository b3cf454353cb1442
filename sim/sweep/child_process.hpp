#pragma once
// Child processes whose output is captured: run_child (fork + exec, waits for it), and
// ChildProcess for a sweep that keeps several running from one thread. Every pipe is
// close-on-exec, and a child forked without exec closes every descriptor but its own,
// so a child never holds another child's pipe open.
#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ipusim::sweep {

struct ChildResult {
  int exit_code = -1;  // the child's exit status, or 128 + signal when a signal ended it
  int signal = 0;      // the signal that ended it, 0 when it exited
  std::string out, err;
  double seconds = 0;  // wall time from fork to reaping
};

// Runs in a forked child instead of exec'ing a program: the child starts with this
// process's libraries loaded and everything parsed so far, and exits with the returned code.
using InProcess = std::function<int(const std::vector<std::string>& args)>;

class ChildProcess {
public:
  // Starts `program` (exec'd as is, no PATH search, argv = {argv0, args...}) or, when
  // `in_process` is set, forks and calls it with `args` (only from a single-threaded
  // process). Standard input is /dev/null. The child is killed (SIGKILL) if the process
  // that started it dies first (PR_SET_PDEATHSIG). Throws std::runtime_error when the
  // child cannot be started.
  ChildProcess(const std::string& program, const std::string& argv0, const std::vector<std::string>& args,
               const InProcess& in_process = nullptr);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  // Adds its open output pipes to `fds` for poll(); after poll, read_ready takes what they hold.
  void poll_fds(std::vector<pollfd>& fds) const;
  void read_ready(const std::vector<pollfd>& fds);
  bool output_closed() const { return fds_[0] < 0 && fds_[1] < 0; }
  const std::string& output() const { return result_.out; }  // its standard output so far
  // Reaps the child once its output is closed (waits for it to exit).
  ChildResult finish();

private:
  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};  // its stdout and stderr
  ChildResult result_;
  std::chrono::steady_clock::time_point start_;
};

// Starts the program and waits for it, capturing what it prints. Safe to call from
// several threads at once.
ChildResult run_child(const std::string& program, const std::string& argv0, const std::vector<std::string>& args);

} // namespace ipusim::sweep
