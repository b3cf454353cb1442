#include "sim/io/onnx_tied_weights.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace ipusim {

namespace {

using T = onnx::TensorProto;

bool is_float(int type) { return type == T::FLOAT || type == T::FLOAT16 || type == T::BFLOAT16 || type == T::DOUBLE; }

// The values of an initializer as bytes (raw_data, or FLOAT's float_data); empty without data.
std::string data_bytes(const T& t) {
  if (!t.raw_data().empty()) return t.raw_data();
  if (t.data_type() == T::FLOAT && t.float_data_size() > 0) {
    std::string s(static_cast<std::size_t>(t.float_data_size()) * sizeof(float), '\0');
    std::memcpy(s.data(), t.float_data().data(), s.size());
    return s;
  }
  return {};
}

// A [rows, cols] matrix of `element`-byte values, transposed.
std::string transposed(const std::string& bytes, std::size_t rows, std::size_t cols, std::size_t element) {
  std::string out(bytes.size(), '\0');
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      std::memcpy(&out[(j * rows + i) * element], &bytes[(i * cols + j) * element], element);
  return out;
}

// True when every element of `bytes` (elements of `element` bytes) equals the first: a
// constant-initialised tensor (zeros, ones), whose equality with another says nothing.
bool uniform(const std::string& bytes, std::size_t element) {
  for (std::size_t i = element; i + element <= bytes.size(); i += element)
    if (std::memcmp(&bytes[i], bytes.data(), element) != 0) return false;
  return true;
}

// Folded transposed copies: an initializer B, [c, r], holding the transpose of initializer
// A, [r, c], as PyTorch's constant folding writes a tied head's Transpose of the embedding.
// Equal values alone never tie two weights: two distinct parameters may be equal (both
// zero-initialised, say), and the exporter has already merged the ones it shares. A
// uniform A (all elements equal) is never tied either: its transpose equals any uniform
// tensor of that shape.
void folded_copies(const onnx::GraphProto& g, const std::set<std::string>& constants,
                   std::map<std::string, WeightCopy>& copies) {
  auto candidate = [&](const T& t) { return is_float(t.data_type()) && !constants.count(t.name()) && t.dims_size() == 2; };
  // Only 2-D initializers whose reversed shape also occurs are compared: one pass over their data.
  std::map<std::pair<int, std::vector<std::int64_t>>, int> shapes;
  for (const auto& t : g.initializer())
    if (candidate(t)) ++shapes[{t.data_type(), {t.dims().begin(), t.dims().end()}}];
  std::unordered_map<std::string, int> by_data;  // data -> first initializer holding it
  for (int i = 0; i < g.initializer_size(); ++i) {
    const T& t = g.initializer(i);
    if (!candidate(t)) continue;
    const std::vector<std::int64_t> reversed{t.dims(1), t.dims(0)};
    if (shapes[{t.data_type(), reversed}] < (t.dims(0) == t.dims(1) ? 2 : 1)) continue;
    const std::string bytes = data_bytes(t);
    if (!bytes.empty()) by_data.emplace(bytes, i);
  }
  for (int i = 0; i < g.initializer_size(); ++i) {
    const T& a = g.initializer(i);
    if (!candidate(a) || copies.count(a.name())) continue;
    const std::vector<std::int64_t> reversed{a.dims(1), a.dims(0)};
    if (shapes[{a.data_type(), reversed}] < (a.dims(0) == a.dims(1) ? 2 : 1)) continue;
    const std::string bytes = data_bytes(a);
    const auto rows = static_cast<std::size_t>(a.dims(0)), cols = static_cast<std::size_t>(a.dims(1));
    if (bytes.empty() || rows * cols == 0 || bytes.size() % (rows * cols) != 0) continue;
    const std::size_t element = bytes.size() / (rows * cols);
    if (uniform(bytes, element)) continue;
    const auto it = by_data.find(transposed(bytes, rows, cols, element));
    if (it == by_data.end() || it->second == i) continue;
    const T& b = g.initializer(it->second);
    if (b.data_type() == a.data_type() && !copies.count(b.name())) copies[b.name()] = {a.name(), true};
  }
}

} // namespace

bool separated_weight(const onnx::GraphProto& g, const onnx::NodeProto& n) {
  if (n.op_type() != "Identity" || n.input_size() != 1 || n.output_size() != 1 || n.output(0).empty()) return false;
  const auto& inits = g.initializer();
  return std::any_of(inits.begin(), inits.end(),
                     [&](const T& t) { return t.name() == n.input(0) && is_float(t.data_type()); });
}

std::map<std::string, WeightCopy> find_weight_copies(const onnx::GraphProto& g, const std::set<std::string>& constants,
                                                     std::set<int>& dropped) {
  std::map<std::string, WeightCopy> copies;
  folded_copies(g, constants, copies);
  std::set<std::string> weights;
  for (const auto& t : g.initializer())
    if (is_float(t.data_type()) && !constants.count(t.name())) weights.insert(t.name());
  // Transpose / Identity nodes on a weight (or on a copy of one).
  std::map<std::string, int> copy_node;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if ((n.op_type() != "Transpose" && n.op_type() != "Identity") || n.input_size() != 1 || n.output_size() != 1 ||
        n.output(0).empty() || !weights.count(n.input(0)))
      continue;
    if (n.op_type() == "Identity" && !copies.count(n.input(0)) && separated_weight(g, n)) continue;
    const auto& input = g.initializer();
    const auto w = std::find_if(input.begin(), input.end(), [&](const T& t) { return t.name() == n.input(0); });
    bool transpose = n.op_type() == "Transpose";
    if (transpose) {
      if (w == input.end() || w->dims_size() != 2) continue;
      bool other_perm = false;
      for (const auto& a : n.attribute()) {
        if (a.name() != "perm") continue;
        const bool swap = a.ints_size() == 2 && a.ints(0) == 1 && a.ints(1) == 0;
        const bool keep = a.ints_size() == 2 && a.ints(0) == 0 && a.ints(1) == 1;
        if (keep) transpose = false;
        else if (!swap) other_perm = true;
      }
      if (other_perm) continue;
    }
    WeightCopy c{n.input(0), transpose};
    if (const auto base = copies.find(n.input(0)); base != copies.end())
      c = {base->second.weight, base->second.transposed != transpose};
    copies[n.output(0)] = c;
    copy_node[n.output(0)] = i;
    weights.insert(n.output(0));
  }
  // A transposed copy is read as the weight only by a MatMul or Gemm taking it as B (transB
  // expresses it); any other reader keeps the copy as it is.
  std::map<std::string, bool> readable;
  for (const auto& n : g.node())
    for (int k = 0; k < n.input_size(); ++k) {
      const auto it = copies.find(n.input(k));
      if (it == copies.end()) continue;
      const bool ok = !it->second.transposed || ((n.op_type() == "MatMul" || n.op_type() == "Gemm") && k == 1);
      auto [r, fresh] = readable.emplace(n.input(k), ok);
      if (!fresh) r->second = r->second && ok;
    }
  for (const auto& o : g.output())
    if (copies.count(o.name())) readable[o.name()] = false;  // a graph output is a tensor of its own
  for (auto it = copies.begin(); it != copies.end();) {
    const auto r = readable.find(it->first);
    if (r != readable.end() && r->second) {
      if (const auto node = copy_node.find(it->first); node != copy_node.end()) dropped.insert(node->second);
      ++it;
    } else {
      it = copies.erase(it);
    }
  }
  return copies;
}

} // namespace ipusim
