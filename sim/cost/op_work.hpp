#pragma once
// What an op asks of an IPU for one micro-batch: FLOPs, how finely the work splits
// over tiles, and the bytes it reads. FLOPs come from the model's `flops` /
// `backwardFlops` when given, else from the op type and tensor shapes (docs/formats.md).
#include <cstdint>
#include <string>

#include "sim/io/model.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

struct OpWork {
  std::string op_type;
  DType dtype = DType::Float32;
  double flops = 0;              // for one micro-batch
  double parallel_elements = 1;  // output elements of one micro-batch: the finest split over tiles
  double input_bytes = 0;        // bytes read, for one micro-batch
};

// Forward FLOPs per sample derived from type and shapes; throws InputError for an
// op type it cannot derive (the user then gives "flops").
double derived_flops_per_sample(const Model& model, const Op& op);

OpWork forward_work(const Model& model, const Op& op, std::int64_t micro_batch_size);
// Backward defaults to twice the forward FLOPs; it reads the forward inputs and the output gradients.
OpWork backward_work(const Model& model, const Op& op, std::int64_t micro_batch_size);
// The optimizer step over an IPU's weights: FLOPs per weight element by optimizer
// (SGD 2: scale and subtract; momentum 4; Adam 12; LAMB 16, estimates) reading the
// weights, their accumulated gradients and the optimizer state.
OpWork weight_update_work(double weight_elements, double weight_bytes, DType dtype, Optimizer optimizer,
                          DType state_dtype);
// Optimizer state tensors per weight: SGD 0, momentum 1, Adam and LAMB 2.
int optimizer_state_tensors(Optimizer optimizer);

} // namespace ipusim
