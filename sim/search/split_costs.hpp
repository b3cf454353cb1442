#pragma once
// The planner's tables for one model at one micro-batch: every op costed once per
// availableMemoryProportion value the search may choose, and every contiguous block of units
// (a pipeline stage's worth: the stem, layers, the heads) summed once, when first asked for.
// From them, what one IPU holding given blocks needs in memory and time is known in
// microseconds, before the rest of the split is chosen (the search prunes on it), and a
// whole split's plan figures (stage times, host streams, copies, weights and their update)
// are composed instead of rebuilding graph, plan and memory (~45 ms per split of
// BERT-Large). The composed plan carries the figures only, no op or tensor lists. Stage
// times, copies and weight figures equal make_plan's (sums in the same op order); memory
// equals estimate_memory's to rounding (its categories summed block by block);
// tests/test_planner.cpp checks both.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost/cost_model.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/search/layers.hpp"

namespace ipusim {

// A split of the layers over a pipeline's IPUs: contiguous blocks, IPU i holding
// layers_per_ipu[i] (IPU 0 may hold only the stem, the last IPU only the heads), the heads
// with the last block or back on IPU 0 in a final stage.
struct Split {
  std::vector<int> layers_per_ipu;
  bool heads_on_last = true;
  std::vector<int> amp;  // per IPU: index into the tables' availableMemoryProportion values
  // 2: layers_per_ipu counts half layers (halve_layers), so a block may start or end between a
  // layer's attention and feed-forward halves (Graphcore's att_ffn_placement).
  int units_per_layer = 1;
};

struct ComposedPlan {
  Plan plan;                                  // figures only: stages, copies, IPUs without op or tensor lists
  std::vector<std::pair<int, int>> blocks;    // per forward stage: its units, first and last
};

// What one IPU holds: its forward stages' blocks of units and how many micro-batches each stashes.
struct IpuBlocks {
  int count = 0;
  std::pair<int, int> block[2];
  int stash_depth[2] = {0, 0};
  bool loss[2] = {false, false};  // the loss stage: no recomputation
};

// The settings that change an IPU's memory.
struct MemorySettings {
  bool recompute = false;
  bool state_on_chip = true;  // optimizer state in SRAM (training)
  double shards = 1;          // replicated tensor sharding: the replicas sharing the state
  int amp = 0;                // index into the availableMemoryProportion values
};

struct IpuFootprint {
  double total_bytes = 0, tile_bytes = 0;  // on the IPU, on its fullest tile
  double seconds = 0;  // per micro-batch: forward, backward and recomputation of its blocks
  double forward_seconds = 0, backward_seconds = 0;
  double stage_seconds[2][2] = {{0, 0}, {0, 0}};  // per block: forward, backward (with recomputation)
};

class SplitCosts {
public:
  // `scenario`'s model, system and execution with `micro_batch`; `accumulating`: G > 1 (the
  // backward then accumulates weight gradients); `amps`: the values the search may choose.
  SplitCosts(const Scenario& scenario, const LayerStructure& layers, std::int64_t micro_batch, bool accumulating,
             std::vector<double> amps);

  // False when a layer reads a later layer's output (blocks would not be pipeline stages) or
  // the cost model is unknown; `why` says which.
  bool usable() const { return usable_; }
  const std::string& why_not_usable() const { return why_; }
  int units() const { return units_; }
  bool has_stem() const { return has_stem_; }
  bool has_heads() const { return has_heads_; }
  const std::vector<double>& amps() const { return amps_; }
  std::int64_t micro_batch() const { return micro_batch_; }
  int units_per_layer() const { return units_per_layer_; }

  // PopART refuses the placement (make_plan would throw): a weight or a host input used by
  // units on two IPUs. `ipu_of_unit[u]`: the IPU of unit u.
  bool refused(const std::vector<int>& ipu_of_unit) const;
  // The units of each weight or host input read by several: PopART needs them on one IPU.
  const std::vector<std::vector<int>>& shared_units() const { return shared_by_units_; }
  // The IPU of each unit under `split` on `ipus` IPUs.
  std::vector<int> ipu_of_unit(const Split& split) const;
  // One IPU's memory and time under `settings`.
  IpuFootprint footprint(const IpuBlocks& blocks, const MemorySettings& settings) const;
  // The same at each of `amps` (settings.amp ignored): the part they share computed once.
  std::vector<IpuFootprint> footprints(const IpuBlocks& blocks, const MemorySettings& settings,
                                       const std::vector<int>& amps) const;
  // Per unit boundary v (0..units): bytes that the forward copy from the IPU holding unit v-1
  // to the next IPU, holding unit v, carries at least: the activations made before v and read
  // from v on (with the heads on IPU 0, not those only the heads read, which may stay there).
  // A lower bound of add_copies' copy for every split that cuts there.
  const std::vector<double>& cut_bytes(bool heads_on_last) const { return cut_bytes_[heads_on_last ? 1 : 0]; }
  // One unit's compute per micro-batch at `amp` (forward, backward and recomputation).
  double unit_seconds(int unit, int amp, bool recompute) const;

  // The blocks of each forward stage, and what each IPU holds, under `split` (`stash_depth`
  // by forward stage, the schedule's rule).
  std::vector<std::pair<int, int>> stage_blocks(const Split& split) const;
  IpuBlocks ipu_blocks(const std::vector<std::pair<int, int>>& stages, int ipu, int ipus,
                       const std::vector<int>& stash_depth) const;

  // `split`'s plan under `execution` (its replicas, G, optimizer settings, weight-update
  // schedule); every IPU's availableMemoryProportion as split.amp says.
  ComposedPlan compose(const Split& split, const Execution& execution) const;
  // estimate_memory of the composed plan with `stash_depth` per forward stage; per IPU only totals.
  MemoryReport memory(const ComposedPlan& composed, const Split& split, const MemorySettings& settings,
                      const std::vector<int>& stash_depth) const;

  // An upper bound of the bytes a table of `model` at `amps` values holds once every block
  // has been asked for, counted from the sizes of its containers (and what its constructor
  // holds meanwhile: a copy of the model and its graph); bytes_held() counts the same
  // containers as they are.
  static double memory_bound(const Model& model, const LayerStructure& layers, std::size_t amps);
  double bytes_held() const;

private:
  // What a stage holding units first..last needs, apart from costs (IPU-independent).
  struct Block {
    bool ready = false;
    double host_input_bytes = 0, host_output_bytes = 0;
    double host_buffer_bytes = 0, host_buffer_tile = 0;
    double live_bytes = 0, weights_read_bytes = 0;
    double stash_bytes = 0, stash_tile = 0;
    double code_bytes = 0, code_tile = 0;        // its ops' outlined code alone
    std::vector<std::pair<int, double>> code;    // first op of each code signature: (signature, tiles)
    std::vector<int> stash_read;                 // tensors the backward reads (for the recomputation stash)
    std::vector<int> entering;
  };
  struct BlockCost {
    bool ready = false;
    double forward_seconds = 0, backward_seconds = 0, temp_bytes_per_tile = 0;
  };
  struct UnitWeights {
    double elements = 0, bytes = 0, count = 0;
    double shardable = 0;                              // tensors of kMinElementsForReplicatedTensorSharding or more
    double tile = 0;                                   // weights on the fullest tile
    int first = -1;                                    // smallest tensor id: its dtype is the update's
    std::vector<std::pair<int, double>> shapes;        // (shape id, elements)
    std::vector<double> tensor_elements;               // each weight's, for its optimizer state
  };
  struct TensorInfo {
    double bytes = 0, tile = 0;  // per micro-batch (whole for weights), and on the fullest tile
    TensorKind kind = TensorKind::Activation;
    DType dtype = DType::Float32;
    int producer = -1;
    bool checkpoint = false;     // the output of a user checkpoint (builder.checkpointOutput)
    std::vector<int> consumers;  // op indices, in op order
  };

  // compose's steps for one split (split_costs.cpp).
  class Composer;

  // The constructor's steps, in order.
  std::map<std::string, int> index_tensors(const ModelGraph& g);  // tensors_; returns each tensor's id
  void sum_cut_bytes();
  void check_layer_order();
  void cost_ops(const std::map<std::string, int>& id);
  void sum_unit_weights(const ModelGraph& g, const std::map<std::string, int>& id);
  void weight_prefixes();

  int unit_of(std::size_t op) const { return unit_of_op_[op]; }
  const Block& block(int first, int last) const;
  // block's parts: the host streams of units first..last, and their tensors (weights read,
  // stash, entering, live peak) over `ops` (theirs, in topological order).
  void add_host_streams(int first, int last, Block& b) const;
  void add_tensors(int first, int last, const std::vector<std::size_t>& ops, Block& b) const;
  const BlockCost& block_cost(int first, int last, int amp) const;
  std::pair<double, double> recompute_stash(int first, int last, int other_first, int other_last) const;
  // Weights, accumulators and on-chip state of units first..last: bytes and fullest-tile bytes.
  std::pair<double, double> weight_memory(int first, int last, bool accumulators, const MemorySettings& settings) const;
  const std::vector<double>& state_tile_prefix(double shards) const;

  const Scenario& scenario_;
  std::int64_t micro_batch_ = 1;
  bool accumulating_ = false;
  std::vector<double> amps_;
  int units_ = 0;  // units: 0 the stem, 1..L the layers, L+1 the heads
  int units_per_layer_ = 1;
  bool usable_ = true, has_stem_ = false, has_heads_ = false;
  std::string why_;
  std::vector<int> unit_of_op_;
  std::vector<std::size_t> topological_order_;
  std::vector<TensorInfo> tensors_;  // by id: tensors in name order
  std::vector<std::vector<int>> op_inputs_, op_outputs_;
  std::vector<BackwardReads> op_reads_;
  std::vector<int> op_signature_;
  std::vector<double> op_tiles_;
  std::vector<std::vector<OpCost>> forward_cost_, backward_cost_;  // [amp][op]
  std::vector<std::unique_ptr<CostModel>> cost_models_;            // per amp
  std::vector<int> anchors_;
  std::vector<UnitWeights> unit_weights_;      // by the unit of a weight's first user: the IPU it lives on
  std::vector<UnitWeights> completing_;        // by the unit of a weight's earliest user: the stage completing it
  std::vector<double> weight_prefix_, weight_tile_prefix_, state_bytes_prefix_;  // by unit, cumulative
  std::vector<std::vector<int>> shared_by_units_;  // units of each weight or host input used by several
  std::vector<double> cut_bytes_[2];           // by heads placement (0: IPU 0, 1: last), per unit boundary
  std::vector<int> crossing_;                  // non-weight tensors read outside their producer's unit, name order
  mutable std::vector<Block> blocks_;          // [first * units + last]
  mutable std::vector<BlockCost> block_costs_; // [(first * units + last) * amps + amp]
  mutable std::map<std::tuple<int, int, int, int>, std::pair<double, double>> recompute_stashes_;
  mutable std::map<double, std::vector<double>> state_tile_prefixes_;  // by shards
};

} // namespace ipusim
