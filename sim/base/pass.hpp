#pragma once
// One name for a pass wherever a pass is named: the cost of an op in it (sim/cost), an op of a
// schedule's order (F, B, W, BW: sim/schedule/order.hpp), a program's compute step and the
// engine's event (attribution, traces). On the base floor: cost, schedule, engine and outputs
// all read it.
#include <string>

namespace ipusim {

enum class Pass {
  None,            // a step that is no pass: host I/O, syncs, copies
  Forward,         // F
  Backward,        // BW: the input's and the weights' gradients in one block
  InputGradient,   // B: the input's gradient alone (a zero-bubble order splits the backward)
  WeightGradient,  // W: the weights' gradients alone
  Update,          // the optimizer's weight update
  AllReduce,       // gradients summed across replicas or copies of the weights
};

// Backward, InputGradient or WeightGradient.
constexpr bool is_backward(Pass pass) {
  return pass == Pass::Backward || pass == Pass::InputGradient || pass == Pass::WeightGradient;
}

// Forward or any backward: a pass of the pipeline's stages.
constexpr bool is_pipeline_pass(Pass pass) { return pass == Pass::Forward || is_backward(pass); }

// As outputs name it: "forward", "backward" (B, W and BW alike), "update", "all-reduce", "none".
std::string pass_name(Pass pass);

// As orders and traces write a pipeline op: "F", "B", "W", "BW"; "" for any other pass.
std::string pass_letter(Pass pass);

} // namespace ipusim
