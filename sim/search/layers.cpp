#include "sim/search/layers.hpp"

#include <algorithm>
#include <set>

namespace ipusim {

bool LayerStructure::has_stem() const {
  return std::find(unit_of_op.begin(), unit_of_op.end(), -1) != unit_of_op.end();
}

bool LayerStructure::has_heads() const {
  const int heads = static_cast<int>(names.size());
  return std::find(unit_of_op.begin(), unit_of_op.end(), heads) != unit_of_op.end();
}

LayerStructure detect_layers(const Model& model) {
  std::vector<NamedNode> nodes;
  for (const Op& op : model.ops) {
    NamedNode node{op.name, {}};
    for (const auto& t : op.inputs)
      if (auto it = model.tensors.find(t); it != model.tensors.end() && it->second.kind == TensorKind::Weight)
        node.weights.push_back(t);
    nodes.push_back(std::move(node));
  }
  DetectedLayers found = detect_layers_by_name(nodes);
  LayerStructure out;
  out.candidates = std::move(found.candidates);
  if (found.pattern.empty()) {
    out.by_ops = true;
    for (std::size_t i = 0; i < model.ops.size(); ++i) {
      out.names.push_back(model.ops[i].name);
      out.unit_of_op.push_back(static_cast<int>(i));
    }
    return out;
  }
  out.pattern = std::move(found.pattern);
  out.names = std::move(found.names);
  out.unit_of_op = std::move(found.layer_of_node);
  return out;
}

namespace {

bool is_heavy(const Op& op) { return op.type == "MatMul" || op.type == "Gemm" || op.type == "Conv"; }

// Position (within `ops`, the layer's op positions in model order) of the first op of the second
// half: the cut that the fewest non-weight tensors cross, each half holding a heavy op; the
// latest of equals (past a post-norm layer's norm, which Graphcore's BERT keeps with the
// attention). -1 when no cut has a heavy op on both sides, or more than one tensor crosses
// every such cut (not two halves that pass one activation).
int half_cut(const Model& model, const std::vector<std::size_t>& ops) {
  const auto is_weight = [&](const std::string& t) {
    const auto it = model.tensors.find(t);
    return it != model.tensors.end() && it->second.kind == TensorKind::Weight;
  };
  std::vector<int> heavy_before(ops.size() + 1, 0);
  for (std::size_t j = 0; j < ops.size(); ++j) heavy_before[j + 1] = heavy_before[j] + is_heavy(model.ops[ops[j]]);
  int best = -1;
  std::size_t best_crossing = 2;
  for (std::size_t cut = 1; cut < ops.size(); ++cut) {
    if (heavy_before[cut] == 0 || heavy_before[ops.size()] == heavy_before[cut]) continue;
    std::set<std::string> produced_after, crossing;
    for (std::size_t j = cut; j < ops.size(); ++j) {
      const Op& op = model.ops[ops[j]];
      for (const auto& t : op.inputs)
        if (!is_weight(t) && !produced_after.count(t)) crossing.insert(t);
      produced_after.insert(op.outputs.begin(), op.outputs.end());
    }
    if (crossing.size() <= best_crossing) best_crossing = crossing.size(), best = static_cast<int>(cut);
  }
  return best;
}

} // namespace

std::optional<LayerStructure> halve_layers(const Model& model, const LayerStructure& layers) {
  if (layers.by_ops || layers.units_per_layer != 1 || layers.names.empty()) return std::nullopt;
  const int count = static_cast<int>(layers.names.size());
  std::vector<std::vector<std::size_t>> ops_of(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < layers.unit_of_op.size(); ++i) {
    const int unit = layers.unit_of_op[i];
    if (unit >= 0 && unit < count) ops_of[static_cast<std::size_t>(unit)].push_back(i);
  }
  LayerStructure out = layers;
  out.units_per_layer = 2;
  out.names.clear();
  for (std::size_t i = 0; i < out.unit_of_op.size(); ++i)
    if (layers.unit_of_op[i] == count) out.unit_of_op[i] = 2 * count;  // the heads
  for (int l = 0; l < count; ++l) {
    const auto& ops = ops_of[static_cast<std::size_t>(l)];
    const int cut = half_cut(model, ops);
    if (cut < 0) return std::nullopt;
    for (std::size_t j = 0; j < ops.size(); ++j)
      out.unit_of_op[ops[j]] = 2 * l + (static_cast<int>(j) >= cut ? 1 : 0);
    const std::string& name = layers.names[static_cast<std::size_t>(l)];
    out.names.push_back(name + " (first half: " + model.ops[ops.front()].name + " ...)");
    out.names.push_back(name + " (second half: " + model.ops[ops[static_cast<std::size_t>(cut)]].name + " ...)");
  }
  return out;
}

std::string layer_count_text(int units, int units_per_layer) {
  if (units_per_layer == 1 || units % 2 == 0) return std::to_string(units / units_per_layer);
  return std::to_string(units / 2) + ".5";
}

std::string explain_layers(const LayerStructure& layers) {
  std::string out;
  if (layers.by_ops) {
    out = "no repeated block in the op or weight names (such as layer0/..., h.0.attn...): every op is a unit (" +
          std::to_string(layers.names.size()) + " ops)\n";
  } else {
    const int units = static_cast<int>(layers.names.size());
    std::vector<int> ops(static_cast<std::size_t>(units) + 2, 0);
    for (int u : layers.unit_of_op) ++ops[static_cast<std::size_t>(u + 1)];
    out = std::to_string(units) + " layers of the template \"" + layers.pattern + "\": ";
    for (int l = 0; l < units; ++l)
      out += (l ? ", " : "") + layers.names[static_cast<std::size_t>(l)] + " (" +
             std::to_string(ops[static_cast<std::size_t>(l + 1)]) + " ops)";
    out += "\nstem (before the first layer, on IPU 0): " + std::to_string(ops.front()) + " ops";
    out += "\nheads (after the last layer): " + std::to_string(ops.back()) + " ops\n";
  }
  if (!layers.candidates.empty()) {
    out += "templates weighed (nodes named, layers it would give):";
    for (std::size_t i = 0; i < layers.candidates.size() && i < 6; ++i)
      out += (i ? ", " : " ") + layers.candidates[i].pattern + " " + std::to_string(layers.candidates[i].nodes) + "/" +
             std::to_string(layers.candidates[i].keys);
    if (layers.candidates.size() > 6) out += ", ... (" + std::to_string(layers.candidates.size()) + " in all)";
    out += "\n";
  }
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

std::string describe_placement(const Model& model, const LayerStructure& layers) {
  const int units = static_cast<int>(layers.names.size());
  std::vector<std::int64_t> ipu_of_layer(static_cast<std::size_t>(units), -1);
  std::int64_t heads = -1, width = 0;
  for (std::size_t i = 0; i < model.ops.size(); ++i) {
    const int unit = layers.unit_of_op[i];
    const std::int64_t ipu = model.ops[i].virtual_graph.value_or(0);
    width = std::max(width, ipu + 1);
    if (unit == units && heads < 0) heads = ipu;
    if (unit >= 0 && unit < units && ipu_of_layer[static_cast<std::size_t>(unit)] < 0) ipu_of_layer[static_cast<std::size_t>(unit)] = ipu;
  }
  // Contiguous: the layers' IPUs never go back (an IPU may hold none).
  const bool contiguous = std::is_sorted(ipu_of_layer.begin(), ipu_of_layer.end());
  std::string out = contiguous ? "[" : layers.units_per_layer == 2 ? "half layers on IPUs [" : "layers on IPUs [";
  if (contiguous) {
    std::vector<int> per_ipu(static_cast<std::size_t>(width), 0);
    for (auto ipu : ipu_of_layer) ++per_ipu[static_cast<std::size_t>(ipu)];
    for (std::size_t i = 0; i < per_ipu.size(); ++i)
      out += (i ? "," : "") + layer_count_text(per_ipu[i], layers.units_per_layer);
  } else {
    for (std::size_t l = 0; l < ipu_of_layer.size(); ++l) out += (l ? "," : "") + std::to_string(ipu_of_layer[l]);
  }
  out += "]";
  if (heads >= 0) out += " heads on IPU" + std::to_string(heads);
  return out;
}

} // namespace ipusim
