#pragma once
// Convolutions before and after ONNX's shape inference. libonnx takes a convolution's kernel
// shape from its weight's dims when the node has no kernel_shape attribute, and indexes the
// input's spatial axes into it unchecked: a weight of another rank than the input crashes it
// (a read past the kernel shape in convPoolShapeInference). So before inference each such
// node gets kernel_shape = the weight's dims after the first two, as ONNX's spec says it is
// inferred, and libonnx then checks that against the input's rank itself; a node whose
// weight's dims are known only by inference (computed by other nodes) must carry
// kernel_shape. After inference, every convolution's weight must have its input's rank
// (ipusim derives FLOPs from it). Both throw InputError onnx.bad-node at the node's input.
#include <string>

#include "sim/io/onnx_proto.hpp"

namespace ipusim {

// The index of a convolution op's weight input (Conv, ConvTranspose, ConvInteger: 1;
// QLinearConv: 3), -1 for other ops. The data input is 0 in each.
int convolution_weight_input(const std::string& op_type);

// Before inference: fills kernel_shape from the weight's dims in the graph and its subgraphs.
void complete_kernel_shapes(onnx::ModelProto& proto, const std::string& path);

// After inference: the weight of each convolution of the main graph has its input's rank.
void check_convolution_ranks(const onnx::ModelProto& proto, const std::string& path);

} // namespace ipusim
