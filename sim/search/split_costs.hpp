#pragma once
// The planner's tables for one scenario: every op costed once per IPU, and every contiguous
// block of layers (a pipeline stage's worth) summed once, when first asked for; a split's
// plan figures (stage times, host streams, copies, weights and their update) and its memory
// estimate are then composed from the blocks in microseconds instead of rebuilding graph,
// plan and memory (~45 ms per split of BERT-Large). The composed plan carries the figures
// only, no op or tensor lists. Stage times, copies and weight figures equal make_plan's
// (sums in the same op order); memory equals estimate_memory's to rounding (its categories
// are summed block by block); tests/test_planner.cpp checks both.
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/cost/cost_model.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/search/layers.hpp"

namespace ipusim {

struct ComposedPlan {
  Plan plan;                                  // figures only: stages, copies, IPUs without op or tensor lists
  std::vector<std::pair<int, int>> blocks;    // per forward stage: its units, first and last
};

class SplitCosts {
public:
  // `scenario` with the G and micro-batch the candidates use (recomputation is the memory's
  // argument); `ipus` the pipeline's width.
  SplitCosts(const Scenario& scenario, const LayerStructure& layers, int ipus);

  // False when a layer reads a later layer's output: blocks would not be pipeline stages,
  // and the planner builds every candidate's plan instead.
  bool usable() const { return usable_; }
  // PopART refuses the split (make_plan would throw): a weight or a host input on two IPUs,
  // or more IPUs than the system has.
  bool refused(const std::vector<int>& layers_per_ipu, bool heads_on_last) const;
  ComposedPlan compose(const std::vector<int>& layers_per_ipu, bool heads_on_last) const;
  // estimate_memory of the composed plan with PopART's stash depths; per IPU only totals.
  MemoryReport memory(const ComposedPlan& composed, bool recompute) const;

private:
  // What a stage holding units first..last needs, apart from costs (IPU-independent).
  struct Block {
    double host_input_bytes = 0, host_output_bytes = 0;
    double host_buffer_bytes = 0, host_buffer_tile = 0;
    double live_bytes = 0, weights_read_bytes = 0;
    double stash_bytes = 0, stash_tile = 0;
    std::vector<std::pair<int, double>> code;  // first op of each code signature: (signature, tiles)
    std::vector<int> stash_read;               // tensors the backward reads (for the recomputation stash)
    std::vector<int> entering;
  };
  struct BlockCost {
    double forward_seconds = 0, backward_seconds = 0, temp_bytes_per_tile = 0;
  };
  struct UnitWeights {
    double elements = 0, bytes = 0, count = 0;
    double tile = 0, state_bytes = 0, state_tile = 0;  // weights and on-chip optimizer state, memory
    int first = -1;                                    // smallest tensor id: its dtype is the update's
    std::vector<std::pair<int, double>> shapes;        // (shape id, elements)
  };
  struct TensorInfo {
    double bytes = 0, tile = 0;  // per micro-batch (whole for weights), and on the fullest tile
    TensorKind kind = TensorKind::Activation;
    DType dtype = DType::Float32;
    int producer = -1;
    std::vector<int> consumers;  // op indices, in op order
  };

  int unit_of(std::size_t op) const { return unit_of_op_[op]; }
  const Block& block(int first, int last) const;
  const BlockCost& block_cost(int first, int last, int ipu) const;
  std::pair<double, double> recompute_stash(int first, int last, int other_first, int other_last) const;
  std::vector<int> stage_units(const std::vector<int>& layers_per_ipu, bool heads_on_last) const;

  const Scenario& scenario_;
  int ipus_ = 0, units_ = 0;  // units: 0 the stem, 1..L the layers, L+1 the heads
  bool usable_ = true;
  std::vector<int> unit_of_op_;
  std::vector<std::size_t> topological_order_;
  std::vector<TensorInfo> tensors_;  // by id: tensors in name order
  std::vector<std::vector<int>> op_inputs_, op_outputs_;
  std::vector<BackwardReads> op_reads_;
  std::vector<int> op_signature_;
  std::vector<double> op_tiles_;
  std::vector<std::vector<OpCost>> forward_cost_, backward_cost_;  // [ipu][op]
  std::vector<std::unique_ptr<CostModel>> cost_models_;            // per IPU
  std::vector<int> anchors_;
  std::vector<UnitWeights> unit_weights_;      // by the unit of a weight's first user: the IPU it lives on
  std::vector<UnitWeights> completing_;        // by the unit of a weight's earliest user: the stage completing it
  std::vector<std::vector<int>> shared_by_units_;  // units of each weight or host input used by several
  std::vector<int> crossing_;                  // non-weight tensors read outside their producer's unit, name order
  mutable std::map<std::pair<int, int>, Block> blocks_;
  mutable std::map<std::tuple<int, int, int>, BlockCost> block_costs_;
  mutable std::map<std::tuple<int, int, int, int>, std::pair<double, double>> recompute_stashes_;
};

} // namespace ipusim
