#include "sim/io/onnx_buffers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

namespace ipusim {

namespace {

using T = onnx::TensorProto;

// IEEE half to float (normal, subnormal, infinities; a NaN stays a NaN).
float half_to_float(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v = 0;
  if (exponent == 0) v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31) v = mantissa ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  return sign ? -v : v;
}

// The values of a FLOAT or FLOAT16 initializer; nothing without data (or another type).
std::optional<std::vector<float>> float_values(const T& t) {
  std::vector<float> v;
  if (t.data_type() == T::FLOAT) {
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() % 4 != 0) return std::nullopt;
      v.resize(t.raw_data().size() / 4);
      std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  } else if (t.data_type() == T::FLOAT16) {
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() % 2 != 0) return std::nullopt;
      std::vector<std::uint16_t> h(t.raw_data().size() / 2);
      std::memcpy(h.data(), t.raw_data().data(), t.raw_data().size());
      for (auto x : h) v.push_back(half_to_float(x));
    } else {
      for (auto x : t.int32_data()) v.push_back(half_to_float(static_cast<std::uint16_t>(x)));
    }
  }
  if (v.empty()) return std::nullopt;
  return v;
}

// A causal or padding mask: square in its last two dimensions, every value 0, 1 or at most
// -1e4 (-inf included), and not uniform (a norm's ones or a zero-initialised bias is not one).
bool is_mask(const T& t, const std::vector<float>& v) {
  const int rank = t.dims_size();
  if (rank < 2 || t.dims(rank - 1) != t.dims(rank - 2)) return false;
  if (!std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f || x == 1.0f || x <= -1e4f; })) return false;
  return std::any_of(v.begin(), v.end(), [&](float x) { return x != v.front(); });
}

bool is_rotary_table(const T& t, const std::vector<float>& v) {
  if (t.dims_size() < 2) return false;
  const auto width = static_cast<std::size_t>(t.dims(t.dims_size() - 1));
  if (width == 0 || width % 2 != 0 || v.size() < 2 * width) return false;
  if (!std::all_of(v.begin(), v.end(), [](float x) { return std::fabs(x) <= 1.0f; })) return false;
  const auto first_row = v.begin() + static_cast<std::ptrdiff_t>(width);
  return std::all_of(v.begin(), first_row, [](float x) { return x == 1.0f; }) ||
         std::all_of(v.begin(), first_row, [](float x) { return x == 0.0f; });
}

// Ops a table is read by; any other (MatMul, Gemm, Conv, Gather, a norm) reads a weight.
bool table_reader(const std::string& op) {
  static const std::set<std::string> readers{"Add",   "Sub",    "Mul",    "Div",     "Neg",       "Where",
                                             "Equal", "Less",   "Greater", "Not",    "And",       "Or",
                                             "Cast",  "Expand", "Reshape", "Unsqueeze", "Squeeze", "Slice",
                                             "Concat", "Tile"};
  return readers.count(op) > 0;
}

// Whether every node reading `name` (through any Identity of it) reads it as a table.
bool read_as_table(const onnx::GraphProto& g, const std::string& name) {
  std::vector<std::string> names{name};
  bool read = false;
  for (std::size_t k = 0; k < names.size() && names.size() < 100000; ++k)
    for (const auto& n : g.node())
      for (int j = 0; j < n.input_size(); ++j) {
        if (n.input(j) != names[k]) continue;
        if (n.op_type() == "Identity" && n.output_size() == 1) {
          names.push_back(n.output(0));
          continue;
        }
        if (!table_reader(n.op_type()) || (n.op_type() == "Slice" && j != 0)) return false;
        read = true;
      }
  return read;
}

} // namespace

bool is_buffer(const onnx::GraphProto& g, const T& t) {
  const auto values = float_values(t);
  if (!values || !(is_mask(t, *values) || is_rotary_table(t, *values))) return false;
  return read_as_table(g, t.name());
}

} // namespace ipusim
