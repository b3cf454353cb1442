#pragma once
// The shared vocabulary of the "poplibs" cost model: how a tensor spreads over tiles,
// how long a vertex takes on a tile's workers, and what a compute set costs around its
// vertices (the exchange that feeds it and the sync that ends it). The op families
// (matmul, elementwise, normalisation, ...) build their costs from these.
#include "sim/cost/cost_model.hpp"

namespace ipusim {

struct TileContext {
  const IpuSpec& ipu;
  const TileArchitecture& arch;
  double tiles;              // tiles that compute (all but the I/O tiles)
  double temp_budget_bytes;  // per tile, for matmul and convolution temporaries
  DType partials;            // accumulation type of matmuls and convolutions
};

// One worker's rate for a vertex, as poplibs' cycle estimators give it: `overhead`
// worker cycles per vertex, then `cycles_per_loop` for every `elements_per_loop` elements.
struct VertexRate {
  double cycles_per_loop = 1;
  double elements_per_loop = 1;
  double overhead = 0;
};

// Elements on the fullest tile when `elements` of `dtype` are mapped linearly (Poplar's
// default): a grain of one vector, at least minBytesPerTile per tile, over all tiles.
double elements_per_tile(const TileContext& ctx, double elements, DType dtype);
// Tiles a linearly mapped tensor occupies.
double tiles_occupied(const TileContext& ctx, double elements, DType dtype);

// Tile cycles of a MultiVertex that splits `elements_on_tile` over the worker threads:
// the slowest worker's cycles times the worker count (each issues once per that many cycles).
double multivertex_cycles(const TileContext& ctx, double elements_on_tile, const VertexRate& rate);

// Cycles for one tile to receive `bytes` over the exchange (`rate_multiplier` > 1 when tile
// pairs share a bus and receive one broadcast together).
double exchange_cycles(const TileContext& ctx, double bytes, double rate_multiplier = 1);

// One compute set: the exchange phase feeding it (its fixed overhead when any bytes move),
// its vertices, and the IPU-wide sync ending it.
OpCost compute_set(const TileContext& ctx, double compute_cycles, double exchange_bytes_per_tile = 0,
                   double exchange_rate_multiplier = 1);

} // namespace ipusim
