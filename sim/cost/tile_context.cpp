#include "sim/cost/tile_context.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim {

double elements_per_tile(const TileContext& ctx, double elements, DType dtype) {
  if (elements <= 0) return 0;
  const double grain = ctx.arch.vector_width(dtype);
  const double min_elements = std::max(grain, std::ceil(ctx.arch.min_bytes_per_tile / static_cast<double>(dtype_bytes(dtype))));
  const double balanced = std::ceil(elements / ctx.tiles / grain) * grain;
  return std::min(elements, std::max(balanced, min_elements));
}

double tiles_occupied(const TileContext& ctx, double elements, DType dtype) {
  if (elements <= 0) return 0;
  return std::ceil(elements / elements_per_tile(ctx, elements, dtype));
}

double multivertex_cycles(const TileContext& ctx, double elements_on_tile, const VertexRate& rate) {
  if (elements_on_tile <= 0) return 0;
  const double workers = ctx.arch.worker_contexts;
  const double per_worker = std::ceil(elements_on_tile / workers);
  const double loops = std::ceil(per_worker / rate.elements_per_loop);
  return workers * (rate.overhead + loops * rate.cycles_per_loop);
}

double exchange_cycles(const TileContext& ctx, double bytes, double rate_multiplier) {
  if (bytes <= 0) return 0;
  return std::ceil(bytes / (ctx.ipu.exchange_bytes_per_cycle_per_tile * rate_multiplier));
}

OpCost compute_set(const TileContext& ctx, double compute_cycles, double exchange_bytes_per_tile,
                   double exchange_rate_multiplier) {
  OpCost c;
  c.compute_cycles = compute_cycles;
  if (exchange_bytes_per_tile > 0)
    c.exchange_cycles = ctx.arch.exchange_overhead_cycles +
                        exchange_cycles(ctx, exchange_bytes_per_tile, exchange_rate_multiplier);
  c.sync_cycles = ctx.arch.compute_set_sync_cycles;
  return c;
}

} // namespace ipusim
