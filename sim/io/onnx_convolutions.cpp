#include "sim/io/onnx_convolutions.hpp"

#include <map>
#include <optional>
#include <vector>

#include "sim/io/input_error.hpp"
#include "sim/io/onnx_structure_check.hpp"

namespace ipusim {

namespace {

bool is_default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool has_attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return true;
  return false;
}

// Dims known without inference: an initializer's, or a graph input's where every dim is a number.
using KnownDims = std::map<std::string, std::optional<std::vector<std::int64_t>>>;

void complete_graph(onnx::GraphProto& g, const std::string& pointer, KnownDims known, const std::string& path) {
  for (const auto& t : g.initializer()) known[t.name()] = std::vector<std::int64_t>(t.dims().begin(), t.dims().end());
  for (const auto& v : g.input()) {
    if (known.count(v.name()) && known[v.name()]) continue;  // an initializer that is also an input
    std::optional<std::vector<std::int64_t>> dims;
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      dims.emplace();
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) {
          dims.reset();
          break;
        }
        dims->push_back(d.dim_value());
      }
    }
    known[v.name()] = dims;
  }
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto& n = *g.mutable_node(i);
    const std::string at = pointer + "/node/" + std::to_string(i);
    for (int k = 0; k < n.attribute_size(); ++k) {
      auto& a = *n.mutable_attribute(k);
      const std::string sub = at + "/attribute/" + std::to_string(k);
      if (a.has_g()) complete_graph(*a.mutable_g(), sub + "/g", known, path);
      for (int j = 0; j < a.graphs_size(); ++j) complete_graph(*a.mutable_graphs(j), sub + "/graphs/" + std::to_string(j), known, path);
    }
    // A node's outputs shadow what an outer scope knew by their name.
    const int w = is_default_domain(n) ? convolution_weight_input(n.op_type()) : -1;
    if (w >= 0 && n.input_size() > w && !has_attribute(n, "kernel_shape")) {
      const auto found = known.find(n.input(w));
      if (found == known.end() || !found->second)
        throw InputError(path, at + "/input/" + std::to_string(w), "onnx.bad-node",
                         "node \"" + short_name(n.name()) + "\" (" + n.op_type() + ") has no kernel_shape and its weight \"" +
                             short_name(n.input(w)) + "\" is computed by the graph, so ONNX's shape inference would "
                             "take the kernel from a shape ipusim cannot check first; give the node its kernel_shape "
                             "attribute (exporters such as torch.onnx write it)");
      const std::vector<std::int64_t>& dims = *found->second;
      if (dims.size() >= 3) {  // smaller: the structure check has refused it already
        auto* a = n.add_attribute();
        a->set_name("kernel_shape");
        a->set_type(onnx::AttributeProto::INTS);
        for (std::size_t d = 2; d < dims.size(); ++d) a->add_ints(dims[d]);
      }
    }
    for (const auto& out : n.output()) known[out] = std::nullopt;
  }
}

} // namespace

int convolution_weight_input(const std::string& op_type) {
  static const std::map<std::string, int> kWeightInput = {{"Conv", 1}, {"ConvTranspose", 1}, {"ConvInteger", 1}, {"QLinearConv", 3}};
  const auto found = kWeightInput.find(op_type);
  return found == kWeightInput.end() ? -1 : found->second;
}

void complete_kernel_shapes(onnx::ModelProto& proto, const std::string& path) {
  complete_graph(*proto.mutable_graph(), "/graph", {}, path);
}

void check_convolution_ranks(const onnx::ModelProto& proto, const std::string& path) {
  const auto& g = proto.graph();
  std::map<std::string, int> rank;
  auto note = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      rank[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  for (const auto& v : g.input()) note(v);
  for (const auto& v : g.value_info()) note(v);
  for (const auto& v : g.output()) note(v);
  for (const auto& t : g.initializer()) rank[t.name()] = t.dims_size();
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const int w = is_default_domain(n) ? convolution_weight_input(n.op_type()) : -1;
    if (w < 0 || n.input_size() <= w) continue;
    const auto x_rank = rank.find(n.input(0)), w_rank = rank.find(n.input(w));
    if (x_rank == rank.end() || w_rank == rank.end()) continue;
    if (w_rank->second >= 3 && w_rank->second == x_rank->second) continue;
    throw InputError(path, "/graph/node/" + std::to_string(i) + "/input/" + std::to_string(w), "onnx.bad-node",
                     "node \"" + short_name(n.name()) + "\" (" + n.op_type() + "): its weight \"" + short_name(n.input(w)) +
                         "\" has rank " + std::to_string(w_rank->second) + " and its input \"" + short_name(n.input(0)) +
                         "\" rank " + std::to_string(x_rank->second) +
                         "; a convolution's weight is [M, C/group, k1, ...], of the input's rank (at least 3): check "
                         "the weight and its kernel_shape, and export the model again");
  }
}

} // namespace ipusim
