// ipusim: simulate sharded and pipelined execution of annotated models on IPU systems.
// The commands live in the ipusim_commands library, which the tests link too.
#include "sim/base/heap.hpp"
#include "sim/cli/commands.hpp"

int main(int argc, char** argv) {
  ipusim::keep_freed_memory();
  return ipusim::cli::run_cli(argc, argv);
}
