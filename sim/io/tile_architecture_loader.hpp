#pragma once
// The "tileArchitecture" block of an IPU config: each parameter declared once, with its
// default (the GC200's), its physical range and what it means, Ramulator-style. The
// loader, the physical-range table (field_ranges.cpp), `ipusim list` and docs/formats.md
// all read this one table.
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/io/json_reader.hpp"

namespace ipusim {

struct TileParameter {
  std::string key;          // JSON key; "a/b" for a nested one
  std::string description;
  double min, max;          // the physical range, inclusive
  bool integer;
  double TileArchitecture::*real = nullptr;
  int TileArchitecture::*whole = nullptr;
};

const std::vector<TileParameter>& tile_parameters();

// Reads the block; every key is optional (defaults are the GC200's); ranges are checked
// by the reader against field_ranges().
TileArchitecture read_tile_architecture(ObjectReader reader);

} // namespace ipusim
