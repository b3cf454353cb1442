#pragma once
// The units the planner splits a model into: its layers (repeated blocks of op names such as
// layer0/..., layer1/...; the ops before the first layer are the stem, those after the last
// the heads), or each op when the names show no repeated blocks. And a model re-annotated
// with a split: contiguous blocks of layers per IPU, the stem on IPU 0 in stage 0, the heads
// on the last IPU or back on IPU 0 in a final stage, as PopART's BERT places them.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/model.hpp"

namespace ipusim {

struct LayerStructure {
  std::vector<std::string> names;  // the layers (or ops), in order
  std::vector<int> unit_of_op;     // by op position: -1 stem, names.size() heads, else the layer
  bool by_ops = false;             // no repeated blocks: every op is a unit
  bool has_stem() const;
  bool has_heads() const;
};

LayerStructure detect_layers(const Model& model);

// `layers_per_ipu[i]` layers on IPU i (each >= 1, summing to the layer count).
Model place_layers(const Model& model, const LayerStructure& layers, const std::vector<int>& layers_per_ipu,
                   bool heads_on_last);

} // namespace ipusim
