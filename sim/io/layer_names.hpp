#pragma once
// The one layer detector of `ipusim annotate` and `ipusim plan`: a model's layers are the
// repeated blocks of its names. Every prefix of a node's name (or of the name of a weight it
// reads) that ends in a numbered part is a key ("layer3", "h.0", "encoder.layer.11",
// "layers.3"); keys with their numbers masked are templates ("h.#"); the template naming the
// most nodes (ties: more keys, then the name) is the layer. The last part of a name is never
// a key: it is the op ("Gemm_12", "Identity_3") or the parameter ("weight"). Nodes without a
// key of that template belong to the layer before them; those before the first layer are the
// stem (embeddings), those after the last layer's last node the heads. Works on PyTorch
// exports (module paths such as "/transformer/h.0/attn/Gemm", or op-numbered nodes whose
// weights carry the module path) and on ipusim's zoo ("layer0/attention/q", "h11/ffn/1").
#include <string>
#include <vector>

namespace ipusim {

struct NamedNode {
  std::string name;
  std::vector<std::string> weights;  // names of the weights (initializers) it reads
};

struct LayerTemplate {
  std::string pattern;  // "transformer.h.#"
  int nodes = 0;        // nodes carrying a key of it
  int keys = 0;         // distinct keys: the number of layers it would give
};

struct DetectedLayers {
  std::string pattern;               // the chosen template; empty when no name repeats
  std::vector<std::string> names;    // the layers' keys, in order of first appearance
  std::vector<int> layer_of_node;    // -1 stem, names.size() heads, else the layer
  std::vector<LayerTemplate> candidates;  // every template with two keys or more, best first
};

DetectedLayers detect_layers_by_name(const std::vector<NamedNode>& nodes);

} // namespace ipusim
