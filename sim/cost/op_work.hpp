#pragma once
// What an op asks of an IPU for one micro-batch, in one pass. The FLOP-based cost models
// read `flops`, `parallel_elements` and `input_bytes`; the shape-aware model reads the
// operands' shapes. FLOPs come from the model's `flops` / `backwardFlops` when given,
// else from the op type and tensor shapes (docs/formats.md).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/base/pass.hpp"
#include "sim/io/model.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

struct Operand {
  std::string name;
  std::vector<std::int64_t> shape;  // one micro-batch: activations and inputs lead with the micro-batch size
  DType dtype = DType::Float32;
  TensorKind kind = TensorKind::Activation;
  // Reaches the op through a layout-changing view (a Transpose): it must be exchanged into place.
  bool rearranged = false;
  // Training computes a gradient for it: a weight, or an activation that depends on one.
  bool needs_gradient = false;

  double elements() const;
  double bytes() const { return elements() * static_cast<double>(dtype_bytes(dtype)); }
  std::int64_t dim(int from_end) const;  // dim(1) is the last dimension; 1 when absent
};

struct OpWork {
  std::string op_type;
  Pass pass = Pass::Forward;
  DType dtype = DType::Float32;
  double flops = 0;              // for one micro-batch
  double parallel_elements = 1;  // output elements of one micro-batch: the finest split over tiles
  double input_bytes = 0;        // bytes read, for one micro-batch
  bool declared_flops = false;   // the model file gave the FLOPs: the op's shape says nothing about its work
  std::vector<Operand> inputs, outputs;
  std::map<std::string, AttributeValue> attributes;  // the op's own (kernel_shape, transA, ...)
  bool training = false;  // batch statistics (BatchNormalization) rather than running ones
  // Training with gradient accumulation: each weight gradient is added to its accumulator.
  bool accumulates_weight_gradients = false;
  // Weight update only: the optimizer, its state's dtype and how many tensors it updates.
  Optimizer optimizer = Optimizer::Sgd;
  DType state_dtype = DType::Float32;
  double weight_tensors = 0;
};

// Forward FLOPs per sample derived from type and shapes; throws InputError for an
// op type it cannot derive (the user then gives "flops").
double derived_flops_per_sample(const Model& model, const Op& op);

// Facts about tensors that depend on the whole graph, computed once per model.
struct TensorFacts {
  // Reach their readers through a Transpose (possibly behind reshapes): their layout is
  // not the one their readers want.
  std::set<std::string> rearranged;
  // Weights and the activations computed from them: backpropagation produces their gradients.
  std::set<std::string> need_gradient;
};
TensorFacts tensor_facts(const Model& model);

OpWork forward_work(const Model& model, const Op& op, std::int64_t micro_batch_size, const TensorFacts& facts = {});
// Backward defaults to twice the forward FLOPs; it reads the forward inputs and the output gradients.
OpWork backward_work(const Model& model, const Op& op, std::int64_t micro_batch_size, const TensorFacts& facts = {});
// The optimizer step over `weight_elements` weights held in `weight_tensors` tensors
// (FLOPs per weight element by optimizer: SGD 2, momentum 4, Adam 12, LAMB 16, estimates),
// reading the weights, their accumulated gradients and the optimizer state.
OpWork weight_update_work(double weight_elements, double weight_bytes, DType dtype, Optimizer optimizer,
                          DType state_dtype, double weight_tensors = 1);
// Optimizer state tensors per weight: SGD 0, momentum 1, Adam and LAMB 2.
int optimizer_state_tensors(Optimizer optimizer);

} // namespace ipusim
