#include "sim/io/onnx_annotate.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "sim/io/input_error.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/onnx_proto.hpp"

namespace ipusim {

namespace {

// "/layer1/layer1.0/conv1/Conv" or "layer1.0.conv1.weight" -> its parts; "/" and "." both separate.
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : name) {
    if (c == '/' || c == '.') {
      if (!part.empty()) parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  return parts;
}

bool has_digit(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The name with each run of digits replaced by '#': "layer1.0" -> "layer#.#".
std::string template_of(const std::string& key) {
  std::string t;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(key[i]))) {
      if (t.empty() || t.back() != '#') t += '#';
    } else {
      t += key[i];
    }
  }
  return t;
}

// Every prefix of a name that ends in a numbered part, leaving out the last part (the op
// of a node name, or the parameter of a weight name: neither is a layer).
void numbered_prefixes(const std::string& name, std::map<std::string, std::string>& key_of_template) {
  const auto parts = name_parts(name);
  std::string prefix;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    prefix += (i ? "." : "") + parts[i];
    if (has_digit(parts[i])) key_of_template.emplace(template_of(prefix), prefix);
  }
}

struct Layers {
  std::vector<std::string> names;     // in order of first appearance
  std::vector<int> layer_of_node;     // -1 stem, names.size() head
};

// Repeated blocks: among the name templates with at least two distinct keys, the one
// that names the most nodes (ties: the most keys, i.e. the finer blocks, then the name).
// Nodes without a key belong to the layer before them; nodes before the first layer are
// the stem, nodes after the last layer's last node the head.
Layers detect_layers(const onnx::GraphProto& g, const std::string& file) {
  std::set<std::string> weights;
  for (const auto& t : g.initializer()) weights.insert(t.name());
  std::vector<std::map<std::string, std::string>> keys(static_cast<std::size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    auto& k = keys[static_cast<std::size_t>(i)];
    numbered_prefixes(n.name(), k);
    for (const auto& in : n.input())
      if (weights.count(in)) numbered_prefixes(in, k);
  }
  std::map<std::string, std::pair<int, std::set<std::string>>> coverage;  // template -> nodes, keys
  for (const auto& k : keys)
    for (const auto& [t, key] : k) {
      coverage[t].first++;
      coverage[t].second.insert(key);
    }
  std::optional<std::string> best;
  for (const auto& [t, c] : coverage) {
    if (c.second.size() < 2) continue;
    if (!best) {
      best = t;
      continue;
    }
    const auto& b = coverage[*best];
    if (c.first > b.first || (c.first == b.first && c.second.size() > b.second.size())) best = t;
  }
  if (!best)
    throw InputError(file, "/graph/node", "annotate.no-layers",
                     "found no repeated blocks (node or weight names such as layer.0, layer.1, ...); place the nodes "
                     "by name prefix with --split-at instead");
  Layers layers;
  std::map<std::string, int> index;
  int current = -1, last_keyed = -1;
  layers.layer_of_node.assign(keys.size(), -1);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto it = keys[i].find(*best);
    if (it != keys[i].end()) {
      auto [pos, added] = index.emplace(it->second, static_cast<int>(layers.names.size()));
      if (added) layers.names.push_back(it->second);
      current = std::max(current, pos->second);  // a node never moves back to an earlier layer
      last_keyed = static_cast<int>(i);
    }
    layers.layer_of_node[i] = current;
  }
  for (std::size_t i = static_cast<std::size_t>(last_keyed) + 1; i < keys.size(); ++i)
    layers.layer_of_node[i] = static_cast<int>(layers.names.size());
  return layers;
}

void set_int_attribute(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
  auto* attributes = n.mutable_attribute();
  attributes->erase(std::remove_if(attributes->begin(), attributes->end(),
                                   [&](const onnx::AttributeProto& a) { return a.name() == name; }),
                    attributes->end());
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// IPU and stage of each node by detected layers: the stem on IPU 0 in stage 0, layer
// blocks on their IPUs (stage = rank of the IPU among those used), the head on the last
// used IPU in its stage or back on IPU 0 in a new final stage.
void place_by_layers(const onnx::GraphProto& g, const std::string& file, const AnnotateOptions& o, Annotation& a) {
  const Layers layers = detect_layers(g, file);
  a.layers = layers.names;
  std::int64_t total = 0;
  for (auto n : o.layers_per_ipu) total += n;
  if (total != static_cast<std::int64_t>(layers.names.size())) {
    std::string names;
    for (std::size_t i = 0; i < layers.names.size(); ++i)
      names += (i ? ", " : "") + layers.names[i];
    throw InputError(file, "/graph/node", "annotate.layer-count",
                     "--layers-per-ipu " + join(o.layers_per_ipu) + " places " + std::to_string(total) +
                         " layers, but the model has " + std::to_string(layers.names.size()) + ": " + names);
  }
  std::vector<int> ipu_of_layer;
  std::map<int, int> stage_of_ipu{{0, 0}};
  for (std::size_t ipu = 0; ipu < o.layers_per_ipu.size(); ++ipu)
    for (std::int64_t k = 0; k < o.layers_per_ipu[ipu]; ++k) {
      ipu_of_layer.push_back(static_cast<int>(ipu));
      stage_of_ipu.emplace(static_cast<int>(ipu), 0);
    }
  int rank = 0;
  for (auto& [ipu, stage] : stage_of_ipu) stage = rank++;
  const int last_ipu = stage_of_ipu.rbegin()->first;
  const int head_ipu = o.heads_on_last ? last_ipu : 0;
  const int head_stage = o.heads_on_last ? stage_of_ipu[last_ipu] : rank;
  for (int layer : layers.layer_of_node) {
    if (layer < 0) {
      a.ipu_of_node.push_back(0);
      a.stage_of_node.push_back(0);
    } else if (layer >= static_cast<int>(ipu_of_layer.size())) {
      a.ipu_of_node.push_back(head_ipu);
      a.stage_of_node.push_back(head_stage);
    } else {
      const int ipu = ipu_of_layer[static_cast<std::size_t>(layer)];
      a.ipu_of_node.push_back(ipu);
      a.stage_of_node.push_back(stage_of_ipu[ipu]);
    }
  }
}

std::string without_leading_slash(const std::string& s) { return s.rfind('/', 0) == 0 ? s.substr(1) : s; }

// By name prefixes, as Graphcore's CNN examples' --pipeline-splits: the node whose name
// starts with the k-th prefix, and every node after it, go to IPU k (stage k).
void place_by_prefixes(const onnx::GraphProto& g, const std::string& file, const AnnotateOptions& o, Annotation& a) {
  int ipu = 0;
  for (int i = 0; i < g.node_size(); ++i) {
    const std::string name = without_leading_slash(g.node(i).name());
    if (ipu < static_cast<int>(o.split_at.size()) &&
        name.rfind(without_leading_slash(o.split_at[static_cast<std::size_t>(ipu)]), 0) == 0)
      ++ipu;
    a.ipu_of_node.push_back(ipu);
    a.stage_of_node.push_back(ipu);
  }
  if (ipu < static_cast<int>(o.split_at.size()))
    throw InputError(file, "/graph/node", "annotate.split-not-found",
                     "no node after the previous split has a name starting with \"" +
                         o.split_at[static_cast<std::size_t>(ipu)] + "\" (splits must be given in graph order)");
}

} // namespace

Annotation annotate_onnx_model(const std::string& input, const std::string& output_path,
                               const AnnotateOptions& options) {
  onnx::ModelProto proto = read_onnx_proto(input);
  Annotation a;
  if (options.split_at.empty()) place_by_layers(proto.graph(), input, options, a);
  else place_by_prefixes(proto.graph(), input, options, a);
  auto* nodes = proto.mutable_graph()->mutable_node();
  for (int i = 0; i < nodes->size(); ++i) {
    set_int_attribute(*nodes->Mutable(i), "__ipu_number", a.ipu_of_node[static_cast<std::size_t>(i)]);
    set_int_attribute(*nodes->Mutable(i), "__pipeline_stage", a.stage_of_node[static_cast<std::size_t>(i)]);
  }
  if (std::filesystem::path(output_path).extension() == ".json") {
    Model m = model_from_onnx_proto(proto, input, options.import);
    a.output = model_to_json_text(m, "annotated by ipusim annotate from " + input);
  } else {
    a.output = proto.SerializeAsString();
  }
  return a;
}

} // namespace ipusim
