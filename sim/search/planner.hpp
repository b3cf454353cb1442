#pragma once
// `ipusim plan`'s search over a PlanSpace (space.hpp): for every point of the outer
// dimensions (IPUs per pipeline x replicas, micro-batch, depth, schedule, recomputation,
// optimizer state on or off chip, RTS, heads on IPU 0 or last), every split of the layers into
// contiguous blocks over the pipeline's IPUs with an availableMemoryProportion per IPU, and
// every weight-update schedule; each complete candidate composed from the split tables
// (split_costs.hpp, equal to the plan `run` builds) and timed by its schedule's evaluator.
// Branch and bound, exact: IPUs are filled in order, and a partial split is dropped only when
// an IPU it has filled does not fit (its memory is known exactly once its blocks are), when a
// lower bound on the step time of every completion (each IPU runs each of the depth's
// micro-batches through its stages, so step >= depth x the busiest IPU's work) cannot beat
// what the answer needs (the top K, the front within `front_within` of the best, the best of
// each smaller global batch), or when another availableMemoryProportion is at least as fast on
// that IPU. With a time limit the search may stop early and says so.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/layers.hpp"
#include "sim/search/space.hpp"
#include "sim/search/split_costs.hpp"

namespace ipusim {

enum class Objective { Throughput, Latency };

// One point of the outer dimensions.
struct PlanSettings {
  int ipus = 2, replicas = 1;  // with tensor parallelism: groups per pipeline (each of tensor_parallel IPUs)
  std::int64_t micro_batch = 1, depth = 1;  // depth: G in training, batchesPerStep in inference
  std::string schedule = Execution{}.schedule;  // the scenario's default
  bool recompute = false, state_off_chip = false, rts = false, heads_on_last = true;
  WeightUpdateSchedule weight_update = WeightUpdateSchedule::Serial;
  int tensor_parallel = 1;  // IPUs per group (the scenario's, resharded for it)
};

// "8 IPUs x 2 replicas, popart, micro-batch 1, G 1024, recomputation, ..."
std::string describe_settings(const PlanSettings& settings, bool training);

struct Candidate {
  PlanSettings settings;
  Split split;              // layers per IPU, heads placement, availableMemoryProportion index per IPU
  std::vector<double> amp;  // availableMemoryProportion per IPU
  StepEstimate estimate;
  double throughput = 0;    // samples/s, from the evaluator
  double score = 0;         // the objective: throughput, or 1 / latency; larger is better
  std::int64_t global_batch = 0;
  std::vector<double> headroom;  // per IPU: free SRAM on its fullest tile
  double least_headroom = 0;
  int tightest_ipu = 0;
  // "[0,4,4,4,3,3,3,3] heads on IPU0"
  std::string placement() const;
  // "8 IPUs x 2 replicas, [0,4,...] heads on IPU0, popart, micro-batch 1, G 1024, recomputation, ..."
  std::string describe(bool training) const;
};

struct SearchCounts {
  std::size_t settings = 0;         // points of the outer dimensions
  std::size_t settings_ruled_out = 0;  // the schedule's rules refuse them (depth, stages per IPU)
  std::size_t settings_pruned = 0;  // their bound could not beat what was found
  std::size_t settings_infeasible = 0;  // no split fits in memory
  std::size_t partial_splits = 0;   // IPU blocks examined
  std::size_t out_of_memory = 0;    // IPU blocks that do not fit (their splits dropped)
  std::size_t refused = 0;          // a weight or host input used on two IPUs
  std::size_t bounded = 0;          // partial splits dropped by the step-time bound
  std::size_t evaluated = 0;        // complete candidates timed (each weight-update schedule counts)
};

struct SearchProgress {
  double elapsed_s = 0;
  std::size_t settings_done = 0, settings_total = 0, evaluated = 0;
  const Candidate* best = nullptr;
  double eta_s = 0;
  std::string current;  // the settings being searched
};

struct PlanSearchOptions {
  Objective objective = Objective::Throughput;
  int top = 3;
  double front_within = 0.05;  // the headroom front spans candidates within this share of the best
  double time_limit_s = 0;    // 0: none
  // A part of the space is pruned when it cannot beat what it must by more than this share
  // (and 1 KiB per tile of headroom): the answer is exact to within it.
  double tolerance = 1e-4;
  bool prune = true;          // false: no bound pruning (the reference the tests compare against)
  std::function<void(const SearchProgress&)> progress;  // called about once a second
  // Candidates known before the search starts (a whole-layer search's answer when the search is
  // over half layers): they enter the answer first, so that the finer search prunes from there.
  std::vector<Candidate> seeds;
};

struct PlanSearch {
  LayerStructure layers;
  PlanSpace space;
  std::vector<Candidate> ranked;       // the top K, best first
  std::vector<Candidate> front;        // throughput (or latency) against least headroom, best first
  std::vector<Candidate> batch_front;  // the best at each global batch that beats every smaller one
  SearchCounts counts;
  bool complete = true;                // false: stopped by the time limit
  bool polished = true;                // false: the time limit stopped lowering availableMemoryProportion
  double unexplored_bound = 0;         // then: the best score the unexamined part could reach
  double seconds = 0;
  double whole_layer_seconds = 0;      // over half layers: the whole-layer search run first (in `seconds`)
  bool halves_skipped = false;         // the time limit ended the search before the half layers
  std::vector<std::int64_t> group_sizes_skipped;  // tensor-parallel sizes the time limit left unsearched
};

// The units `space` splits: the model's layers, or their halves (halve_layers) when the space
// allows blocks to end mid-layer and every layer has an attention / feed-forward cut.
LayerStructure plan_units(const Model& model, const PlanSpace& space);

PlanSearch search_plans(const Scenario& scenario, const PlanSpace& space, const PlanSearchOptions& options);

// The heap the search of `space` may take, known before it starts: a table per micro-batch
// (and whether G > 1) with every block filled, every point's resident part, one point's
// option and suffix tables (points are refined one at a time), the candidates kept. An upper
// bound from the sizes of the search's containers (tests/test_planner.cpp holds it against
// the tables filled in full); the engine runs that confirm the best are bounded as `run`'s.
struct PlanSearchEstimate {
  double bytes = 0;
  double table_bytes = 0;  // of one cost table
  std::size_t tables = 0, points = 0;
};
PlanSearchEstimate estimate_plan_search(const Scenario& scenario, const PlanSpace& space, const LayerStructure& layers,
                                        int top);

// The scenario a candidate describes, ready for `ipusim run`: the model re-annotated and
// every setting applied.
Scenario candidate_scenario(const Scenario& scenario, const LayerStructure& layers, const Candidate& candidate);
// The execution a point of the outer dimensions runs with (the scenario's otherwise).
Execution settings_execution(const Execution& base, const PlanSettings& settings, const std::vector<double>& amp);

// Every split of `layers` layers over `ipus` IPUs into contiguous blocks, lexicographic; the
// first and the last IPU may hold none when allowed.
std::vector<std::vector<int>> contiguous_splits(int layers, int ipus, bool first_may_be_empty = false,
                                                bool last_may_be_empty = false);

// The schedule accepts the point: its depth rule, and one forward stage per IPU where it needs it.
bool schedule_accepts(const std::string& schedule, int forward_stages, bool ipu_holds_two_stages, std::int64_t depth,
                      bool training);

} // namespace ipusim
