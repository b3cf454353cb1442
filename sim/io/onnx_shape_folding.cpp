#include "sim/io/onnx_shape_folding.hpp"

#include "sim/base/forked.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "sim/io/onnx_structure_check.hpp"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace ipusim {

namespace {

// An integer tensor whose values are known before running the model.
struct IntValue {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> values;
  bool boolean = false;  // an Equal's result (0 or 1), written back as BOOL
};

// Shape arithmetic reads small vectors: a longer integer tensor is left to ONNX.
constexpr std::size_t kMaxFoldedValues = 1 << 16;

std::optional<IntValue> int_value(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  if (t.data_type() != T::INT64 && t.data_type() != T::INT32) return std::nullopt;
  IntValue v;
  v.dims.assign(t.dims().begin(), t.dims().end());
  const std::int64_t n = checked_element_count(t.dims());
  if (n < 0 || static_cast<std::size_t>(n) > kMaxFoldedValues) return std::nullopt;
  const auto count = static_cast<std::size_t>(n);
  if (t.data_type() == T::INT64) {
    if (t.int64_data_size() == n) v.values.assign(t.int64_data().begin(), t.int64_data().end());
    else if (t.raw_data().size() == count * 8) {
      v.values.resize(count);
      if (count) std::memcpy(v.values.data(), t.raw_data().data(), t.raw_data().size());
    } else return std::nullopt;
  } else {
    if (t.int32_data_size() == n) v.values.assign(t.int32_data().begin(), t.int32_data().end());
    else if (t.raw_data().size() == count * 4) {
      std::vector<std::int32_t> raw(count);
      if (count) std::memcpy(raw.data(), t.raw_data().data(), t.raw_data().size());
      v.values.assign(raw.begin(), raw.end());
    } else return std::nullopt;
  }
  return v;
}

// x op y for the four operations, or nothing when it overflows or divides by zero.
std::optional<std::int64_t> arithmetic(const std::string& op, std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  if (op == "Add") return __builtin_add_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (op == "Sub") return __builtin_sub_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (op == "Mul") return __builtin_mul_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
  return x / y;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
  const auto* a = attribute(n, name);
  return a ? a->i() : fallback;
}

std::int64_t clamp_index(std::int64_t i, std::int64_t size) {
  if (i < 0) i += size;
  return std::max<std::int64_t>(0, std::min(i, size));
}

// a op b element by element over two rank-0/1 values, one of them possibly a single value.
template <typename Op>
std::optional<IntValue> elementwise(const IntValue& a, const IntValue& b, Op op) {
  const std::size_t size = std::max(a.values.size(), b.values.size());
  if ((a.values.size() != size && a.values.size() != 1) || (b.values.size() != size && b.values.size() != 1))
    return std::nullopt;
  IntValue v;
  v.dims = a.values.size() >= b.values.size() ? a.dims : b.dims;
  for (std::size_t k = 0; k < size; ++k) {
    const auto r = op(a.values[a.values.size() == 1 ? 0 : k], b.values[b.values.size() == 1 ? 0 : k]);
    if (!r) return std::nullopt;
    v.values.push_back(*r);
  }
  return v;
}

class Folder {
public:
  explicit Folder(onnx::ModelProto& proto) : proto_(proto) {
    for (const auto& t : proto_.graph().initializer())
      if (auto v = int_value(t)) known_[t.name()] = *v;
    for (const auto& imp : proto_.opset_import())
      if (imp.domain().empty() || imp.domain() == "ai.onnx") opset_ = imp.version();
  }

  // One pass in graph order; true when a node was folded.
  bool pass() {
    shapes_.clear();
    const auto& g = proto_.graph();
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto& v : *list) note_shape(v);
    bool folded = false;
    auto* nodes = proto_.mutable_graph()->mutable_node();
    for (int i = 0; i < nodes->size(); ++i) {
      onnx::NodeProto& n = *nodes->Mutable(i);
      if (n.output_size() != 1 || n.output(0).empty() || known_.count(n.output(0))) continue;
      if (n.op_type() == "Constant") {
        if (const auto* a = attribute(n, "value"))
          if (auto v = int_value(a->t())) known_[n.output(0)] = *v;
        continue;
      }
      auto v = evaluate(n);
      if (!v) continue;
      known_[n.output(0)] = *v;
      to_constant(n, *v);
      folded = true;
    }
    return folded;
  }

private:
  void note_shape(const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes_[v.name()] = dims;
  }

  const IntValue* input(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size() || n.input(i).empty()) return nullptr;
    const auto it = known_.find(n.input(i));
    return it == known_.end() ? nullptr : &it->second;
  }

  // The shape-arithmetic ops PyTorch's exporter writes (x.size(d), chunk, view(-1, ...)),
  // on integer tensors of rank 0 or 1. Anything else is left to ONNX.
  std::optional<IntValue> evaluate(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    if (op == "Shape") return shape_of(n);
    const IntValue* a = input(n, 0);
    if (!a || a->dims.size() > 1) return std::nullopt;
    if (op == "Identity" || (op == "Cast" && (int_attribute(n, "to", 0) == onnx::TensorProto::INT64 ||
                                              int_attribute(n, "to", 0) == onnx::TensorProto::INT32)))
      return *a;
    if (op == "Unsqueeze" || op == "Squeeze") return squeezed(op == "Squeeze", *a);
    if (op == "Reshape") return reshaped(n, *a);
    if (op == "Gather") return gathered(n, *a);
    if (op == "Concat") return concatenated(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      const IntValue* b = input(n, 1);
      if (!b || b->dims.size() > 1 || a->boolean || b->boolean) return std::nullopt;
      return elementwise(*a, *b, [&](std::int64_t x, std::int64_t y) { return arithmetic(op, x, y); });
    }
    // PyTorch's expand() and repeat_interleave() (grouped-query attention repeating K and V)
    // export their target shape as Where(Equal(shape, ConstantOfShape(-1)), ones, shape).
    if (op == "ConstantOfShape") return constant_of_shape(n, *a);
    if (op == "Equal") {
      const IntValue* b = input(n, 1);
      if (!b || b->dims.size() > 1) return std::nullopt;
      auto v = elementwise(*a, *b, [](std::int64_t x, std::int64_t y) { return std::optional<std::int64_t>(x == y); });
      if (v) v->boolean = true;
      return v;
    }
    if (op == "Where") {
      const IntValue *x = input(n, 1), *y = input(n, 2);
      if (!a->boolean || !x || !y || x->dims.size() > 1 || y->dims.size() > 1 || x->boolean != y->boolean)
        return std::nullopt;
      return where(*a, *x, *y);
    }
    if (op == "Slice" && opset_ >= 10) return sliced(n, *a);
    return std::nullopt;
  }

  // Shape(x) with its start and end attributes, from the shapes known.
  std::optional<IntValue> shape_of(const onnx::NodeProto& n) const {
    const auto it = n.input_size() ? shapes_.find(n.input(0)) : shapes_.end();
    if (it == shapes_.end()) return std::nullopt;
    const auto size = static_cast<std::int64_t>(it->second.size());
    const std::int64_t start = clamp_index(int_attribute(n, "start", 0), size);
    const std::int64_t end = clamp_index(int_attribute(n, "end", size), size);
    IntValue v;
    for (std::int64_t k = start; k < end; ++k) v.values.push_back(it->second[static_cast<std::size_t>(k)]);
    v.dims = {static_cast<std::int64_t>(v.values.size())};
    return v;
  }

  // Squeeze of a one-value vector to a scalar, Unsqueeze of a scalar to a one-value vector.
  static std::optional<IntValue> squeezed(bool squeeze, const IntValue& a) {
    IntValue v = a;
    v.dims = squeeze || !a.dims.empty() ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{1};
    if (squeeze && a.values.size() != 1) return std::nullopt;
    if (!squeeze && !a.dims.empty()) return std::nullopt;
    return v;
  }

  // A shape vector flattened, view(-1) of a size.
  std::optional<IntValue> reshaped(const onnx::NodeProto& n, const IntValue& a) const {
    const IntValue* target = input(n, 1);
    if (!target || target->dims.size() != 1 || a.boolean) return std::nullopt;
    const auto count = static_cast<std::int64_t>(a.values.size());
    IntValue v = a;
    if (target->values.empty() && count == 1) v.dims = {};
    else if (target->values.size() == 1 && (target->values[0] == -1 || target->values[0] == count)) v.dims = {count};
    else return std::nullopt;
    return v;
  }

  std::optional<IntValue> gathered(const onnx::NodeProto& n, const IntValue& a) const {
    const IntValue* idx = input(n, 1);
    if (!idx || a.dims.size() != 1 || int_attribute(n, "axis", 0) != 0) return std::nullopt;
    IntValue v;
    v.dims = idx->dims;
    for (auto i : idx->values) {
      if (i < 0) i += static_cast<std::int64_t>(a.values.size());
      if (i < 0 || i >= static_cast<std::int64_t>(a.values.size())) return std::nullopt;
      v.values.push_back(a.values[static_cast<std::size_t>(i)]);
    }
    return v;
  }

  std::optional<IntValue> concatenated(const onnx::NodeProto& n) const {
    IntValue v;
    for (int i = 0; i < n.input_size(); ++i) {
      const IntValue* x = input(n, i);
      if (!x || x->dims.size() != 1 || v.values.size() + x->values.size() > kMaxFoldedValues) return std::nullopt;
      v.values.insert(v.values.end(), x->values.begin(), x->values.end());
    }
    v.dims = {static_cast<std::int64_t>(v.values.size())};
    return v;
  }

  // Slice (opset 10 on: starts, ends and steps as inputs) of a vector, one axis, step 1.
  std::optional<IntValue> sliced(const onnx::NodeProto& n, const IntValue& a) const {
    const IntValue *starts = input(n, 1), *ends = input(n, 2), *steps = input(n, 4);
    if (!starts || !ends || a.dims.size() != 1 || starts->values.size() != 1 || ends->values.size() != 1 ||
        (steps && (steps->values.size() != 1 || steps->values[0] != 1)))
      return std::nullopt;
    const auto size = static_cast<std::int64_t>(a.values.size());
    const std::int64_t s = clamp_index(starts->values[0], size), e = clamp_index(ends->values[0], size);
    IntValue v;
    for (std::int64_t k = s; k < e; ++k) v.values.push_back(a.values[static_cast<std::size_t>(k)]);
    v.dims = {static_cast<std::int64_t>(v.values.size())};
    return v;
  }

  // Where(condition, x, y) over rank-0/1 values, each one value or all the same length.
  static std::optional<IntValue> where(const IntValue& condition, const IntValue& x, const IntValue& y) {
    const std::size_t size = std::max({condition.values.size(), x.values.size(), y.values.size()});
    for (const IntValue* v : {&condition, &x, &y})
      if (v->values.size() != size && v->values.size() != 1) return std::nullopt;
    auto at = [](const IntValue& v, std::size_t k) { return v.values[v.values.size() == 1 ? 0 : k]; };
    IntValue out;
    for (const IntValue* v : {&condition, &x, &y})
      if (v->values.size() == size) out.dims = v->dims;
    out.boolean = x.boolean;
    for (std::size_t k = 0; k < size; ++k) out.values.push_back(at(condition, k) ? at(x, k) : at(y, k));
    return out;
  }

  // ConstantOfShape(shape) with an integer fill value: a vector of known length.
  static std::optional<IntValue> constant_of_shape(const onnx::NodeProto& n, const IntValue& shape) {
    if (shape.dims.size() != 1 || shape.values.size() > 1) return std::nullopt;
    const std::int64_t length = shape.values.empty() ? 1 : shape.values[0];
    if (length < 0 || static_cast<std::size_t>(length) > kMaxFoldedValues) return std::nullopt;
    const auto* value = attribute(n, "value");  // without one, ONNX fills float zeros: not shape arithmetic
    if (value == nullptr) return std::nullopt;
    const auto v = int_value(value->t());
    if (!v || v->values.size() != 1) return std::nullopt;
    const std::int64_t fill = v->values[0];
    IntValue out;
    out.dims = shape.values.empty() ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{length};
    out.values.assign(static_cast<std::size_t>(length), fill);
    return out;
  }

  // The node becomes a Constant holding its value: it keeps its place (error pointers name
  // node indices) and ONNX's inference reads the value from there.
  static void to_constant(onnx::NodeProto& n, const IntValue& v) {
    onnx::TensorProto t;
    t.set_data_type(v.boolean ? onnx::TensorProto::BOOL : onnx::TensorProto::INT64);
    for (auto d : v.dims) t.add_dims(d);
    for (auto x : v.values) {
      if (v.boolean) t.add_int32_data(static_cast<std::int32_t>(x));
      else t.add_int64_data(x);
    }
    n.clear_input();
    n.clear_attribute();
    n.clear_domain();
    n.set_op_type("Constant");
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
  }

  onnx::ModelProto& proto_;
  std::int64_t opset_ = 0;
  std::map<std::string, IntValue> known_;
  std::map<std::string, std::vector<std::int64_t>> shapes_;
};

} // namespace

namespace {

bool inference_in_process = false;

// The names with a type in `g` (its inputs, initializers, outputs and inferred value_info) or
// in an enclosing graph, then every Shape and Size of `g` and its subgraphs checked against them.
void check_shape_reads(const onnx::GraphProto& g, const std::string& pointer, std::set<std::string> typed) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& v : *list)
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) typed.insert(v.name());
  for (const auto& t : g.initializer()) typed.insert(t.name());
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string at = pointer + "/node/" + std::to_string(i);
    const bool onnx_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (onnx_domain && (n.op_type() == "Shape" || n.op_type() == "Size") && n.input_size() > 0 &&
        !n.input(0).empty() && !typed.count(n.input(0)))
      throw UntypedShapeRead(at + "/input/0", "node \"" + short_name(n.name()) + "\" (" + n.op_type() +
                                                  ") reads the shape of \"" + short_name(n.input(0)) +
                                                  "\", to which ONNX's type inference gives no type (an op before it "
                                                  "is unknown or malformed): give its type and shape in graph.value_info, "
                                                  "or export the model again");
    for (int j = 0; j < n.attribute_size(); ++j) {
      const auto& a = n.attribute(j);
      const std::string attribute = at + "/attribute/" + std::to_string(j);
      if (a.has_g()) check_shape_reads(a.g(), attribute + "/g", typed);
      for (int k = 0; k < a.graphs_size(); ++k) check_shape_reads(a.graphs(k), attribute + "/graphs/" + std::to_string(k), typed);
    }
  }
}

void infer_here(onnx::ModelProto& proto) {
  // libonnx's data propagation of Shape and Size reads their input's type unchecked (SIGSEGV
  // where an unknown or malformed op upstream left it untyped, found by fuzz_onnx): types are
  // inferred first without it, and a Shape or Size of an untyped tensor refused.
  const onnx::ShapeInferenceOptions types_only(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/false);
  onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), types_only);
  check_shape_reads(proto.graph(), "/graph", {});
  const onnx::ShapeInferenceOptions lenient(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
  Folder folder(proto);
  // Each round may reveal the shapes the next layer's shape arithmetic reads.
  for (int round = 0; round < 10000; ++round) {
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), lenient);
    if (!folder.pass()) break;
  }
  const onnx::ShapeInferenceOptions strict(/*check_type=*/false, /*error_mode=*/1, /*data_prop=*/true);
  onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), strict);
}

} // namespace

void infer_onnx_shapes_in_process(bool in_process) { inference_in_process = in_process; }

void infer_shapes_folding_constants(onnx::ModelProto& proto) {
  if (inference_in_process) return infer_here(proto);
  // The child sends the model back without the top graph's initializers (the weights'
  // data, up to gigabytes): inference and folding read them but never change them. A
  // refused Shape read comes back as its pointer and message ('U'), thrown here again.
  std::string inferred;
  std::optional<UntypedShapeRead> refused;
  run_forked(
      [&](ByteWriter& out) {
        try {
          infer_here(proto);
        } catch (const UntypedShapeRead& e) {
          out.record('U');
          out.text(e.pointer);
          out.text(e.what());
          return;
        }
        proto.mutable_graph()->clear_initializer();
        std::string bytes;
        if (!proto.SerializeToString(&bytes)) throw std::runtime_error("the inferred model could not be serialised");
        out.record('M');
        out.text(bytes);
      },
      [&](ByteReader& in) {
        const char tag = in.tag();
        if (tag == 'U') {
          std::string pointer = in.text();
          refused.emplace(std::move(pointer), in.text());
          return;
        }
        if (tag != 'M') throw ChildProcessError("ONNX's shape inference sent an unreadable result");
        inferred = in.text();
      },
      "ONNX's shape inference");
  if (refused) throw *refused;
  onnx::ModelProto result;
  if (!result.ParseFromString(inferred)) throw ChildProcessError("ONNX's shape inference sent an unreadable model");
  result.mutable_graph()->mutable_initializer()->Swap(proto.mutable_graph()->mutable_initializer());
  proto = std::move(result);
}

} // namespace ipusim
