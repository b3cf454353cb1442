// Ops that move data rather than compute. Reshape, Transpose, Flatten, Squeeze, Unsqueeze
// and Concat are views in Poplar (PopART inplaces them): they cost nothing themselves, and
// the reader of a transposed tensor pays to exchange it into its own layout. Slice is a
// view too, but its gradient fills the rest of the input's gradient with zeros. Gather
// (an embedding lookup) is popops' multiSlice, planned over the tiles holding the table;
// its gradient is a zeroed dense gradient updated at the looked-up rows (multiUpdateAdd).
#include <algorithm>
#include <cmath>

#include "sim/cost/op_families.hpp"
#include "sim/cost/vector_rates.hpp"

namespace ipusim {

namespace {

// popops multiSlice / multiUpdateAdd (lib/popops/PerformanceEstimation.cpp,
// getMultiSliceCycleEstimate): per worker ~30 cycles, then for each index it sees, 19 cycles
// plus 2 per 2-element vector copied when the row is on this tile, 8 when it is not.
// The table is split over tiles by rows and by columns, and the indices by groups; the
// split with the fewest cycles is taken, then the looked-up rows travel to their readers.
OpCost multi_slice(const TileContext& ctx, double table_rows, double row_elements, double lookups, DType dtype,
                   bool update) {
  const double workers = ctx.arch.worker_contexts;
  const double bytes = static_cast<double>(dtype_bytes(dtype));
  double best = -1;
  for (double rows_split = 1; rows_split <= ctx.tiles && rows_split <= table_rows; rows_split *= 2)
    for (double cols_split = 1; rows_split * cols_split <= ctx.tiles && cols_split <= row_elements; cols_split *= 2)
      for (double lookup_split = 1; rows_split * cols_split * lookup_split <= ctx.tiles && lookup_split <= lookups;
           lookup_split *= 2) {
        const double seen = std::ceil(lookups / lookup_split);
        const double hits = std::ceil(seen / rows_split);
        const double vectors = std::ceil(std::ceil(row_elements / cols_split) / 2);
        const double per_worker = std::ceil(hits / workers) * (19 + vectors * (update ? 4 : 2)) +
                                  std::ceil((seen - hits) / workers) * 8;
        const double cycles = workers * (30 + per_worker);
        if (best < 0 || cycles < best) best = cycles;
      }
  const double moved = lookups * row_elements * bytes;
  return compute_set(ctx, std::max(best, 0.0), moved / ctx.tiles);
}

} // namespace

OpCost data_movement_family(const TileContext& ctx, const OpWork& w) {
  OpCost c;
  const Operand& out = w.outputs.at(0);
  if (w.op_type == "Slice") {
    if (w.pass == Pass::Backward && w.inputs.at(0).needs_gradient) {
      c += vector_pass(ctx, VectorOp::Zero, out.dtype, w.inputs[0].elements());
      c += vector_pass(ctx, VectorOp::Copy, out.dtype, out.elements(), elements_per_tile(ctx, out.elements(), out.dtype));
    }
    return c;
  }
  if (w.op_type == "Gather") {
    const Operand& table = w.inputs.at(0);
    const double rows = static_cast<double>(table.shape.empty() ? 1 : table.shape[0]);
    const double row_elements = table.elements() / rows;
    const double lookups = w.inputs.size() > 1 ? w.inputs[1].elements() : out.elements() / row_elements;
    if (w.pass == Pass::Forward) return multi_slice(ctx, rows, row_elements, lookups, table.dtype, false);
    if (table.needs_gradient) {
      OpCost g = vector_pass(ctx, VectorOp::Zero, table.dtype, table.elements());
      g += multi_slice(ctx, rows, row_elements, lookups, table.dtype, true);
      // An embedding table's gradient is its weight gradient (W) when the table is a weight.
      if (table.kind == TensorKind::Weight) g.weight_gradient_cycles = g.cycles();
      c += g;
    }
    c += accumulate_weight_gradients(ctx, w);
    return c;
  }
  return c;  // views
}

} // namespace ipusim
