#pragma once
// What the collectives the tensor-parallel transform inserts (sim/io/tensor_parallel.hpp)
// cost: an all-reduce over the group's IPUs as GCL runs it within an IPU-Link domain, a
// bi-directional ring pair (collectives.cpp): 2(t-1) steps, each sending B/2t each way round
// the ring over the config's routes (a link two ring hops share carries both), then the
// sync ending the step. Closed form; the group's members are IPUs first .. first+t-1.
#include "sim/cost/cost_model.hpp"
#include "sim/io/hardware.hpp"
#include "sim/io/model.hpp"

namespace ipusim {

// Seconds to all-reduce `bytes` over IPUs first .. first+group-1 of `hardware`.
double group_all_reduce_seconds(const HardwareConfig& hardware, int first, int group, double bytes);

// One pass (forward, or its gradient with `backward`) of an inserted collective for one
// micro-batch, as exchange cycles at `clock_hz`. The first group (IPUs 0 .. t-1) stands for
// every group: the shipped systems' groups of consecutive IPUs are wired alike.
OpCost tensor_parallel_collective_cost(const HardwareConfig& hardware, const Model& model, const Op& op,
                                       bool backward, std::int64_t micro_batch_size);

} // namespace ipusim
