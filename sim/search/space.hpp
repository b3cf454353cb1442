#pragma once
// The space `ipusim plan` searches for a model on a system (docs/planner.md, "What is
// searched"): the dimensions and the values each may take, every one fixable from the
// command line. What the user asked for is a PlanRequest (empty lists: search the default
// values); make_plan_space turns it into the space, checking it against the scenario.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"

namespace ipusim {

struct PipelineShape {
  int ipus = 0;      // per pipeline
  int replicas = 1;
};

struct PlanRequest {
  std::vector<int> ipus, replicas;                  // IPUs per pipeline, replicas
  std::optional<std::int64_t> global_batch;         // fixed: micro-batch x G x replicas (inference: x batchesPerStep)
  std::optional<std::pair<std::int64_t, std::int64_t>> global_batch_range;  // free within bounds
  std::vector<std::int64_t> micro_batches, gradient_accumulation;
  std::vector<std::string> schedules, recomputation, state_location, rts, weight_update, heads_on;
  std::vector<double> amps;                         // availableMemoryProportion values per IPU
  std::vector<std::string> fixed_fields;            // scenario fields --set gave: those dimensions keep their value
  bool layer_free_ipus = true;                      // IPU 0 may hold only the stem, the last only the heads
  bool half_layers = true;                          // blocks may end between a layer's halves (att_ffn)
};

struct PlanSpace {
  std::vector<PipelineShape> shapes;
  std::vector<std::int64_t> micro_batches;
  // The depth (G in training, batchesPerStep in inference): fixed by the global batch, from a
  // list, or every power of two within the batch bounds.
  std::optional<std::int64_t> global_batch;
  std::vector<std::int64_t> depths;                 // when the batch is not fixed
  std::int64_t min_global_batch = 1, max_global_batch = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> schedules;
  // Searched apart and shown as what-if rows (no IPU framework runs them): by default the
  // planner's what-if schedules; empty when the schedules were chosen (--schedule, --set).
  std::vector<std::string> what_if_schedules;
  std::vector<bool> recomputation, state_off_chip, rts, heads_on_last;
  std::vector<WeightUpdateSchedule> weight_update;
  std::vector<double> amps;                         // the values each IPU may take
  std::vector<double> fixed_amps;                   // non-empty: fixed per IPU (one value: every IPU)
  bool layer_free_ipus = true;
  // Blocks may start or end between a layer's attention and feed-forward halves where every
  // layer has such a cut (halve_layers; Graphcore's att_ffn_placement).
  bool half_layers = false;
  bool stem_alone = false;                          // IPU 0 must hold no layer (memory advice)
  // execution.distributedBatchNormReplicaGroupSize: only replica counts it divides are searched.
  std::int64_t batch_norm_group = 1;
  bool batch_free() const { return !global_batch; }
  // Depths a pipeline of `replicas` replicas at `micro_batch` may take.
  std::vector<std::int64_t> depths_for(std::int64_t micro_batch, int replicas) const;
  // Points of the outer dimensions (everything but the split and the AMP per IPU), before rules.
  std::size_t size() const;
};

// The default space for `scenario` narrowed by `request`; InputError (plan.*) when a fixed
// value cannot be used (more IPUs than the system has, a batch no micro-batch divides, ...).
PlanSpace make_plan_space(const Scenario& scenario, const PlanRequest& request, int layers);

// "ipus 2,4,8,16 x replicas 8,4,2,1; micro-batch 1,2,4; ..." for the output's first line.
std::string describe_space(const PlanSpace& space);

std::string heads_name(bool heads_on_last);

// The one point of `scenario`'s own settings on a pipeline of `ipus` IPUs x `replicas` (its
// availableMemoryProportion kept per IPU when it lists one per IPU, else its values to choose
// from), both head placements: for re-splitting it.
PlanSpace scenario_space(const Scenario& scenario, int ipus, int replicas);

} // namespace ipusim
