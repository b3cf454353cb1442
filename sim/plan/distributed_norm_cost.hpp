#pragma once
// Distributed batch normalisation (TensorFlow's
// `norms.experimental.distributed_batch_norm_replica_group_size`, Graphcore's MLPerf ResNet-50
// `BN_span`): a BatchNormalization in training takes its statistics over the micro-batches
// of a group of consecutive replicas. poplibs (lib/poplin/Norms.cpp, normStatisticsImpl and
// normStatisticsGradientsImpl) all-reduces them through a callback, once per pass: the
// forward sends the per-channel mean (the activations' type) and power (float), the backward
// the per-channel variance and mean deltas (float). Each is one all-reduce over the group,
// timed like the tensor-parallel ones (group_all_reduce_seconds) on the first group's IPUs
// (0 .. size-1: exact for one-IPU replicas, the configuration that uses it).
#include "sim/cost/cost_model.hpp"
#include "sim/io/hardware.hpp"
#include "sim/io/model.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

// Bytes one replica all-reduces for `op` in one pass of one micro-batch; 0 when the op
// takes no distributed statistics (not a BatchNormalization, inference, or a group of one).
double distributed_norm_bytes(const Model& model, const Op& op, const Execution& execution, bool backward);

// That all-reduce as exchange cycles at the IPU's clock, to add to the op's pass.
OpCost distributed_norm_cost(const HardwareConfig& hardware, const Model& model, const Op& op,
                             const Execution& execution, bool backward);

} // namespace ipusim
