#include "sim/io/field_ranges.hpp"

#include <cmath>
#include <cstdio>
#include <deque>

#include "sim/io/input_error.hpp"
#include "sim/io/tile_architecture_loader.hpp"

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
constexpr double kMaxIpus = 1e6;           // ipuCount's bound: no system comes near it
constexpr Lower kOpen = Lower::Open, kClosed = Lower::Closed, kZeroOr = Lower::ZeroOrClosed;
// The shortest time or amount a nonzero value may have (below it, SimGrid loses precision).
constexpr double kTinySeconds = 1e-12;
} // namespace

const std::vector<FieldRange>& field_ranges() {
  // Bounds are generous around real hardware and models but keep every product the
  // simulator forms (FLOPs x micro-batch / rates / clock, bytes / bandwidth) finite and
  // far from double's limits, so no input yields inf, NaN or a zero rate.
  static const std::vector<FieldRange> table{
      // ---- config: the IPU
      {Format::Config, "/ipu/tiles", 1, 1e5, kClosed, "tiles", nullptr, "GC2 has 1216, GC200 1472"},
      {Format::Config, "/ipu/clockHz", 1e6, 1e11, kClosed, "Hz", nullptr, "1 MHz to 100 GHz; IPUs run at 1.3-1.9 GHz"},
      {Format::Config, "/ipu/flopsPerCyclePerTile/float16", 1e-3, 1e5, kClosed, "FLOP/cycle", nullptr,
       "per tile; GC200: 128 (AMP)"},
      {Format::Config, "/ipu/flopsPerCyclePerTile/float32", 1e-3, 1e5, kClosed, "FLOP/cycle", nullptr,
       "per tile; GC200: 32"},
      {Format::Config, "/ipu/sramBytesPerTile", 1, 1073741824.0, kClosed, "B", nullptr,
       "per tile, at most 1 GiB; GC200: 624 KiB"},
      {Format::Config, "/ipu/exchangeBytesPerCyclePerTile", 1e-3, 1e4, kClosed, "B/cycle", nullptr, "GC200: 4"},
      {Format::Config, "/ipu/syncCycles", 1e-3, 1e9, kZeroOr, "cycles", nullptr, "on-chip sync per op"},
      {Format::Config, "/ipu/minElementsPerTile", 1, kInt31, kClosed, "elements", nullptr, "an op's finest split"},
      {Format::Config, "/ipu/codeBytesPerOp", 0, 1073741824.0, kClosed, "B", nullptr, "per tile an op uses"},
      {Format::Config, "/ipu/efficiency/*", 1e-4, 1, kClosed, "", "value.bad-efficiency",
       "a fraction of peak, at least 1e-4"},
      // ---- config: the system
      {Format::Config, "/ipuCount", 1, kMaxIpus, kClosed, "IPUs", nullptr, "an IPU-POD256 has 256"},
      {Format::Config, "/rackIpus", 1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
       "the IPUs of one IPU-Link domain: 64 in an IPU-POD64 rack (and divides ipuCount)"},
      {Format::Config, "/syncLatencyPerHopSeconds", kTinySeconds, 1, kZeroOr, "s", nullptr, "Graphcore's model: 15 ns"},
      {Format::Config, "/syncSeconds", kTinySeconds, 1, kZeroOr, "s", nullptr, "one inter-IPU sync"},
      {Format::Config, "/pricePerIpuHour", 1e-6, 1e6, kZeroOr, "per IPU-hour", nullptr,
       "what an IPU-hour costs, in any currency: outputs give a cost per million tokens"},
      {Format::Config, "/links/*/ipus/*", 0, kMaxIpus - 1, kClosed, "", "link.bad-ends", "an IPU id (and below ipuCount)"},
      {Format::Config, "/links/*/bandwidthBytesPerSecond", 1e3, 1e15, kClosed, "B/s", nullptr,
       "1 kB/s to 1 PB/s; an IPU-Link: 32 GB/s"},
      {Format::Config, "/links/*/latencySeconds", kTinySeconds, 10, kZeroOr, "s", nullptr, "an IPU-Link: about 1 us"},
      {Format::Config, "/hostLink/bandwidthBytesPerSecond", 1e3, 1e15, kClosed, "B/s", nullptr,
       "PCIe Gen4 x16: about 7 GB/s usable"},
      {Format::Config, "/hostLink/latencySeconds", kTinySeconds, 10, kZeroOr, "s", nullptr, "a few us"},
      {Format::Config, "/hostLink/sharedBy", 1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
       "IPUs behind one host link: 4 on an M2000 (and divides ipuCount)"},
      {Format::Config, "/hostLink/gatewayBandwidthBytesPerSecond", 1e3, 1e15, kZeroOr, "B/s", nullptr,
       "an IPU-Gateway's PCIe Gen4 x8 to one IPU: about 16 GB/s"},
      {Format::Config, "/hostLink/runOverheadSeconds", kTinySeconds, 10, kZeroOr, "s", nullptr,
       "the host's turn between program runs: tens of ms"},
      {Format::Config, "/streamingMemory/bandwidthBytesPerSecond", 1e3, 1e15, kClosed, "B/s", nullptr,
       "an M2000's DDR4: tens of GB/s"},
      {Format::Config, "/streamingMemory/latencySeconds", kTinySeconds, 10, kZeroOr, "s", nullptr, "about 1 us"},
      {Format::Config, "/streamingMemory/sharedBy", 1, kMaxIpus, kClosed, "IPUs", "link.bad-sharing",
       "IPUs behind one DDR4 channel group: 4 on an M2000 (and divides ipuCount)"},
      // ---- model
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
      // ---- scenario
      {Format::Scenario, "/execution/microBatchSize", 1, 1e6, kClosed, "samples", nullptr, "per micro-batch"},
      {Format::Scenario, "/generation/promptTokens", 1, 1e7, kClosed, "tokens", nullptr, "the prompt read at once (prefill)"},
      {Format::Scenario, "/generation/newTokens", 1, 1e7, kClosed, "tokens", nullptr, "tokens generated one at a time"},
      {Format::Scenario, "/generation/tokensPerRun", 1, 1e7, kClosed, "tokens", nullptr,
       "tokens generated on the device per program run; 1 = a host round trip per token"},
      {Format::Scenario, "/generation/groupSize", 4, 65536, kClosed, "weights", nullptr,
       "int4: weights sharing a scale and bias, a multiple of 4"},
      {Format::Scenario, "/execution/gradientAccumulation", 1, 1e8, kClosed, "micro-batches", nullptr,
       "G; the run's own size is checked against memory before simulating (scenario.too-large)"},
      {Format::Scenario, "/execution/batchesPerStep", 1, 1e8, kClosed, "", nullptr,
       "per step; the run's own size is checked against memory before simulating (scenario.too-large)"},
      {Format::Scenario, "/execution/replicas", 1, kMaxIpus, kClosed, "", nullptr,
       "no more than IPUs can exist (and the replicas' IPUs no more than ipuCount)"},
      {Format::Scenario, "/execution/tensorParallel", 1, kMaxIpus, kClosed, "IPUs", nullptr,
       "IPUs each virtual IPU is sharded over (tensor parallelism); Graphcore's PopXL models use 4, 8 or 16"},
      {Format::Scenario, "/execution/placement/*", 0, kMaxIpus - 1, kClosed, "", "scenario.bad-placement",
       "an IPU id"},
      {Format::Scenario, "/execution/numIOTiles", 0, 1e5, kClosed, "tiles", nullptr,
       "tiles set aside for overlapped host I/O; Graphcore's BERT uses 64 or 128"},
      {Format::Scenario, "/execution/sequencesPerSample", 1, 1e6, kClosed, "", nullptr,
       "packed inputs: sequences in one sample on average (packed BERT: about 2)"},
      {Format::Scenario, "/execution/executionPhaseSettings/stages", 1, 2, kClosed, "", "scenario.bad-phase-settings",
       "1: every phase on the same IPUs; 2: phases alternate between two sets of IPUs (PopART's default)"},
      {Format::Scenario, "/execution/batchSerializationSettings/factor", 0, 1e6, kClosed, "", nullptr,
       "slices of a micro-batch in each phase (phased mode); 0 or 1: off"},
      {Format::Scenario, "/execution/accumulateOuterFragmentSettings/excludedVirtualGraphs/*", 0, kMaxIpus - 1,
       kClosed, "", nullptr, "a virtual graph id"},
      {Format::Scenario, "/modelBatchSize", 1, 1e6, kClosed, "samples", nullptr,
       "the batch dimension of an imported ONNX model"},
      // ---- sweep
      {Format::Sweep, "/axes/*/range/from", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/range/to", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/range/step", 0, 1e300, kOpen, "", "sweep.bad-range", "greater than zero"},
      {Format::Sweep, "/axes/*/zip/*/range/from", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/zip/*/range/to", -1e300, 1e300, kClosed, "", "sweep.bad-range", "any finite number"},
      {Format::Sweep, "/axes/*/zip/*/range/step", 0, 1e300, kOpen, "", "sweep.bad-range", "greater than zero"},
  };
  static const std::vector<FieldRange> with_tile_architecture = [] {
    std::vector<FieldRange> all = table;
    // The tile's parameters carry their bounds in their own table; pointers need storage.
    static std::deque<std::string> pointers;
    for (const TileParameter& p : tile_parameters()) {
      pointers.push_back("/ipu/tileArchitecture/" + p.key);
      all.push_back({Format::Config, pointers.back().c_str(), p.min, p.max, kClosed, "", nullptr,
                     p.description.c_str()});
    }
    return all;
  }();
  return with_tile_architecture;
}

namespace {

bool matches(const char* pattern, const std::string& pointer) {
  std::size_t p = 0;
  const std::string pat(pattern);
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

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

} // namespace

const FieldRange* find_field_range(Format format, const std::string& pointer) {
  for (const FieldRange& r : field_ranges())
    if (r.format == format && matches(r.pointer, pointer)) return &r;
  return nullptr;
}

void check_field_range(const FieldRange& range, double value, const std::string& written, const std::string& file,
                       const std::string& pointer) {
  const bool zero_ok = range.lower == Lower::ZeroOrClosed && value == 0;
  const bool below = !zero_ok && (range.lower == Lower::Open ? !(value > range.min) : !(value >= range.min));
  const bool above = !(value <= range.max);
  if (!below && !above) return;
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
