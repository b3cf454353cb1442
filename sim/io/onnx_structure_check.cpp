#include "sim/io/onnx_structure_check.hpp"

#include <onnx/defs/schema.h>

#include <map>
#include <set>
#include <unordered_map>

#include "sim/io/input_error.hpp"
#include "sim/io/onnx_convolutions.hpp"

namespace ipusim {

namespace {

using T = onnx::TensorProto;

// The most elements a tensor may declare: 2^56 (an exabyte of bytes is no real model,
// and products and byte counts below stay within 64 bits).
constexpr std::int64_t kMaxElements = std::int64_t{1} << 56;

// Bytes per element of raw_data; 0 for STRING (raw_data is not allowed for strings).
std::int64_t raw_bytes(int type) {
  switch (type) {
  case T::BOOL: case T::INT8: case T::UINT8: return 1;
  case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16: return 2;
  case T::FLOAT: case T::INT32: case T::UINT32: return 4;
  case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 8;
  case T::COMPLEX128: return 16;
  default: return 0;
  }
}

// The typed field a tensor of `type` keeps its values in, and how many entries an element takes.
struct TypedField {
  const char* name;
  int size;
  int per_element;
};

TypedField typed_field(const T& t) {
  switch (t.data_type()) {
  case T::FLOAT: return {"float_data", t.float_data_size(), 1};
  case T::COMPLEX64: return {"float_data", t.float_data_size(), 2};
  case T::INT32: case T::INT16: case T::INT8: case T::UINT16: case T::UINT8: case T::BOOL: case T::FLOAT16:
  case T::BFLOAT16: return {"int32_data", t.int32_data_size(), 1};
  case T::STRING: return {"string_data", t.string_data_size(), 1};
  case T::INT64: return {"int64_data", t.int64_data_size(), 1};
  case T::DOUBLE: return {"double_data", t.double_data_size(), 1};
  case T::COMPLEX128: return {"double_data", t.double_data_size(), 2};
  case T::UINT32: case T::UINT64: return {"uint64_data", t.uint64_data_size(), 1};
  default: return {"", 0, 1};
  }
}

// Entries in the typed fields other than the one of the tensor's type.
int foreign_entries(const T& t, const TypedField& own) {
  const std::pair<const char*, int> fields[] = {{"float_data", t.float_data_size()},   {"int32_data", t.int32_data_size()},
                                                {"string_data", t.string_data_size()}, {"int64_data", t.int64_data_size()},
                                                {"double_data", t.double_data_size()}, {"uint64_data", t.uint64_data_size()}};
  int n = 0;
  for (const auto& [name, size] : fields)
    if (std::string(name) != own.name) n += size;
  return n;
}

class StructureCheck {
public:
  StructureCheck(const onnx::ModelProto& proto, const std::string& path) : proto_(proto), path_(path) {
    for (const auto& imp : proto.opset_import())
      opsets_[imp.domain() == "ai.onnx" ? "" : imp.domain()] = imp.version();
  }

  void run() {
    if (proto_.functions_size() > 0)
      fail("/functions/0", "onnx.local-function",
           "the model defines " + std::to_string(proto_.functions_size()) +
               " local function(s); ipusim costs ONNX's own ops only: export without "
               "export_modules_as_functions, or inline the functions (onnx.inliner)");
    graph(proto_.graph(), "/graph");
  }

private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& rule, const std::string& message) const {
    throw InputError(path_, pointer, rule, message);
  }

  // Names become keys and messages of JSON documents: they must be UTF-8 (protobuf's proto2
  // strings are not checked when parsed).
  void name(const std::string& text, const std::string& pointer, const std::string& what) const {
    if (!is_valid_utf8(text))
      fail(pointer, "onnx.bad-name",
           what + " \"" + printable(short_name(text)) + "\" is not UTF-8 text; export the model again");
  }

  void value_names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values, const std::string& pointer) const {
    for (int i = 0; i < values.size(); ++i) name(values[i].name(), pointer + "/" + std::to_string(i) + "/name", "the name");
  }

  void graph(const onnx::GraphProto& g, const std::string& pointer) {
    value_names(g.input(), pointer + "/input");
    value_names(g.output(), pointer + "/output");
    value_names(g.value_info(), pointer + "/value_info");
    for (const auto* list : {&g.value_info(), &g.output(), &g.input()})
      for (const auto& v : *list)
        if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) shaped_.insert(v.name());
    name(g.name(), pointer + "/name", "the graph's name");
    if (++depth_ > 16)
      fail(pointer, "onnx.bad-node", "subgraphs are nested more than 16 deep; no exporter writes that");
    if (g.sparse_initializer_size() > 0)
      fail(pointer + "/sparse_initializer/0", "onnx.sparse-tensor",
           "sparse initializers are not imported (their weights would not be counted); store them dense");
    for (int i = 0; i < g.initializer_size(); ++i) tensor(g.initializer(i), pointer + "/initializer/" + std::to_string(i));
    // Ranks known before inference (a subgraph sees its own and its parents'), for the checks
    // of inputs that libonnx's inference assumes rather than checks.
    const std::map<std::string, int> outer = ranks_;
    for (const auto& t : g.initializer()) ranks_[t.name()] = t.dims_size();
    for (const auto& v : g.input())
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        ranks_[v.name()] = v.type().tensor_type().shape().dim_size();
    Scope scope(defined_);
    for (const auto& t : g.initializer()) scope.define(t.name());
    for (const auto& v : g.input()) scope.define(v.name());
    for (int i = 0; i < g.node_size(); ++i) {
      const std::string at = pointer + "/node/" + std::to_string(i);
      inputs_defined(g, i, at);
      node(g.node(i), at);
      for (const auto& o : g.node(i).output())
        if (!o.empty()) scope.define(o);
    }
    ranks_ = outer;
    --depth_;
  }

  // The names a graph's nodes may read: its inputs and initializers, the outputs of the
  // nodes before, and the same of every enclosing graph up to the node that holds it.
  // Leaving a graph forgets what it defined (counts, so a subgraph may reuse a name).
  class Scope {
  public:
    explicit Scope(std::unordered_map<std::string, int>& defined) : defined_(defined) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      for (const std::string* n : added_)
        if (--defined_[*n] == 0) defined_.erase(*n);
    }
    void define(const std::string& name) {
      ++defined_[name];
      added_.push_back(&name);
    }

  private:
    std::unordered_map<std::string, int>& defined_;
    std::vector<const std::string*> added_;  // names in the model, which outlives the scope
  };

  // libonnx's inference (with data propagation) looks up every input of a node among the
  // values defined so far and reads a null pointer for one that is not (a PyTorch export
  // without graph.input crashed it): every input is checked to be defined, in order.
  void inputs_defined(const onnx::GraphProto& g, int i, const std::string& pointer) const {
    const onnx::NodeProto& n = g.node(i);
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& in = n.input(k);
      if (in.empty() || defined_.count(in)) continue;  // "": an optional input left out
      const std::string what = "node \"" + short_name(n.name()) + "\" (" + short_name(n.op_type()) + ") reads \"" +
                               short_name(in) + "\"";
      for (int later = i; later < g.node_size(); ++later)
        for (const auto& o : g.node(later).output())
          if (o == in)
            fail(pointer + "/input/" + std::to_string(k), "onnx.node-order",
                 what + ", which only node " + std::to_string(later) +
                     " after it defines; ONNX requires a graph's nodes in topological order: export the model "
                     "again, or sort it (onnx.utils)");
      fail(pointer + "/input/" + std::to_string(k), "onnx.undefined-input",
           what + ", which no graph input, initializer or earlier node defines (a model whose graph.input "
                  "list was removed or cut?): export the model again");
    }
  }

  void node(const onnx::NodeProto& n, const std::string& pointer) {
    name(n.name(), pointer + "/name", "the node's name");
    name(n.op_type(), pointer + "/op_type", "the op type");
    name(n.domain(), pointer + "/domain", "the domain");
    for (int k = 0; k < n.input_size(); ++k) name(n.input(k), pointer + "/input/" + std::to_string(k), "the input");
    for (int k = 0; k < n.output_size(); ++k) name(n.output(k), pointer + "/output/" + std::to_string(k), "the output");
    for (int k = 0; k < n.attribute_size(); ++k)
      name(n.attribute(k).name(), pointer + "/attribute/" + std::to_string(k) + "/name", "the attribute");
    const std::string what = "node \"" + short_name(n.name()) + "\" (" + short_name(n.op_type()) + ")";
    // libonnx's data propagation of Shape and Size dereferences their input's type: one made
    // by an op it has no schema for, and declared nowhere, has none (SIGSEGV, found by fuzzing).
    if ((n.op_type() == "Shape" || n.op_type() == "Size") && n.input_size() > 0 && untyped_.count(n.input(0)) &&
        !shaped_.count(n.input(0)))
      fail(pointer + "/input/0", "onnx.shape-unknown",
           what + " reads the shape of \"" + short_name(n.input(0)) +
               "\", which an op ONNX does not know makes and nothing declares: give its shape in graph.value_info");
    for (int j = 0; j < n.attribute_size(); ++j) {
      const auto& a = n.attribute(j);
      const std::string at = pointer + "/attribute/" + std::to_string(j);
      if (a.has_t()) tensor(a.t(), at + "/t");
      for (int k = 0; k < a.tensors_size(); ++k) tensor(a.tensors(k), at + "/tensors/" + std::to_string(k));
      if (a.has_sparse_tensor() || a.sparse_tensors_size() > 0)
        fail(at, "onnx.sparse-tensor", what + ": attribute \"" + short_name(a.name()) + "\" holds a sparse tensor, "
                                           "which ipusim does not read; store it dense");
      if (a.has_g()) graph(a.g(), at + "/g");
      for (int k = 0; k < a.graphs_size(); ++k) graph(a.graphs(k), at + "/graphs/" + std::to_string(k));
    }
    const auto opset = opsets_.find(n.domain() == "ai.onnx" ? "" : n.domain());
    if (opset == opsets_.end()) {  // a domain the model does not import: no schema, not inferred
      untyped_.insert(n.output().begin(), n.output().end());
      return;
    }
    if (n.domain().empty() || n.domain() == "ai.onnx") convolution_weight(n, pointer, what);
    const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<std::int64_t>(
                                                                          opset->second, INT32_MAX)),
                                                        n.domain() == "ai.onnx" ? "" : n.domain());
    if (!schema) {  // an op ONNX does not know: inference leaves it alone (onnx.shape-unknown later)
      untyped_.insert(n.output().begin(), n.output().end());
      return;
    }
    // Attributes the schema does not name (PopART's __ipu_number, an exporter's own) are
    // not read by inference: only the schema's own are checked.
    onnx::NodeProto bare = n;
    bare.clear_attribute();
    for (const auto& a : n.attribute())
      if (schema->attributes().count(a.name())) *bare.add_attribute() = a;
    try {
      schema->Verify(bare);
    } catch (const std::exception& e) {
      std::string reason = e.what();
      if (const auto context = reason.find("\n"); context != std::string::npos) reason.resize(context);
      if (reason.size() > 200) reason = reason.substr(0, 200) + "...";
      fail(pointer, "onnx.bad-node",
           what + " does not match ONNX's schema of " + short_name(n.op_type()) + " (opset " +
               std::to_string(opset->second) + "): " + reason + "; export the model again");
    }
  }

  // A convolution's weight is [M, C/group, k1, ...], of the input's rank: libonnx's shape
  // inference takes the kernel shape from it unchecked and reads past its end otherwise.
  void convolution_weight(const onnx::NodeProto& n, const std::string& pointer, const std::string& what) const {
    const int x = 0, w = convolution_weight_input(n.op_type());
    if (w < 0) return;
    if (n.input_size() <= w) return;  // the schema's check names a missing input
    const auto rank_of = [&](int k) {
      const auto it = ranks_.find(n.input(k));
      return it == ranks_.end() ? -1 : it->second;
    };
    const int weight = rank_of(w), input = rank_of(x);
    if (weight < 0) return;
    if (weight < 3 || (input >= 0 && input != weight))
      fail(pointer + "/input/" + std::to_string(w), "onnx.bad-node",
           what + ": the weight \"" + short_name(n.input(w)) + "\" has rank " + std::to_string(weight) +
               (input >= 0 ? " and the input \"" + short_name(n.input(x)) + "\" rank " + std::to_string(input) : "") +
               "; a convolution's weight is [M, C/group, k1, ...], of the input's rank (at least 3): check the "
               "order of its inputs (X, W, B) and export the model again");
  }

  void tensor(const T& t, const std::string& pointer) const {
    name(t.name(), pointer + "/name", "the tensor's name");
    const std::string what = "tensor \"" + short_name(t.name()) + "\"";
    if (!T::DataType_IsValid(t.data_type()) || t.data_type() == T::UNDEFINED)
      fail(pointer + "/data_type", "onnx.bad-tensor",
           what + " has element type " + std::to_string(t.data_type()) + ", which ONNX does not define");
    if (!T::DataLocation_IsValid(t.data_location()))
      fail(pointer + "/data_location", "onnx.bad-tensor",
           what + " has data_location " + std::to_string(t.data_location()) + ", which ONNX does not define");
    const std::int64_t n = checked_element_count(t.dims());
    if (n < 0) {
      std::string dims;
      for (int i = 0; i < t.dims_size() && i < 8; ++i) dims += (i ? ", " : "") + std::to_string(t.dims(i));
      if (t.dims_size() > 8) dims += ", ...";
      fail(pointer + "/dims", "onnx.bad-tensor",
           what + " has dims [" + dims + "]: every dimension must be >= 0 and their product at most 2^56 elements");
    }
    if (t.data_location() == T::EXTERNAL) {
      if (t.has_raw_data() || typed_field(t).size > 0 || foreign_entries(t, typed_field(t)) > 0)
        fail(pointer, "onnx.bad-tensor", what + " is stored externally and also holds data in the file");
      return;  // checked against its data file by the importer (onnx.external-data)
    }
    const TypedField own = typed_field(t);
    const std::int64_t raw = static_cast<std::int64_t>(t.raw_data().size());
    if (foreign_entries(t, own) > 0)
      fail(pointer, "onnx.bad-tensor",
           what + " of type " + T::DataType_Name(t.data_type()) + " holds values in a field of another type (" +
               own.name + " is its field)");
    if (raw > 0 && own.size > 0)
      fail(pointer, "onnx.bad-tensor", what + " holds both raw_data and " + own.name + "; ONNX allows one");
    if (raw > 0 || t.has_raw_data()) {
      const std::int64_t bytes = raw_bytes(t.data_type());
      if (bytes == 0)
        fail(pointer + "/raw_data", "onnx.bad-tensor", what + " of type STRING has raw_data; strings go in string_data");
      if (raw != n * bytes)
        fail(pointer + "/raw_data", "onnx.bad-tensor",
             what + " holds " + std::to_string(raw) + " bytes of raw_data; its " + std::to_string(n) + " elements of " +
                 T::DataType_Name(t.data_type()) + " need " + std::to_string(n * bytes) +
                 " (a truncated or edited file: export it again)");
    } else if (own.size > 0 && own.size != n * own.per_element) {
      fail(pointer + "/" + own.name, "onnx.bad-tensor",
           what + " holds " + std::to_string(own.size) + " values in " + own.name + "; its dims give " +
               std::to_string(n) + " elements");
    }
  }

  const onnx::ModelProto& proto_;
  std::string path_;
  std::map<std::string, std::int64_t> opsets_;
  std::set<std::string> untyped_;  // outputs of nodes without a schema
  std::set<std::string> shaped_;   // names declared with a shape (value_info, graph inputs and outputs)
  std::map<std::string, int> ranks_;  // tensor name -> rank, where known before inference
  std::unordered_map<std::string, int> defined_;  // names a node may read here (Scope)
  int depth_ = 0;
};

} // namespace

std::int64_t checked_element_count(const google::protobuf::RepeatedField<std::int64_t>& dims) {
  std::int64_t n = 1;
  bool zero = false;
  for (auto d : dims) {
    if (d < 0) return -1;
    if (d == 0) zero = true;
    else if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements) return -1;
  }
  return zero ? 0 : n;
}

void check_onnx_structure(const onnx::ModelProto& proto, const std::string& path) {
  StructureCheck(proto, path).run();
}

std::string short_name(const std::string& name) {
  return name.size() <= 80 ? name : name.substr(0, 80) + "...";
}

} // namespace ipusim
