#pragma once
// Matmuls and convolutions on the AMP units, planned the way poplibs' convolution planner
// (lib/poplin/ConvModel.cpp) plans them: the work is a grouped matmul [G x M x K] . [G x K x N]
// (a convolution folds its kernel into K), split over the tiles by groups, rows (the
// "field"), input channels and output channels; each tile runs the AMP vertex on its part,
// after an exchange brings its operands, and a split over input channels leaves partial
// sums that another exchange and a reduction combine. Input and output channels are padded
// to the AMP's channel groups. The plan with the fewest cycles whose temporaries fit in
// availableMemoryProportion of a tile wins; when none fits, the output channels are
// processed in serial passes, as poplibs does.
#include "sim/cost/tile_context.hpp"

namespace ipusim {

struct MatMulShape {
  double groups = 1;           // independent matmuls (attention heads x micro-batch, conv groups)
  double rows = 1;             // M: output rows (micro-batch x positions)
  double inputs = 1;           // K: the contracted input channels (per kernel position)
  double outputs = 1;          // N: output channels
  double kernel_positions = 1; // a convolution's kernel size: K work per input row without more input data
  DType dtype = DType::Float16;
  DType output_dtype = DType::Float16;
  // Whether each operand already sits where this matmul wants it (the forward pass plans
  // its weights' layout); a transposed or rearranged operand is exchanged in full.
  bool lhs_in_place = false, rhs_in_place = false;
};

struct MatMulPlan {
  double group_split = 1, row_split = 1, input_split = 1, output_split = 1, serial_passes = 1;
  bool fits = true;  // its temporaries fit the budget (else the least-memory plan, flagged)
  OpCost cost;
};

MatMulPlan plan_matmul(const TileContext& ctx, const MatMulShape& shape);

// The AMP 1x1 vertex on one tile (poplibs' getConvPartial1x1Supervisor* estimates): `field`
// output rows, `input_groups` x `output_groups` channel groups for each of `conv_groups`.
double amp_vertex_cycles(const TileContext& ctx, DType dtype, DType partials, double conv_groups,
                         double input_groups, double output_groups, double field);

} // namespace ipusim
