#pragma once
// The units the planner splits a model into: its layers, found by the layer detector
// `ipusim annotate` uses (sim/io/layer_names.hpp: repeated blocks of op and weight names such
// as layer0/..., h.0.attn..., encoder.layer.11...; the ops before the first layer are the stem,
// those after the last the heads), or each op when the names show no repeated blocks. And a
// model re-annotated with a split: contiguous blocks of layers per IPU (IPU 0 may hold only
// the stem, the last IPU only the heads), the stem on IPU 0 in stage 0, the heads on the last
// IPU or back on IPU 0 in a final stage, as PopART's BERT and GPT place them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/layer_names.hpp"
#include "sim/io/model.hpp"

namespace ipusim {

struct LayerStructure {
  std::vector<std::string> names;  // the layers (or ops), in order
  std::vector<int> unit_of_op;     // by op position: -1 stem, names.size() heads, else the layer
  bool by_ops = false;             // no repeated blocks: every op is a unit
  std::string pattern;             // the layer's name template ("h.#"), as the detector chose it
  std::vector<LayerTemplate> candidates;  // the templates it weighed, best first
  int units_per_layer = 1;         // 2: units are half layers (halve_layers)
  bool has_stem() const;
  bool has_heads() const;
};

LayerStructure detect_layers(const Model& model);

// The layers cut in two where one activation alone crosses from the first half to the second
// and each half holds a matmul or convolution: a transformer layer's attention and feed-forward
// halves (after the attention's residual and norm), as Graphcore's MLPerf BERT places them apart
// (att_ffn_placement). Unit 2l is layer l's first half, 2l+1 its second. Empty when a layer has
// no such cut (or units are ops): the planner then splits whole layers only.
std::optional<LayerStructure> halve_layers(const Model& model, const LayerStructure& layers);

// `units` units as layers: "3", or "3.5" when units are half layers.
std::string layer_count_text(int units, int units_per_layer);

// What the detector found, for `plan --explain-layers`: the template, the layers with their op
// counts, the stem and heads, and the templates it passed over.
std::string explain_layers(const LayerStructure& layers);

// `layers_per_ipu[i]` layers on IPU i (summing to the layer count; IPU 0 may hold none when
// the model has a stem, the last IPU none when it holds the heads).
Model place_layers(const Model& model, const LayerStructure& layers, const std::vector<int>& layers_per_ipu,
                   bool heads_on_last);

// A model's annotated placement in the planner's terms: "[3,7,7,7] heads on IPU0" when each
// IPU holds a contiguous block of layers in IPU order, else "layers on IPUs 0,1,1,2,...".
std::string describe_placement(const Model& model, const LayerStructure& layers);

} // namespace ipusim
