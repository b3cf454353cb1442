#include "sim/generation/weight_quantisation.hpp"

#include <algorithm>
#include <set>

#include "sim/cost/vector_rates.hpp"
#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

// The weights a format compresses: float, two-dimensional, read by MatMuls and nothing else.
std::map<std::string, const Op*> linear_weights(const Model& m) {
  std::map<std::string, const Op*> first_reader;
  std::set<std::string> read_otherwise;
  for (const Op& op : m.ops)
    for (const std::string& in : op.inputs) {
      const Tensor& t = m.tensor(in);
      if (t.kind != TensorKind::Weight) continue;
      if (op.type == "MatMul" && t.shape.size() == 2 && is_float_dtype(t.dtype)) first_reader.emplace(in, &op);
      else read_otherwise.insert(in);
    }
  for (const std::string& name : read_otherwise) first_reader.erase(name);
  return first_reader;
}

// Float16 scale bytes (and biases for int4) of a [k, n] weight contracted over k.
double scale_bytes(const Generation& g, double k, double n) {
  if (g.weight_format == WeightFormat::Int8) return 2 * n;  // a scale per output column
  return 2 * 2 * n * (k / static_cast<double>(g.group_size));  // a scale and a bias per group
}

// Decompressing `elements` weights: int8 converts and scales (Cast, Mul); int4 unpacks each
// nibble (a mask of its uint16, Cast), turns it into its value (Mul by a constant, as the
// codelet reinterprets it as a float16 subnormal and rescales), scales and adds the group's
// bias (Mul, Add): passes over the float16 output, priced as poplibs' element-wise vertices.
OpCost dequantise(const TileContext& ctx, WeightFormat format, double elements) {
  OpCost c;
  c += vector_pass(ctx, VectorOp::Cast, DType::Float16, elements);
  c += vector_pass(ctx, VectorOp::Mul, DType::Float16, elements);
  if (format == WeightFormat::Int4) {
    c += vector_pass(ctx, VectorOp::Mul, DType::Float16, elements);
    c += vector_pass(ctx, VectorOp::Add, DType::Float16, elements);
  }
  return c;
}

} // namespace

std::map<int, QuantisedIpu> quantise_weights(const Model& m, const Generation& g, const IpuSpec& ipu,
                                             const Execution& ex, const std::string& origin) {
  std::map<int, QuantisedIpu> out;
  if (g.weight_format == WeightFormat::Float16) return out;
  const TileContext ctx{ipu, ipu.tile, static_cast<double>(std::max<std::int64_t>(1, ipu.tiles - ex.io_tiles)), 0,
                        ex.partials_type};
  for (const auto& [name, reader] : linear_weights(m)) {
    const Tensor& w = m.tensor(name);
    const double elements = static_cast<double>(w.elements());
    const std::int64_t k = m.tensor(reader->inputs.at(0)).shape.back();  // contracted dimension
    if (g.weight_format == WeightFormat::Int4 && k % g.group_size != 0)
      throw InputError(origin, "/generation/groupSize", "generation.group-size",
                       "groupSize " + std::to_string(g.group_size) + " does not divide " + std::to_string(k) +
                           ", the contracted dimension of weight \"" + name + "\"" +
                           (ex.tensor_parallel > 1 ? " in each IPU's shard (tensorParallel " +
                                                         std::to_string(ex.tensor_parallel) + ")"
                                                   : std::string()) +
                           " (its groups must tile it, as PopXL's group_quantise_weights requires): give a "
                           "divisor of it");
    QuantisedIpu& q = out[static_cast<int>(reader->virtual_graph.value_or(0))];
    const double bits = g.weight_format == WeightFormat::Int8 ? 8 : 4;
    q.weights += elements;
    q.float16_bytes += 2 * elements;
    q.stored_bytes += elements * bits / 8 + scale_bytes(g, static_cast<double>(k), elements / static_cast<double>(k));
    q.largest_float16_bytes = std::max(q.largest_float16_bytes, 2 * elements);
    q.dequantise_s += dequantise(ctx, g.weight_format, elements).cycles() / ipu.clock_hz;
  }
  return out;
}

} // namespace ipusim
