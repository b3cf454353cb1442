#include "sim/cost/vector_rates.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim {

namespace {

// (worker cycles per loop, elements per loop) for float16 and float32, from poplibs
// lib/popops/popopsCycleEstimators.hpp (unaryOpPerfInfo, binaryOpPerfInfo). Ops on the
// "natural vector" (64 bits) add a load/store overhead per loop: 2 for the assembler
// ADD/SUB/MULTIPLY codelets (binaryOpInnerLoopCycles), 4 for unary ops (unaryOpInnerLoopCycles).
struct Entry {
  double f16_cycles, f16_elements, f32_cycles, f32_elements, overhead;
};

Entry entry(VectorOp op) {
  // Worker overheads: BinaryOp1D 26 (half) / 29 (float); UnaryOp1D 17, 33 for EXPONENT
  // (popopsCycleEstimators.cpp); popnn NonLinearity1D ~22 (popnnCycleEstimators.cpp).
  switch (op) {
  case VectorOp::Add:
  case VectorOp::Sub:
  case VectorOp::Mul: return {1 + 2, 4, 1 + 2, 2, 26};
  case VectorOp::Div: return {21, 4, 10, 2, 26};
  case VectorOp::Max: return {4, 4, 3, 2, 26};
  case VectorOp::Neg: return {2, 4, 2, 2, 17};
  case VectorOp::Abs: return {1 + 4, 4, 1 + 4, 2, 17};
  case VectorOp::Square: return {2, 4, 2, 2, 17};
  case VectorOp::Sqrt: return {23, 4, 10, 2, 17};
  case VectorOp::Rsqrt: return {19, 4, 8, 2, 17};
  case VectorOp::Inverse: return {15, 4, 6, 2, 17};
  case VectorOp::Exp: return {4, 4, 6, 2, 33};
  case VectorOp::Log: return {4, 4, 12, 2, 17};
  case VectorOp::Tanh: return {4, 4, 12, 2, 17};
  case VectorOp::Sigmoid: return {6, 4, 12, 2, 17};
  case VectorOp::Relu: return {3, 4, 3, 2, 17};
  case VectorOp::GeluErf: return {16, 1, 22, 1, 17};
  // popnn lib/popnn/PerformanceEstimation.hpp: getNonLinearityOpCycles (GELU 5 per half
  // vector, 10 per float vector) and getNonLinearityGradOpCycles (RELU/SIGMOID/TANH 3).
  case VectorOp::Gelu:
  case VectorOp::GeluGrad: return {5, 4, 10, 2, 22};
  case VectorOp::ReluGrad:
  case VectorOp::TanhGrad:
  case VectorOp::SigmoidGrad: return {3, 4, 3, 2, 22};
  // poplin estimateCastCycles: one loop per vector of the narrower vector width.
  case VectorOp::Cast: return {1, 2, 1, 2, 26};
  case VectorOp::Copy:
  case VectorOp::Zero:
  case VectorOp::BernoulliMask: return {0, 1, 0, 1, 0};  // rates set from the architecture below
  }
  return {1, 1, 1, 1, 0};
}

} // namespace

VertexRate vector_rate(VectorOp op, DType dtype, const TileArchitecture& arch) {
  const double bytes = static_cast<double>(dtype_bytes(dtype));
  const double workers = arch.worker_contexts;
  if (op == VectorOp::Copy || op == VectorOp::Zero) {
    // The tile moves memcpyBytesPerCycle: each worker a share of it every cycle it issues.
    return {1, arch.memcpy_bytes_per_cycle / bytes, 10};
  }
  if (op == VectorOp::BernoulliMask) {
    // poprand Bernoulli (poprandCycleEstimators.cpp): one cycle per vector for the tile, ~21 per worker.
    return {1.0 / workers, static_cast<double>(arch.vector_width(dtype)), 21};
  }
  const Entry e = entry(op);
  const bool half = dtype == DType::Float16;
  return {half ? e.f16_cycles : e.f32_cycles, half ? e.f16_elements : e.f32_elements, e.overhead};
}

OpCost vector_pass(const TileContext& ctx, VectorOp op, DType dtype, double elements, double exchange_bytes_per_tile) {
  if (elements <= 0) return {};
  const double on_tile = elements_per_tile(ctx, elements, dtype);
  return compute_set(ctx, multivertex_cycles(ctx, on_tile, vector_rate(op, dtype, ctx.arch)), exchange_bytes_per_tile);
}

namespace {

// popops Reduce vertices (lib/popops/reduction/CycleEstimationFunctions.cpp): per vector of
// accumulators (8 halves or 4 floats) and partial, (2 + 2 + width / loadWidth) + 3 cycles;
// per output region about 30 cycles of set-up; ~30 cycles per vertex.
double reduce_vertex_cycles(const TileContext& ctx, double inputs, double outputs, DType dtype) {
  if (inputs <= 0) return 0;
  const double acc_width = dtype == DType::Float32 ? 4 : 8;
  const double load_width = ctx.arch.vector_width(dtype);
  const double per_vector = 2 + 2 + acc_width / std::min(acc_width, load_width) + 3;
  const double workers = ctx.arch.worker_contexts;
  const double vectors = std::ceil(std::ceil(inputs / acc_width) / workers);
  const double regions = std::ceil(std::max(1.0, outputs) / workers);
  return workers * (30 + regions * 30 + vectors * per_vector);
}

} // namespace

OpCost reduction(const TileContext& ctx, double inputs, double outputs, DType dtype) {
  if (inputs <= 0) return {};
  outputs = std::clamp(outputs, 1.0, inputs);
  const double on_tile = elements_per_tile(ctx, inputs, dtype);
  const double per_output = inputs / outputs;
  if (per_output <= on_tile) {
    // Each result's inputs share a tile: one reduction in place.
    const double outputs_on_tile = std::max(1.0, std::floor(on_tile / per_output));
    return compute_set(ctx, reduce_vertex_cycles(ctx, on_tile, outputs_on_tile, dtype));
  }
  // A result's inputs span `depth` tiles: each reduces its share to a float partial, the
  // partials travel to the tile owning the result, which adds them up.
  const double depth = std::ceil(per_output / on_tile);
  OpCost c = compute_set(ctx, reduce_vertex_cycles(ctx, on_tile, 1, dtype));
  const double results_per_tile = elements_per_tile(ctx, outputs, DType::Float32);
  c += compute_set(ctx, reduce_vertex_cycles(ctx, results_per_tile * depth, results_per_tile, DType::Float32),
                   results_per_tile * depth * 4);
  return c;
}

} // namespace ipusim
