#pragma once
// The vector (non-AMP) vertices every op other than a matmul or convolution is made of,
// with their per-worker rates from poplibs' cycle estimators (cited in vector_rates.cpp).
#include "sim/cost/tile_context.hpp"

namespace ipusim {

enum class VectorOp {
  // popops binary and unary element-wise vertices
  Add, Sub, Mul, Div, Max, Neg, Abs, Square, Sqrt, Rsqrt, Inverse, Exp, Log, Tanh, Sigmoid, Relu, GeluErf,
  // popnn non-linearities and their gradients
  Gelu, GeluGrad, ReluGrad, TanhGrad, SigmoidGrad,
  // data conversion and movement on a tile
  Cast, Copy, Zero,
  // poprand: a Bernoulli mask (dropout)
  BernoulliMask,
};

VertexRate vector_rate(VectorOp op, DType dtype, const TileArchitecture& arch);

// One compute set applying `op` to `elements` of `dtype` laid out linearly over the tiles,
// after receiving `exchange_bytes_per_tile` (broadcast operands, rearranged inputs).
OpCost vector_pass(const TileContext& ctx, VectorOp op, DType dtype, double elements,
                   double exchange_bytes_per_tile = 0);

// A reduction of `inputs` elements to `outputs` results (sum, max, sum of squares), in
// one compute set when each result's inputs sit on one tile, else in two with an exchange
// of partials between them (popops reduction estimates).
OpCost reduction(const TileContext& ctx, double inputs, double outputs, DType dtype);

} // namespace ipusim
