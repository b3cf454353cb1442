// ipusim plan SCENARIO: the flags bound onto the plan's options, and its answer printed
// (the plan itself: sim/service/plan_scenario.hpp, docs/planner.md).
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/service/plan_scenario.hpp"
#include "sim/search/evaluator.hpp"

namespace ipusim::cli {

namespace {

static_assert(service::kPlanFits == kExitOk && service::kPlanNoFit == kExitOutOfMemory,
              "a plan's status is the command's exit code");

// The schedules the planner can time (those with an evaluator in the registry): "a, b, c".
std::string evaluated_schedule_list() {
  std::string out;
  for (const std::string& name : evaluated_schedules()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The dimensions searched, and what the search keeps fixed.
void add_search_flags(CLI::App& cmd, service::PlanOptions& o) {
  using namespace service;
  cmd.add_option("scenario", o.scenario,
                 "Scenario file (scenarios/*.json): model, system and fixed settings; with --config, a model file")
      ->required();
  cmd.add_option("--config", o.config,
                 "Plan the model INPUT on this IPU system (configs/*.json) without a scenario file: every execution "
                 "setting at its default, fixed with --set execution.x=... (training: --set execution.training=true)");
  cmd.add_option("--ipus", o.ipus, "IPUs per pipeline to try (default: every divisor of the system's IPUs from 2)")
      ->delimiter(',')
      ->check(CLI::Range(kPipelineIpusRange.min, kPipelineIpusRange.max));
  cmd.add_option("--replicas", o.replicas, "Replicas to try (default: the system's IPUs / IPUs per pipeline)")
      ->delimiter(',')
      ->check(CLI::Range(kReplicasRange.min, kReplicasRange.max));
  cmd.add_option("--global-batch", o.global_batch,
                 "Samples per weight update (micro-batch x G x replicas): B fixed, or MIN-MAX free within bounds "
                 "(default: the scenario's, fixed)");
  cmd.add_option("--micro-batch", o.micro_batches, "Micro-batch sizes to try (default 1,2,4,...,64)")
      ->delimiter(',')
      ->check(CLI::Range(kMicroBatchRange.min, kMicroBatchRange.max));
  cmd.add_option("--gradient-accumulation", o.gradient_accumulation,
                 "Values of G to try (training; the global batch is then free)")
      ->delimiter(',')
      ->check(CLI::Range(kMicroBatchRange.min, kMicroBatchRange.max));
  cmd.add_option("--schedule", o.schedules, "Schedules to try: " + evaluated_schedule_list() + " (default all)")
      ->delimiter(',');
  cmd.add_option("--recomputation", o.recomputation, "none, pipeline (default both in training)")->delimiter(',');
  cmd.add_option("--state", o.state, "Optimizer state: on-chip, streaming-memory (default both when it applies)")
      ->delimiter(',');
  cmd.add_option("--rts", o.rts, "Replicated tensor sharding: off, on (default both when it applies)")->delimiter(',');
  cmd.add_option("--weight-update", o.weight_update,
                 "Serial, OverlapCycleOptimized, OverlapMemoryOptimized (default all in training)")
      ->delimiter(',');
  cmd.add_option("--heads-on", o.heads_on, "Heads on IPU 0 (a final stage) or the last IPU: 0, last (default both)")
      ->delimiter(',');
  cmd.add_option("--amp", o.amps,
                 "availableMemoryProportion values each IPU may take (default 0.05-0.6 and the scenario's)")
      ->delimiter(',');
  cmd.add_option("--layer-free-ipus", o.layer_free,
                 "Let IPU 0 hold only the stem (embeddings) and the last IPU only the heads (default yes)")
      ->check(CLI::IsMember(kYesNo));
  cmd.add_option("--tensor-parallel", o.tensor_parallel,
                 "Tensor-parallel group sizes to try (default 1, 2, 4, ... up to 16 and half the system, each the "
                 "model's heads, widths and vocabulary divide)")
      ->delimiter(',')
      ->check(CLI::Range(kTensorParallelRange.min, kTensorParallelRange.max));
  cmd.add_option("--att-ffn", o.att_ffn,
                 "Let a block end between a layer's attention and feed-forward halves, as Graphcore's MLPerf BERT "
                 "att_ffn_placement (default yes where every layer has such a cut)")
      ->check(CLI::IsMember(kYesNo));
}

// How the search ranks and stops, and what the plan prints and writes.
void add_answer_flags(CLI::App& cmd, service::PlanOptions& o) {
  using namespace service;
  cmd.add_option("--objective", o.objective, "Rank by throughput (default) or micro-batch latency")
      ->check(CLI::IsMember(kObjectives));
  cmd.add_option("--top", o.top, "How many of the best to confirm with the engine and print (default 3)")
      ->check(CLI::Range(kTopRange.min, kTopRange.max));
  cmd.add_option("--front-within", o.front_within,
                 "The memory-headroom front spans candidates within this many percent of the best (default 5)")
      ->check(CLI::Range(kFrontWithinRange.min, kFrontWithinRange.max));
  cmd.add_option("--time-limit", o.time_limit, "Stop searching after this many seconds (default: none; the "
                                                "output then says what was left unexamined)")
      ->check(CLI::Range(kTimeLimitRange.min, kTimeLimitRange.max));
  cmd.add_option("--set", o.sets,
                 "Override a scenario field before planning: path=value; a searched dimension it names keeps that "
                 "value (execution.replicas=2 fixes the replicas); repeatable")
      ->allow_extra_args(false);
  cmd.add_flag("--explain-layers", o.explain_layers, "Print the layers the planner finds in the model, and stop");
  cmd.add_flag("--json", o.json,
               "Print one JSON document: the search's figures, the confirmed candidates best first (each with the "
               "execution section that runs it, the evaluator's and the engine's figures), the what-if best, and "
               "the text report (docs/planner.md)");
  cmd.add_flag("--quiet", o.quiet, "No progress on standard error");
  cmd.add_option("--write", o.write,
                 "Write the best as PREFIX.model.json (annotated model) and PREFIX.scenario.json (for ipusim run)");
  cmd.add_flag("--force", o.force, "Overwrite the --write files if they exist");
}

// The report goes to standard output as the plan makes it; --json's document alone after it.
int print_plan(const service::PlanOptions& o) {
  const service::PlanResult result = service::plan_scenario(o, std::cout);
  if (!result.document.is_null()) std::cout << result.document.dump(2) << "\n";
  std::cout << std::flush;
  if (!result.no_fit.empty()) std::cerr << "ipusim: " << result.no_fit << "\n";
  return result.status;
}

} // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<service::PlanOptions>();
  auto* cmd = app.add_subcommand("plan", "Search pipeline width x replicas, the split of the layers, micro-batch, G, "
                                         "schedule, recomputation and memory settings; confirm the best with the engine");
  add_search_flags(*cmd, *o);
  add_answer_flags(*cmd, *o);
  return [o] { return print_plan(*o); };
}

} // namespace ipusim::cli
