#pragma once
// The plan's forward stages as the parts of a schedule order (order_lowering.cpp): which
// device and chunk of the order runs each stage, on which IPU, in how long. Zero-bubble
// orders (and 1F1B) take one device per forward stage (stages sharing an IPU are devices on one IPU);
// interleaved 1F1B takes the model's chunk structure (stage c*p+d on the IPU of stage d); the
// V schedules take a V (stages j and 2p-1-j on one IPU; the two middle ones, which the plan
// merges when nothing keeps them apart, split back as the model's pipelineStage annotations
// split them, or run as chunk 0 with an empty chunk 1).
#include <string>
#include <vector>

#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

struct OrderPart {
  int stage = -1;               // the plan's forward stage; -1: an empty part (runs nothing)
  PlanStage forward, backward;  // the stage's forward and backward, with this part's seconds
  // A stage split in two: its first part receives the stage's forward copies and host input
  // and sends its gradient copies; its last part does the rest. A whole stage is both.
  bool first = true, last = true;
};

struct PartLayout {
  int devices = 0;
  int chunks = 1;
  std::vector<std::vector<OrderPart>> parts;  // [device][chunk]
  std::vector<int> ipu_of_device;             // the order's devices on the plan's IPUs
  OpTimes times;                              // per part: F, B (recomputation included), W
  double w_share = 1;  // what W still needs of a stage's activations (the ZB memory limit's rule)
};

// Lays out the plan's stages for order schedule `name`; throws InputError for a plan the
// schedule cannot place (pipeline.virtual-stages, pipeline.v-placement).
PartLayout lay_out_parts(const ScheduleContext& context, const std::string& name);

// The plan's backward stage of forward stage k (the loss stage is its own).
const PlanStage& backward_of(const Plan& plan, int k);

} // namespace ipusim
