#pragma once
// Runs a program in a child process (fork + exec) and captures what it prints. Safe to
// call from several threads at once: every pipe is close-on-exec, so a child never
// holds another child's pipe open.
#include <string>
#include <vector>

namespace ipusim::sweep {

struct ChildResult {
  int exit_code = -1;  // the child's exit status, or 128 + signal when a signal ended it
  int signal = 0;      // the signal that ended it, 0 when it exited
  std::string out, err;
  double seconds = 0;  // wall time from fork to reaping
};

// `program` is exec'd as is (no PATH search) with argv = {argv0, args...}; standard
// input is /dev/null. The child is killed (SIGKILL) if the calling thread's process
// dies first (PR_SET_PDEATHSIG), so a killed sweep leaves no stray runs behind.
// Throws std::runtime_error when the child cannot be started.
ChildResult run_child(const std::string& program, const std::string& argv0, const std::vector<std::string>& args);

} // namespace ipusim::sweep
