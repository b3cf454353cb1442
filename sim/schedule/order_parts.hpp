#pragma once
// The plan's forward stages as the parts of a schedule order (order_lowering.cpp): which
// device and chunk of the order runs each stage, on which IPU, in how long, by the schedule's
// PartPlacement (order.hpp). OnePerStage takes one device per forward stage (stages sharing an
// IPU are devices on one IPU); Interleaved takes the model's chunk structure (stage c*p+d on the
// IPU of stage d); V takes stages j and 2p-1-j on one IPU (the two middle ones, which the plan
// merges when nothing keeps them apart, split back as the model's pipelineStage annotations
// split them, or run as chunk 0 with an empty chunk 1); DualPipeMirrored takes one forward stage
// per IPU and runs each twice: stage d on its IPU, and stage P-1-d mirrored onto IPU d.
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
  // DualPipe's reverse pipeline: the stage runs a second time, on the IPU of stage P-1-k
  // (`forward.ipu` and `backward.ipu` say which), over copies that mirror the plan's.
  bool mirrored = false;
};

struct PartLayout {
  int devices = 0;
  int chunks = 1;
  std::vector<std::vector<OrderPart>> parts;  // [device][chunk]
  std::vector<int> ipu_of_device;             // the order's devices on the plan's IPUs
  OpTimes times;                              // per part: F, B (recomputation included), W
  double w_share = 1;  // what W still needs of a stage's activations (the ZB memory limit's rule)
};

// Lays out the plan's stages by `schedule`'s placement; throws InputError for a plan it cannot
// place (pipeline.virtual-stages, pipeline.v-placement, pipeline.dualpipe-placement).
PartLayout lay_out_parts(const ScheduleContext& context, const OrderScheduleInfo& schedule);

// The plan the programs are built from: `plan` itself unless the layout has mirrored parts
// (DualPipe). Then its copies are followed by their mirrors (copy i's mirror is copy n+i, on
// the mirrored IPUs) and by one gradient-sum copy per IPU to the IPU holding the same two
// stages (copy 2n+d, of no stage: the two weight copies' gradients are summed before the
// update), and each IPU's weights, update and optimizer state are those of both its stages.
Plan lowering_plan(const Plan& plan, const PartLayout& layout);
// Whether copy `copy` of lowering_plan carries a mirrored part's tensors.
inline bool is_mirrored_copy(const Plan& plan, const PlanCopy& copy) {
  return copy.id >= static_cast<int>(plan.copies.size());
}

} // namespace ipusim
