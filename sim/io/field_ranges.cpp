#include "sim/io/field_ranges.hpp"

#include <map>

#include <cmath>
#include <cstdio>

#include "sim/io/input_error.hpp"
#include "sim/io/parameters.hpp"

namespace ipusim {

std::string format_name(Format format) {
  switch (format) {
  case Format::Model: return "model";
  case Format::Config: return "config";
  case Format::Scenario: return "scenario";
  case Format::Sweep: return "sweep";
  }
  return "?";
}

namespace {
constexpr double kInt31 = 2147483647.0;    // an int
constexpr Lower kOpen = Lower::Open, kClosed = Lower::Closed, kZeroOr = Lower::ZeroOrClosed;
} // namespace

namespace {

// The numbers of models and sweeps; a config's and a scenario's are declared with their
// fields (parameters.cpp).
const std::vector<FieldRange>& model_ranges() {
  static const std::vector<FieldRange> table{
      {Format::Model, "/tensors/*/shape/*", 1, 1099511627776.0, kClosed, "elements", "tensor.bad-shape",
       "a dimension, 1 to 2^40 (and at most 2^50 bytes a sample)"},
      {Format::Model, "/ops/*/flops", 1e-3, 1e18, kZeroOr, "FLOP", nullptr,
       "per sample; a whole GPT-3 forward is about 1e15"},
      {Format::Model, "/ops/*/backwardFlops", 1e-3, 1e18, kZeroOr, "FLOP", nullptr, "per sample"},
      // The ONNX attributes a cost reads or that shape an op (docs/formats.md "Ops").
      {Format::Model, "/ops/*/attributes/kernel_shape/*", 1, 65536, kClosed, "elements", "op.attribute-range",
       "a window dimension: 1 to 2^16 (ResNet's largest is 7)"},
      {Format::Model, "/ops/*/attributes/strides/*", 1, 65536, kClosed, "elements", "op.attribute-range",
       "a stride of at least 1"},
      {Format::Model, "/ops/*/attributes/dilations/*", 1, 65536, kClosed, "elements", "op.attribute-range",
       "a dilation of at least 1"},
      {Format::Model, "/ops/*/attributes/pads/*", 0, 65536, kClosed, "elements", "op.attribute-range",
       "a padding, 0 or more"},
      {Format::Model, "/ops/*/attributes/group", 1, kInt31, kClosed, "groups", "op.attribute-range",
       "a convolution's groups, at least 1"},
      {Format::Model, "/ops/*/attributes/transA", 0, 1, kClosed, "", "op.attribute-range", "ONNX Gemm's flag: 0 or 1"},
      {Format::Model, "/ops/*/attributes/transB", 0, 1, kClosed, "", "op.attribute-range", "ONNX Gemm's flag: 0 or 1"},
  };
  return table;
}

const std::vector<FieldRange>& sweep_ranges() {
  static const std::vector<FieldRange> table{
      {Format::Sweep, "/axes/*/range/from", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/range/to", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/range/step", 0, 1e300, kOpen, "", "sweep.bad-range", "greater than zero"},
      {Format::Sweep, "/axes/*/zip/*/range/from", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/zip/*/range/to", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/zip/*/range/step", 0, 1e300, kOpen, "", "sweep.bad-range", "greater than zero"},
  };
  return table;
}

void append_declared_ranges(std::vector<FieldRange>& out, Format format) {
  for (const Parameter& p : parameters())
    if (p.format == format && p.range)
      out.push_back({format, p.pointer.c_str(), p.range->min, p.range->max, p.range->lower, p.range->unit,
                     p.range->rule, p.range->why});
}

} // namespace

const std::vector<FieldRange>& field_ranges() {
  // Bounds are generous around real hardware and models but keep every product the
  // simulator forms (FLOPs x micro-batch / rates / clock, bytes / bandwidth) finite and
  // far from double's limits, so no input yields inf, NaN or a zero rate.
  static const std::vector<FieldRange> all = [] {
    std::vector<FieldRange> out;
    append_declared_ranges(out, Format::Config);
    out.insert(out.end(), model_ranges().begin(), model_ranges().end());
    append_declared_ranges(out, Format::Scenario);
    out.insert(out.end(), sweep_ranges().begin(), sweep_ranges().end());
    return out;
  }();
  return all;
}

bool pointer_pattern_matches(const std::string& pat, const std::string& pointer) {
  std::size_t p = 0;
  std::size_t q = 0;
  while (q < pat.size() && p < pointer.size()) {
    if (pat[q] != '/' || pointer[p] != '/') return false;
    const std::size_t pat_end = std::min(pat.find('/', q + 1), pat.size());
    const std::size_t ptr_end = std::min(pointer.find('/', p + 1), pointer.size());
    const std::string_view segment(pat.data() + q + 1, pat_end - q - 1);
    if (segment != "*" && segment != std::string_view(pointer.data() + p + 1, ptr_end - p - 1)) return false;
    q = pat_end;
    p = ptr_end;
  }
  return q == pat.size() && p == pointer.size();
}

namespace {

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

} // namespace

namespace {

// `pointer` with each array index as "*" (as the patterns write them); whether it had any.
std::string indices_starred(const std::string& pointer, bool& had_index) {
  std::string out;
  had_index = false;
  for (std::size_t at = 0; at < pointer.size();) {
    const std::size_t end = std::min(pointer.find('/', at + 1), pointer.size());
    const bool index = end > at + 1 && pointer.find_first_not_of("0123456789", at + 1) >= end;
    had_index |= index;
    out += index ? std::string("/*") : pointer.substr(at, end - at);
    at = end;
  }
  return out;
}

// `pointer` as the key of every pointer a pattern matches alike, or "" where some pattern
// names an index itself (then each pointer is matched against the table anew).
std::string index_free(const std::string& pointer) {
  static const bool patterns_name_no_index = [] {
    bool had_index = false;
    for (const FieldRange& r : field_ranges())
      if (indices_starred(r.pointer, had_index); had_index) return false;
    return true;
  }();
  bool had_index = false;
  return patterns_name_no_index ? indices_starred(pointer, had_index) : "";
}

} // namespace

// A system's links are thousands of fields of a few patterns: each pattern is looked up once.
const FieldRange* find_field_range(Format format, const std::string& pointer) {
  thread_local std::map<std::pair<Format, std::string>, const FieldRange*> found;
  const std::string key = index_free(pointer);
  if (!key.empty())
    if (const auto at = found.find({format, key}); at != found.end()) return at->second;
  const FieldRange* range = nullptr;
  for (const FieldRange& r : field_ranges())
    if (r.format == format && pointer_pattern_matches(r.pointer, pointer)) {
      range = &r;
      break;
    }
  if (!key.empty()) found.emplace(std::pair{format, key}, range);
  return range;
}

bool in_field_range(const FieldRange& range, double value) {
  const bool zero_ok = range.lower == Lower::ZeroOrClosed && value == 0;
  const bool below = !zero_ok && (range.lower == Lower::Open ? !(value > range.min) : !(value >= range.min));
  return !below && value <= range.max;
}

void check_field_range(const FieldRange& range, double value, const std::string& written, const std::string& file,
                       const std::string& pointer) {
  if (in_field_range(range, value)) return;
  const bool above = !(value <= range.max);
  const std::string unit = *range.unit ? std::string(" ") + range.unit : "";
  const std::string bounds = std::string(range.lower == Lower::ZeroOrClosed ? "0 or [" : "") +
                             (range.lower == Lower::Open ? "(" : range.lower == Lower::Closed ? "[" : "") +
                             number_text(range.min) + ", " + number_text(range.max) + "]" + unit;
  std::string rule = range.rule ? range.rule : "";
  if (rule.empty()) {
    if (above) rule = "value.too-large";
    else if (value < 0 && range.lower == Lower::ZeroOrClosed) rule = "value.negative";
    else if (range.min > 0 || range.lower == Lower::Open) rule = value <= 0 ? "value.not-positive" : "value.too-small";
    else rule = "value.negative";
  }
  throw InputError(file, pointer, rule,
                   "got " + written + unit + "; must lie in " + bounds + " (" + range.why + ")");
}

namespace {

// A bound as the docs write it: 2^30 and 2^31-1 for powers of two from 2^20, 1e6-1 for a
// power of ten less one, 1e-12 and 1e15 for powers of ten outside [0.01, 100], else %g.
std::string bound_text(double v) {
  if (v < 0) return "-" + bound_text(-v);
  for (int k = 20; k <= 62; ++k) {
    const double power = std::ldexp(1.0, k);
    if (v == power) return "2^" + std::to_string(k);
    if (v == power - 1) return "2^" + std::to_string(k) + "-1";
  }
  const double exponent = std::round(std::log10(v > 0 ? v : 1));
  const double power = std::pow(10.0, exponent);
  if (v > 0 && (exponent >= 3 || exponent <= -3)) {
    const std::string e = "1e" + std::to_string(static_cast<int>(exponent));
    if (std::fabs(v - power) <= 1e-12 * power) return e;
    if (exponent >= 3 && v == power - 1) return e + "-1";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

} // namespace

std::string range_text(const FieldRange& range) {
  return std::string(range.lower == Lower::ZeroOrClosed ? "0 or [" : range.lower == Lower::Open ? "(" : "[") +
         bound_text(range.min) + ", " + bound_text(range.max) + "]";
}

std::string field_ranges_markdown() {
  std::string out = "| file | field | range | unit | rule | why |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const FieldRange& r : field_ranges()) {
    out += "| " + format_name(r.format) + " | `" + r.pointer + "` | " + range_text(r) + " | " + r.unit + " | ";
    out += (r.rule != nullptr ? std::string("`") + r.rule + "`" : std::string()) + " | " + r.why + " |\n";
  }
  return out;
}

} // namespace ipusim
