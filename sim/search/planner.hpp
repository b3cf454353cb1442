#pragma once
// `ipusim plan`'s search: every split of the model's layers into contiguous blocks over N IPUs
// (each IPU at least one layer), heads on the last IPU or back on IPU 0 (when the model has
// heads), recomputation off and on (training), and each G asked for; each candidate's plan is
// built as `run` builds it, its memory estimated with the same model (sim/memory), and its
// PopART step time computed by the evaluator. Exhaustive, so exact for the evaluator's figures;
// the caller confirms the best with the engine.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/search/evaluator.hpp"
#include "sim/search/layers.hpp"

namespace ipusim {

enum class Objective { Throughput, Latency };

struct PlanSearchOptions {
  int ipus = 0;                                      // 0: as many as the scenario's model uses
  Objective objective = Objective::Throughput;
  std::vector<std::int64_t> gradient_accumulation;  // empty: the scenario's G
  int jobs = 1;                                      // threads
};

struct Candidate {
  std::vector<int> layers_per_ipu;
  bool heads_on_last = true;
  bool recompute = false;
  std::int64_t gradient_accumulation = 1;
  StepEstimate estimate;
  double throughput = 0;        // samples/s, from the evaluator
  double headroom_bytes = 0;    // least free SRAM on any IPU's fullest tile
  int tightest_ipu = 0;
  bool fits = false;
  std::string placement() const;  // "[3,7,7,7] heads on IPU0, recomputation, G=2048"
};

struct PlanSearch {
  LayerStructure layers;
  std::vector<Candidate> ranked;  // those that fit, best first (ties: fewer layers earlier, lexicographic)
  std::size_t evaluated = 0, out_of_memory = 0, too_shallow = 0;
  std::size_t refused = 0;      // placements PopART's rules refuse (counted per split and head placement)
  std::string first_refusal;    // the first such refusal's message
};

PlanSearch search_plans(const Scenario& scenario, const PlanSearchOptions& options);

// The scenario a candidate describes: the model re-annotated, recomputation and G set.
Scenario candidate_scenario(const Scenario& scenario, const LayerStructure& layers, const Candidate& candidate);

// Every way to put `layers` layers on `ipus` IPUs in contiguous blocks of at least one, in
// lexicographic order.
std::vector<std::vector<int>> contiguous_splits(int layers, int ipus);

} // namespace ipusim
