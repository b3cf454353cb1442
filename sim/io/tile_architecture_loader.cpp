#include "sim/io/tile_architecture_loader.hpp"

#include <cmath>

namespace ipusim {

const std::vector<TileParameter>& tile_parameters() {
  using T = TileArchitecture;
  static const std::vector<TileParameter> table{
      {"workerContexts", "worker threads per tile, barrel-scheduled: each issues every workerContexts cycles", 1, 16,
       true, nullptr, &T::worker_contexts},
      {"dataPathBytes", "bytes one vector instruction loads and processes (64-bit: f16v4, f32v2)", 2, 64, true, nullptr,
       &T::data_path_bytes},
      {"ampConvUnits/float16", "AMP conv units (output channels per pass) for float16 inputs", 1, 128, true, nullptr,
       &T::amp_conv_units_f16},
      {"ampConvUnits/float32", "AMP conv units for float32 inputs", 1, 128, true, nullptr, &T::amp_conv_units_f32},
      {"ampInputLoadElemsPerCycle/float16", "float16 inputs each AMP unit takes per cycle", 1, 64, true, nullptr,
       &T::amp_input_load_elements_f16},
      {"ampInputLoadElemsPerCycle/float32", "float32 inputs each AMP unit takes per cycle", 1, 64, true, nullptr,
       &T::amp_input_load_elements_f32},
      {"ampChainLength", "input loads chained per AMP pass: input channels per group = load elements x this", 1, 32,
       true, nullptr, &T::amp_chain_length},
      {"ampWeightLoadBytesPerCycle", "bytes of AMP weights (coefficients) loaded per cycle", 1, 1024, false,
       &T::amp_weight_load_bytes_per_cycle, nullptr},
      {"tilesPerExchangeBus", "tiles sharing an exchange bus; they receive one broadcast at that multiple of the rate",
       1, 16, true, nullptr, &T::tiles_per_exchange_bus},
      {"memcpyBytesPerCycle", "bytes an on-tile copy moves per cycle", 0.25, 256, false, &T::memcpy_bytes_per_cycle,
       nullptr},
      {"computeSetSyncCycles", "cycles of the IPU-wide sync that ends every compute set", 0, 1e6, false,
       &T::compute_set_sync_cycles, nullptr},
      {"exchangeOverheadCycles", "fixed cycles of an on-chip exchange phase, however few bytes it moves", 0, 1e6, false,
       &T::exchange_overhead_cycles, nullptr},
      {"minBytesPerTile", "smallest slice of a tensor the linear tile mapping puts on a tile", 0, 1 << 24, false,
       &T::min_bytes_per_tile, nullptr},
  };
  return table;
}

namespace {

// The range is checked by the reader: field_ranges() holds a line per parameter.
double read_parameter(ObjectReader& r, const std::string& key, const TileParameter& p) {
  return p.integer ? static_cast<double>(r.required_int(key)) : r.required_number(key);
}

} // namespace

TileArchitecture read_tile_architecture(ObjectReader reader) {
  TileArchitecture arch;
  std::vector<std::pair<std::string, ObjectReader>> nested;
  for (const TileParameter& p : tile_parameters()) {
    const auto slash = p.key.find('/');
    ObjectReader* r = &reader;
    std::string key = p.key;
    if (slash != std::string::npos) {
      const std::string outer = p.key.substr(0, slash);
      key = p.key.substr(slash + 1);
      if (!reader.has(outer)) continue;
      auto it = nested.begin();
      while (it != nested.end() && it->first != outer) ++it;
      if (it == nested.end()) {
        nested.emplace_back(outer, reader.object(outer));
        it = nested.end() - 1;
      }
      r = &it->second;
    }
    if (!r->has(key)) continue;
    const double v = read_parameter(*r, key, p);
    if (p.integer) arch.*p.whole = static_cast<int>(v);
    else arch.*p.real = v;
  }
  for (const auto& [outer, r] : nested) r.finish();
  reader.finish();
  return arch;
}

} // namespace ipusim
