// ipusim sweep SWEEP_FILE: run a scenario over a grid of overrides, one process per
// point, resumable and shardable (docs/sweeps.md).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/cli/sweep_exact.hpp"
#include "sim/engine/engine.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"

namespace ipusim::cli {

namespace {

struct SweepFlags {
  sweep::Options options;
  std::string shard;
  std::vector<std::string> sets;
  bool list_points = false;
};

// The sweep's flags, bound to `f`.
void add_sweep_flags(CLI::App* cmd, const std::shared_ptr<SweepFlags>& f) {
  cmd->add_option("sweep_file", f->options.sweep_file, "Sweep file (sweeps/*.json)")->required();
  auto* output = cmd->add_option("-o,--output", f->options.dir,
                                 "Output folder (default: ipusim-sweeps/<sweep name> in the working directory); "
                                 "rerunning resumes it");
  cmd->add_option("--set", f->sets,
                  "Fix a field for every point, as run --set does: path=value (execution.microBatchSize=32); "
                  "repeatable; added to the sweep's \"set\" (replacing the same path) and stored in DIR/sweep.json")
      ->allow_extra_args(false);
  cmd->add_option("--mode", f->options.modes,
                  "Run these modes at every point (replaces the sweep's \"modes\"; stored in DIR/sweep.json)")
      ->check(CLI::IsMember(mode_choices()));
  auto* jobs = cmd->add_option("-j,--jobs", f->options.jobs, "Points run at once (default: the number of cores)")
                   ->check(CLI::Range(1u, 4096u));
  auto* shard = cmd->add_option("--shard", f->shard,
                                "Run only the points whose index % N == K: K/N; auto (a SLURM or Grid Engine job array, else an MPI launcher's ranks); "
                                "auto/N (N shards, K the array task id (SLURM, PBS; Grid Engine: id - 1) or rank: survives resubmitting one task)");
  auto* point = cmd->add_option("--point", f->options.only_points,
                                "Run only this point (its index or its 16-digit id, as --list-points prints them); "
                                "repeatable; for schedulers that run points one by one")
                    ->excludes(shard)
                    ->allow_extra_args(false);
  auto* list = cmd->add_flag("--list-points", f->list_points,
                             "Print the points (of this --shard or --point) one a line, index, id and overrides "
                             "separated by tabs, and run nothing (so it takes none of the flags that say how to run)");
  list->excludes(output)->excludes(jobs);
  cmd->add_flag("--merge", f->options.merge,
                "Simulate nothing: rebuild results.jsonl and results.csv from the points/ files of every shard")
      ->excludes(shard)
      ->excludes(point)
      ->excludes(list);
  cmd->add_flag("--force", f->options.force,
                "Use an output folder that holds another sweep's results (adds to it, deletes nothing)")
      ->excludes(list);
  cmd->add_flag("--retry-failed", f->options.retry_failed, "Run again the points recorded as failed")
      ->excludes(list);
  cmd->add_flag("--fast", f->options.fast,
                "Answer the points the planner's exact evaluators can (no two transfers sharing a link or a memory) "
                "without a simulation; the others run on the engine; each record names its evaluator")
      ->excludes(list);
  cmd->add_flag("--fail-on-oom", f->options.fail_on_oom,
                "Exit with code 5 when every point ran but some do not fit in memory (status oom)")
      ->excludes(list);
}

// The sweep the flags ask for: its points listed, or run in forked processes (or answered by
// the planner's exact evaluators with --fast).
int run_sweep_command(const SweepFlags& flags) {
  sweep::Options o = flags.options;
  if (o.dir == "-")
    throw InputError("command line", "--output", "cli.bad-value",
                     "a sweep writes a folder; - (standard output) is for the files run writes");
  if (!flags.shard.empty()) o.shard = sweep::parse_shard(flags.shard);
  o.set = parse_overrides(flags.sets);
  if (flags.list_points) {
    sweep::list_points(o, std::cout);
    return 0;
  }
  o.progress = ::isatty(STDERR_FILENO) == 1;
  prepare_engine_for_forks();
  o.run_point = [](const std::vector<std::string>& args) {
    std::vector<std::string> strings{"ipusim"};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    simulate_in_process = true;
    return run_cli(static_cast<int>(strings.size()), argv.data());
  };
  o.can_run_another_point = [] { return engine_can_simulate_again(); };
  const auto evaluator = std::make_shared<ExactPointEvaluator>();
  o.exact_point = [evaluator](const std::string& scenario, const std::string& modes,
                              const std::vector<Override>& overrides) { return (*evaluator)(scenario, modes, overrides); };
  o.estimate_point = [evaluator](const std::string& scenario, const std::string& modes,
                                 const std::vector<Override>& overrides) {
    return evaluator->estimated_seconds(scenario, modes, overrides);
  };
  return sweep::run_sweep(o, std::cerr);
}

} // namespace

Command add_sweep_command(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Run a scenario over a grid of overrides (a sweep file), one process per point (forked, no start-up), "
      "resumable.\n"
      "Exit codes: 0 every point ran and succeeded, 4 some points failed (recorded with their error), 5 with "
      "--fail-on-oom: some points do not fit in memory, "
      "6 some points have no result yet (interrupted, or other shards still to run), 2 bad sweep file, flag or "
      "output folder.");
  add_sweep_flags(cmd, f);
  return [f] { return run_sweep_command(*f); };
}

} // namespace ipusim::cli
