#include "sim/search/layers.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace ipusim {

namespace {

std::string first_part(const std::string& name) { return name.substr(0, name.find('/')); }

// "layer12" -> "layer#": blocks that differ only in their numbers repeat.
std::string masked(const std::string& key) {
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(key[i]))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += key[i];
    }
  }
  return out;
}

} // namespace

bool LayerStructure::has_stem() const {
  return std::find(unit_of_op.begin(), unit_of_op.end(), -1) != unit_of_op.end();
}

bool LayerStructure::has_heads() const {
  const int heads = static_cast<int>(names.size());
  return std::find(unit_of_op.begin(), unit_of_op.end(), heads) != unit_of_op.end();
}

LayerStructure detect_layers(const Model& model) {
  std::map<std::string, std::set<std::string>> keys_by_mask;
  for (const Op& op : model.ops) {
    const std::string key = first_part(op.name);
    if (masked(key) != key) keys_by_mask[masked(key)].insert(key);
  }
  // The repeated pattern with the most members: "layer#" in BERT, not "embedding" or "mlm".
  std::string pattern;
  std::size_t members = 1;
  for (const auto& [mask, keys] : keys_by_mask)
    if (keys.size() > members) pattern = mask, members = keys.size();
  LayerStructure out;
  if (pattern.empty()) {
    out.by_ops = true;
    for (std::size_t i = 0; i < model.ops.size(); ++i) {
      out.names.push_back(model.ops[i].name);
      out.unit_of_op.push_back(static_cast<int>(i));
    }
    return out;
  }
  std::map<std::string, int> index;
  int current = -1;
  std::size_t last_layer_op = 0;
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const std::string key = first_part(model.ops[i].name);
    if (masked(key) == pattern) {
      auto [pos, added] = index.emplace(key, static_cast<int>(out.names.size()));
      if (added) out.names.push_back(key);
      current = std::max(current, pos->second);  // an op never moves back to an earlier layer
      last_layer_op = i;
    }
    out.unit_of_op.push_back(current);
  }
  for (std::size_t i = last_layer_op + 1; i < model.ops.size(); ++i)
    out.unit_of_op[i] = static_cast<int>(out.names.size());
  return out;
}

Model place_layers(const Model& model, const LayerStructure& layers, const std::vector<int>& layers_per_ipu,
                   bool heads_on_last) {
  std::vector<int> ipu_of_layer;
  for (std::size_t ipu = 0; ipu < layers_per_ipu.size(); ++ipu)
    for (int k = 0; k < layers_per_ipu[ipu]; ++k) ipu_of_layer.push_back(static_cast<int>(ipu));
  const int last = static_cast<int>(layers_per_ipu.size()) - 1;
  Model out = model;
  for (std::size_t i = 0; i < out.ops.size(); ++i) {
    const int unit = layers.unit_of_op[i];
    int ipu = 0, stage = 0;
    if (unit >= static_cast<int>(ipu_of_layer.size())) {
      ipu = heads_on_last ? last : 0;
      stage = heads_on_last ? last : last + 1;
    } else if (unit >= 0) {
      ipu = stage = ipu_of_layer[static_cast<std::size_t>(unit)];
    }
    out.ops[i].virtual_graph = ipu;
    out.ops[i].pipeline_stage = stage;
  }
  return out;
}

} // namespace ipusim
