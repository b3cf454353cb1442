#pragma once
// The "poplibs" cost model, one op family per file: each turns an op's work (forward or
// backward) into the compute sets poplibs would run for it. Op types are mapped to
// families in poplibs_model.cpp.
#include "sim/cost/op_work.hpp"
#include "sim/cost/tile_context.hpp"

namespace ipusim {

OpCost matmul_family(const TileContext& ctx, const OpWork& work);          // MatMul, Gemm, Conv
OpCost elementwise_family(const TileContext& ctx, const OpWork& work);     // Add, Relu, Gelu, Cast, Dropout, ...
OpCost normalisation_family(const TileContext& ctx, const OpWork& work);   // Softmax, LayerNorm, BatchNormalization
OpCost data_movement_family(const TileContext& ctx, const OpWork& work);   // views, Slice, Gather
OpCost reduction_family(const TileContext& ctx, const OpWork& work);       // ReduceSum, pooling
OpCost loss_family(const TileContext& ctx, const OpWork& work);            // SoftmaxCrossEntropy, NllLoss, ...
OpCost weight_update_family(const TileContext& ctx, const OpWork& work);   // the optimizer step

// Training with gradient accumulation adds each weight gradient to its accumulator
// (PopART's AccumulateOp, a scaled add) once per micro-batch.
OpCost accumulate_weight_gradients(const TileContext& ctx, const OpWork& work);

// Bytes a tile receives before an element-wise pass over `output` elements: operands
// smaller than the output are broadcast to every tile, rearranged ones are exchanged.
double operand_exchange_bytes(const TileContext& ctx, const OpWork& work, double output_elements, DType dtype);

} // namespace ipusim
