#include "sim/io/decode_step.hpp"

#include <algorithm>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

bool is_layout_op(const std::string& type) {
  static const std::set<std::string> layout{"Transpose", "Reshape", "Expand", "Unsqueeze", "Squeeze",
                                            "Flatten",   "Identity", "Tile"};
  return layout.count(type) > 0;
}

bool is_activation(const Model& m, const std::string& name) {
  const auto it = m.tensors.find(name);
  return it != m.tensors.end() && it->second.kind == TensorKind::Activation;
}

// A MatMul of two activations: attention's Q K^T or P V (a projection reads a weight).
bool is_attention_product(const Model& m, const Op& op) {
  return op.type == "MatMul" && op.inputs.size() == 2 && !op.outputs.empty() && is_activation(m, op.inputs[0]) &&
         is_activation(m, op.inputs[1]);
}

bool ends_square(const std::vector<std::int64_t>& shape) {
  return shape.size() >= 2 && shape[shape.size() - 1] == shape[shape.size() - 2] && shape.back() > 1;
}

std::map<std::string, const Op*> producers(const Model& m) {
  std::map<std::string, const Op*> p;
  for (const Op& op : m.ops)
    for (const auto& out : op.outputs) p[out] = &op;
  return p;
}

// The keys (or values) an attention product reads, and back through layout ops, into
// `cached`; returns the new token's keys or values: the first tensor before them that a
// layout op does not make (computed for the new token only, then appended to the cache), or
// the product's own input when no layout op makes it.
std::string walk_cached(const std::map<std::string, const Op*>& producer, const std::string& read,
                        std::set<std::string>& cached) {
  std::string t = read;
  cached.insert(t);
  for (;;) {
    const auto it = producer.find(t);
    if (it == producer.end() || !is_layout_op(it->second->type) || it->second->inputs.empty()) return t;
    const std::string source = it->second->inputs[0];
    const auto made = producer.find(source);
    if (made == producer.end() || !is_layout_op(made->second->type) || cached.count(source)) return source;
    cached.insert(source);
    t = source;
  }
}

[[noreturn]] void refuse(const std::string& origin, const std::string& rule, const std::string& message) {
  throw InputError(origin, "/", rule, message);
}

void check_unambiguous(const Model& m, const SequenceLayout& layout, const std::vector<std::string>& new_kv,
                       const std::string& origin) {
  const std::int64_t s = layout.sequence;
  for (const auto& [name, t] : m.tensors)
    if (t.kind == TensorKind::Weight && std::count(t.shape.begin(), t.shape.end(), s) > 0)
      refuse(origin, "generation.ambiguous-sequence",
             "the sequence length " + std::to_string(s) + " is also a dimension of weight \"" + name +
                 "\": the sequence cannot be told apart from the model's widths; make the model with another "
                 "sequence length (make_llama_model.py --seq)");
  for (const auto& name : new_kv)
    if (m.tensor(name).shape.empty() || m.tensor(name).shape.back() == s)
      refuse(origin, "generation.ambiguous-sequence",
             "the sequence length " + std::to_string(s) + " equals the attention heads' width (\"" + name +
                 "\"): make the model with another sequence length");
}

} // namespace

std::optional<std::int64_t> attention_sequence_length(const Model& m) {
  for (const Op& op : m.ops)
    if (is_attention_product(m, op) && ends_square(m.tensor(op.outputs.at(0)).shape))
      return m.tensor(op.outputs.at(0)).shape.back();
  return std::nullopt;
}

SequenceLayout find_sequence_layout(const Model& m, const std::string& origin) {
  SequenceLayout layout;
  const auto producer = producers(m);
  std::vector<std::string> new_kv;
  std::map<std::string, int> reader_ipu;
  for (const Op& op : m.ops) {
    if (!is_attention_product(m, op)) continue;
    const auto& out = m.tensor(op.outputs.at(0)).shape;
    const auto& first = m.tensor(op.inputs[0]).shape;
    const bool scores = ends_square(out), context = ends_square(first) && !scores;
    if (!scores && !context) continue;
    const std::int64_t s = scores ? out.back() : first.back();
    if (layout.sequence != 0 && s != layout.sequence)
      refuse(origin, "generation.ambiguous-sequence",
             "attention products \"" + op.name + "\" and earlier ones disagree on the sequence length (" +
                 std::to_string(s) + " and " + std::to_string(layout.sequence) + ")");
    layout.sequence = s;
    const std::string stop = walk_cached(producer, op.inputs[1], layout.cached);
    new_kv.push_back(stop);
    reader_ipu[stop] = static_cast<int>(op.virtual_graph.value_or(0));
  }
  if (layout.sequence == 0)
    refuse(origin, "generation.no-attention",
           "no attention in the model (a MatMul of two activations whose scores are [.., S, S]): generation needs a "
           "decoder's self-attention to find its sequence length and KV cache");
  check_unambiguous(m, layout, new_kv, origin);
  for (const auto& name : new_kv) {
    const Tensor& t = m.tensor(name);
    layout.cache_dtype = t.dtype;
    layout.cache_elements_per_token_by_ipu[reader_ipu[name]] +=
        static_cast<double>(t.elements()) / static_cast<double>(layout.sequence);
  }
  return layout;
}

Model resequenced_model(const Model& model, const SequenceLayout& layout, std::int64_t sequence) {
  Model m = model;
  for (auto& [name, t] : m.tensors)
    if (t.kind != TensorKind::Weight) std::replace(t.shape.begin(), t.shape.end(), layout.sequence, sequence);
  return m;
}

Model decode_step_model(const Model& model, const SequenceLayout& layout, std::int64_t context) {
  Model m = model;
  const std::int64_t s = layout.sequence;
  for (auto& [name, t] : m.tensors) {
    if (t.kind == TensorKind::Weight) continue;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < t.shape.size(); ++i)
      if (t.shape[i] == s) at.push_back(i);
    if (at.empty()) continue;
    const bool cached = layout.cached.count(name) > 0;
    for (std::size_t i : at) t.shape[i] = cached ? context : 1;
    if (at.size() >= 2 && !cached) t.shape[at.back()] = context;  // scores and probabilities: [.., 1, context]
  }
  return m;
}

} // namespace ipusim
