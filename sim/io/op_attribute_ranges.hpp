#pragma once
// The numbers inside op attributes have physical ranges like every other number a model
// holds: a window, stride or group below 1, a negative pad or a transpose flag other than
// 0 / 1 would cost an op as nothing (or as negative work) without a word. The ranges are
// field_ranges()' lines for /ops/*/attributes/...; JSON models and ONNX imports both
// check against them, each reporting the place in its own file.
#include <string>

#include "sim/io/model.hpp"

namespace ipusim {

// Throws InputError(file, pointer[/k], rule) when the attribute `name` (at `pointer` in
// `file`), or its k-th element, lies outside its range. Attributes without a line pass.
void check_attribute_range(const std::string& name, const AttributeValue& value, const std::string& file,
                           const std::string& pointer);

} // namespace ipusim
