#pragma once
// ONNX shape inference that also evaluates the integer shape arithmetic exporters write
// (Shape -> Gather -> Div -> Slice, from x.size(d) and chunk()), which ONNX's own data
// propagation leaves unknown (it has no Div). Folded nodes become Constants in place.
#include <onnx/onnx_pb.h>

namespace ipusim {

// Throws what ONNX throws (std::exception) for a shape that contradicts its inputs.
void infer_shapes_folding_constants(onnx::ModelProto& proto);

} // namespace ipusim
