#include "sim/io/onnx_annotate.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "sim/io/input_error.hpp"
#include "sim/io/layer_names.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/onnx_proto.hpp"

namespace ipusim {

namespace {

struct Layers {
  std::vector<std::string> names;     // in order of first appearance
  std::vector<int> layer_of_node;     // -1 stem, names.size() head
};

// The layers by their names (sim/io/layer_names.hpp, shared with `ipusim plan`).
Layers detect_layers(const onnx::GraphProto& g, const std::string& file) {
  std::set<std::string> weights;
  for (const auto& t : g.initializer()) weights.insert(t.name());
  std::vector<NamedNode> nodes(static_cast<std::size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    auto& node = nodes[static_cast<std::size_t>(i)];
    node.name = n.name();
    for (const auto& in : n.input())
      if (weights.count(in)) node.weights.push_back(in);
  }
  DetectedLayers found = detect_layers_by_name(nodes);
  if (found.pattern.empty())
    throw InputError(file, "/graph/node", "annotate.no-layers",
                     "found no repeated blocks (node or weight names such as layer.0, layer.1, ...); place the nodes "
                     "by name prefix with --split-at instead");
  return {std::move(found.names), std::move(found.layer_of_node)};
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

// Phased execution, as Graphcore's PopXL examples cut a model: the stem in phase 0, detected
// layer i in phase i + 1, the head in the last phase; phase p on virtual graph p % stages (PopART's
// placement rule for ExecutionPhaseSettings.stages), pipeline stage 0.
void place_by_phases(const onnx::GraphProto& g, const std::string& file, const AnnotateOptions& o, Annotation& a) {
  const Layers layers = detect_layers(g, file);
  a.layers = layers.names;
  const int head = static_cast<int>(layers.names.size()) + 1;
  for (int layer : layers.layer_of_node) {
    const int phase = layer < 0 ? 0 : std::min(layer + 1, head);
    a.phase_of_node.push_back(phase);
    a.ipu_of_node.push_back(phase % o.phased_stages);
    a.stage_of_node.push_back(0);
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
  if (options.phased_stages > 0) place_by_phases(proto.graph(), input, options, a);
  else if (options.split_at.empty()) place_by_layers(proto.graph(), input, options, a);
  else place_by_prefixes(proto.graph(), input, options, a);
  auto* nodes = proto.mutable_graph()->mutable_node();
  for (int i = 0; i < nodes->size(); ++i) {
    set_int_attribute(*nodes->Mutable(i), "__ipu_number", a.ipu_of_node[static_cast<std::size_t>(i)]);
    set_int_attribute(*nodes->Mutable(i), "__pipeline_stage", a.stage_of_node[static_cast<std::size_t>(i)]);
    if (!a.phase_of_node.empty())
      set_int_attribute(*nodes->Mutable(i), "__execution_phase", a.phase_of_node[static_cast<std::size_t>(i)]);
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
