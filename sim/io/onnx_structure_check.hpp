#pragma once
// What ONNX's own shape inference (libonnx) trusts without checking, checked first: a
// malformed file must be an input error, not a crash inside the library. Every node of
// the graph and of its subgraphs against its op schema (input and output counts, required
// attributes such as Scan's `body`, attribute types), and every tensor (initializers,
// Constant values, tensor attributes): a known element type, dimensions >= 0 whose product
// fits, and data whose length matches the dimensions. Throws InputError at the node's or
// tensor's pointer (docs/formats.md, "ONNX models").
#include <string>

#include "sim/io/onnx_proto.hpp"

namespace ipusim {

void check_onnx_structure(const onnx::ModelProto& proto, const std::string& path);

// The product of `dims` when every one is >= 0 and the product is at most 2^56 elements
// (no real tensor is larger, and a byte count stays within 64 bits); otherwise -1.
std::int64_t checked_element_count(const google::protobuf::RepeatedField<std::int64_t>& dims);

// A name from the file as a message quotes it: its first 80 characters, "..." after a longer one.
std::string short_name(const std::string& name);

} // namespace ipusim
