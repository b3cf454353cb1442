#pragma once
// ONNX shape inference that also evaluates the integer shape arithmetic exporters write
// (Shape -> Gather -> Div -> Slice, from x.size(d) and chunk()), which ONNX's own data
// propagation leaves unknown (it has no Div). Folded nodes become Constants in place.
#include <onnx/onnx_pb.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace ipusim {

// Throws what ONNX throws (std::exception) for a shape that contradicts its inputs.
// libonnx trusts the model in ways no check before it can cover completely (every earlier
// crash was one more shape of file), so by default inference runs in a forked child: a
// crash there is a ChildProcessError here (sim/base/forked.hpp), which the importer
// reports as onnx.shape-inference, not a crash of ipusim.
// infer_onnx_shapes_in_process (onnx_model_loader.hpp) makes it run here instead.
void infer_shapes_folding_constants(onnx::ModelProto& proto);

// A Shape or Size whose input no type inference gives a type (libonnx's data propagation would
// dereference the missing type): thrown by infer_shapes_folding_constants before that
// propagation runs, with the JSON pointer of the node's input (onnx.shape-unknown).
struct UntypedShapeRead : std::runtime_error {
  UntypedShapeRead(std::string pointer_, const std::string& message) : std::runtime_error(message), pointer(std::move(pointer_)) {}
  std::string pointer;
};

} // namespace ipusim
