#pragma once
// `ipusim sweep`: runs the points of a sweep in processes of their own, several at once,
// into an output folder it can resume. Each process is forked from the sweep's, which has
// loaded everything already, and runs its points one after another without exec'ing a new
// program (no start-up per point); a process per point where SimGrid cannot simulate twice
// in one (Options::can_run_another_point):
//   DIR/sweep.json          a byte copy of the sweep file as run
//   DIR/points/<id>.json    one record per finished point, written atomically, made
//                           durable in batches (kBatchPoints or kBatchMilliseconds)
//   DIR/results.jsonl, .csv every finished point in index order, rewritten atomically
// See docs/sweeps.md.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/overrides.hpp"
#include "sim/sweep/child_process.hpp"
#include "sim/sweep/sweep_spec.hpp"

namespace ipusim::sweep {

// Exit codes beyond the CLI's 0 (all points ok), 2 (bad input) and 3 (internal fault).
constexpr int kExitPointsFailed = 4;  // every point has a record, and some records are errors
constexpr int kExitOutOfMemory = 5;  // with fail_on_oom: every point ran, and some do not fit in memory
constexpr int kExitIncomplete = 6;    // some points have no record (interrupted; or, for a merge, not run yet)
// (5 is `run --fail-on-oom`'s "out of memory"; a point exiting 5 is a failed point, exit 4.)

// Finished points are renamed into points/ together once this many wait, or the oldest has
// waited this long, and when the sweep ends (docs/sweeps.md, "Durability").
constexpr std::size_t kBatchPoints = 64;
constexpr int kBatchMilliseconds = 50;

struct Shard {
  std::size_t index = 0, count = 1;  // runs the points whose index % count == index
};

// "K/N" with 0 <= K < N; "auto": K and N from a job array (SLURM: SLURM_ARRAY_TASK_ID less
// SLURM_ARRAY_TASK_MIN, divided by SLURM_ARRAY_TASK_STEP, of SLURM_ARRAY_TASK_COUNT; Grid Engine:
// SGE_TASK_ID/FIRST/LAST/STEPSIZE), else from an MPI launcher's rank and size (Open MPI, PMI,
// srun); "auto/N": N given, K the array task's id less the first id an array can have (SLURM,
// PBS 0; Grid Engine 1) or the rank (a task submitted again alone keeps its shard). A lone
// array task whose id is not the first is refused under "auto". Throws InputError (origin "--shard").
Shard parse_shard(const std::string& text);

// The default output folder is kDefaultParent/<sweep name> in the working directory: a
// name no source folder has (sweeps/ holds the sweep files), listed in .gitignore.
constexpr const char* kDefaultParent = "ipusim-sweeps";

struct Options {
  std::string sweep_file;
  std::string dir;          // "" = ipusim-sweeps/<sweep name>, relative to the working directory
  std::vector<Override> set;  // --set: fixed overrides merged into the sweep's "set"
  std::string modes;          // --mode: replaces the sweep's "modes" ("" = the file's)
  unsigned jobs = 0;        // points run at once; 0 = std::thread::hardware_concurrency()
  std::optional<Shard> shard;
  // --point: run only these points (each an index or a 16-hex-digit id), whatever the shard.
  std::vector<std::string> only_points;
  bool merge = false;       // no simulation: rebuild results.jsonl/.csv from points/
  bool force = false;       // use a DIR that holds another sweep's results (deletes nothing)
  bool retry_failed = false;
  bool fail_on_oom = false;  // exit kExitOutOfMemory when a point does not fit (status "oom")
  bool progress = false;    // draw a progress bar on `log` (a terminal)
  // Runs `ipusim ARGS` (the point's `run` command) in the forked child, returning its exit
  // code; what it prints is the point's output.
  InProcess run_point;
  // Whether the forked child that ran a point may run another (its simulations leave nothing
  // behind that the next would see). Unset: a process per point.
  std::function<bool()> can_run_another_point;
  // --fast: points the exact evaluators answer are answered in the sweep's process by
  // `exact_point` (the point's report, or nullopt: the engine runs it).
  bool fast = false;
  std::function<std::optional<Json>(const std::string& scenario, const std::string& modes,
                                    const std::vector<Override>& overrides)>
      exact_point;
  // The point's estimated simulation time (estimate_run's), to run the longest points first
  // when more points wait than -j runs at once; 0 when unknown. Unset: index order.
  std::function<double(const std::string& scenario, const std::string& modes, const std::vector<Override>& overrides)>
      estimate_point;
};

// Returns the exit code; throws InputError for a bad sweep file, flag or folder.
int run_sweep(const Options& options, std::ostream& log);

// The indexes of the points this process runs, ascending: the --point ones (unknown ones are an
// InputError, rule sweep.bad-point), else the shard's.
std::vector<std::size_t> selected_points(const Options& options, const std::vector<Point>& points);
// --list-points: one line per selected point, "index<TAB>id<TAB>path=value path=value ...",
// the values as JSON; reads the sweep file only (no folder, no scenario).
void list_points(const Options& options, std::ostream& out);

} // namespace ipusim::sweep
