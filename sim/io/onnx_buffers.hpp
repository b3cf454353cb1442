#pragma once
// Buffers in ONNX exports. PyTorch writes a module's buffers (a causal mask, rotary cos/sin
// tables) as initializers, as it writes its parameters, and constant folding turns a slice
// of one into an initializer of its own ("onnx::Add_445"). Held as weights they would be
// trained, given optimizer state and refused on several IPUs when every layer reads them
// (annotation.weight-on-several-ipus). They are found here, by how the graph reads them and
// by what they hold, and become constants of the compiled graph (docs/formats.md, "ONNX
// models").
#include <string>

#include "sim/io/onnx_proto.hpp"

namespace ipusim {

// True for a float initializer that is a buffer: read only by Slice, element-wise and shape
// ops (through any Identity of it), never as a weight operand, and holding a mask (square
// in its last two dimensions, every value 0, 1 or at most -1e4, -inf included, not all
// equal) or a rotary table (rank 2 or more, values within [-1, 1], the row of position 0
// all ones (cos) or all zeros (sin)). Without data it is a weight.
bool is_buffer(const onnx::GraphProto& graph, const onnx::TensorProto& initializer);

} // namespace ipusim
