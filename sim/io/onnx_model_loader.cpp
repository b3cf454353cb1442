#include "sim/io/onnx_model_loader.hpp"


#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "sim/io/input_error.hpp"
#include "sim/io/onnx_convolutions.hpp"
#include "sim/io/onnx_proto.hpp"
#include "sim/io/op_attribute_ranges.hpp"
#include "sim/io/onnx_shape_folding.hpp"
#include "sim/io/onnx_structure_check.hpp"
#include "sim/io/onnx_buffers.hpp"
#include "sim/io/onnx_tied_weights.hpp"

namespace ipusim {

namespace fs = std::filesystem;

bool is_onnx_path(const std::string& path) { return fs::path(path).extension() == ".onnx"; }

namespace {

// PopART's node attributes (popart/names.hpp: sVirtualGraphAttribute, sPipelineStageAttribute,
// sRecomputeOutputAttribute).
const std::string kIpuAttribute = "__ipu_number";
const std::string kStageAttribute = "__pipeline_stage";
const std::string kPhaseAttribute = "__execution_phase";
const std::string kRecomputeAttribute = "__recompute_output_in_backward_pass";

// Stands in for a symbolic batch dimension during shape inference: a prime that no model
// dimension is a multiple of in practice, so per_sample_shape finds it again.
constexpr std::int64_t kBatchStandIn = 999983;

struct Dim {
  std::int64_t value = -1;  // -1: not a number (a symbol, or nothing known)
  std::string symbol;
};

struct ValueType {
  int elem_type = 0;
  bool has_shape = false;
  std::vector<Dim> dims;
};

ValueType value_type(const onnx::TypeProto& t) {
  ValueType v;
  if (!t.has_tensor_type()) return v;
  v.elem_type = t.tensor_type().elem_type();
  if (!t.tensor_type().has_shape()) return v;
  v.has_shape = true;
  for (const auto& d : t.tensor_type().shape().dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.symbol = d.dim_param();
    v.dims.push_back(dim);
  }
  return v;
}

bool is_float(int elem_type) {
  using T = onnx::TensorProto;
  return elem_type == T::FLOAT || elem_type == T::FLOAT16 || elem_type == T::BFLOAT16 || elem_type == T::DOUBLE;
}

std::string dim_text(const Dim& d) {
  if (d.value == kBatchStandIn) return "batch";
  if (d.value >= 0) return std::to_string(d.value);
  return d.symbol.empty() ? "?" : "\"" + d.symbol + "\"";
}

std::vector<Dim> dims_of(const std::vector<std::int64_t>& shape) {
  std::vector<Dim> dims;
  for (auto d : shape) dims.push_back(Dim{d, {}});
  return dims;
}

std::string shape_text(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dim_text(dims[i]);
  return s + "]";
}

class Importer {
public:
  Importer(onnx::ModelProto proto, std::string path, OnnxImportOptions options)
      : path_(std::move(path)), options_(options), proto_(std::move(proto)) {}

  Model run() {
    check_onnx_structure(proto_, path_);
    check_external_data();
    complete_kernel_shapes(proto_, path_);
    infer_shapes();
    check_convolution_ranks(proto_, path_);
    collect_types();
    find_constants();
    copies_ = find_weight_copies(proto_.graph(), constants_, dropped_);
    find_separated_weights();
    Model m;
    m.file = path_;
    m.name = proto_.graph().name().empty() ? path_ : proto_.graph().name();
    m.ops_pointer = "/graph/node";
    add_weights(m);
    add_separated_weights(m);
    add_inputs(m);
    add_ops(m);
    add_anchors(m);
    if (options_.float_dtype) m.set_float_dtype(*options_.float_dtype);
    m.warnings.insert(m.warnings.begin(), warnings_.begin(), warnings_.end());
    return m;
  }

private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& rule, const std::string& message) const {
    throw InputError(path_, pointer, rule, message);
  }

  // Weights stored outside the .onnx file: ipusim needs their shapes only, but a missing
  // or short data file means the model was copied incompletely, so it is reported.
  void check_external_data() const {
    const auto& inits = proto_.graph().initializer();
    for (int i = 0; i < inits.size(); ++i) {
      const auto& t = inits[i];
      if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
      const std::string pointer = "/graph/initializer/" + std::to_string(i);
      const std::string what = "initializer \"" + t.name() + "\"";
      std::string location;
      std::int64_t offset = 0;
      std::optional<std::int64_t> length;
      for (const auto& e : t.external_data()) {
        try {
          if (e.key() == "location") location = e.value();
          else if (e.key() == "offset") offset = std::stoll(e.value());
          else if (e.key() == "length") length = std::stoll(e.value());
        } catch (const std::exception&) {
          fail(pointer, "onnx.external-data", what + ": external_data " + e.key() + " \"" + e.value() + "\" is not a number");
        }
      }
      if (location.empty()) fail(pointer, "onnx.external-data", what + " is stored externally without a location");
      if (offset < 0 || length.value_or(0) < 0)
        fail(pointer, "onnx.external-data",
             what + ": external_data offset " + std::to_string(offset) + " and length " +
                 std::to_string(length.value_or(0)) + " must not be negative");
      const fs::path file = fs::path(path_).parent_path() / location;
      std::error_code ec;
      if (!fs::is_regular_file(file, ec))
        fail(pointer, "onnx.external-data",
             what + " is stored in \"" + file.string() + "\", which does not exist: copy the data file beside the model");
      const auto size = static_cast<std::int64_t>(fs::file_size(file, ec));
      // Checked: an offset near 2^63 plus a length must not wrap past the truncation test.
      std::int64_t end = 0;
      if (__builtin_add_overflow(offset, length.value_or(0), &end) || end > size)
        fail(pointer, "onnx.external-data",
             what + " needs " + std::to_string(length.value_or(0)) + " bytes from byte " + std::to_string(offset) +
                 " of \"" + file.string() + "\", which holds " + std::to_string(size) + ": the data file is truncated");
    }
  }

  void infer_shapes() {
    substitute_batch();
    try {
      infer_shapes_folding_constants(proto_);
    } catch (const UntypedShapeRead& e) {
      fail(e.pointer, "onnx.shape-unknown", e.what());
    } catch (const std::exception& e) {
      fail("/graph", "onnx.shape-inference",
           std::string("ONNX shape inference failed: ") + e.what() + "; fix the node or export the model again");
    }
  }

  // A static leading dimension above 1 on a batched-looking input (rank 2 or more) is most
  // likely the batch the model was exported with: read as it is, it is part of one sample.
  void warn_static_batch(const std::string& input, const std::vector<Dim>& dims) {
    if (input.empty() || dims.size() < 2 || dims[0].value <= 1) return;
    const std::string b = std::to_string(dims[0].value);
    warnings_.push_back("graph input \"" + input + "\" has the static shape " + shape_text(dims) +
                        " and no --batch-size was given: it is read as ONE sample of that shape; if its leading " + b +
                        " is the batch, give --batch-size " + b + " (scenario \"modelBatchSize\": " + b +
                        "), or export with a symbolic batch (dynamic_axes)");
  }

  // A symbolic batch dimension shared by every host input becomes the number kBatchStandIn
  // before inference, so that every shape, and the shape arithmetic exporters write, is
  // static; per_sample_shape then divides it out wherever it landed.
  void substitute_batch() {
    if (options_.batch_size) return;
    std::set<std::string> initializers;
    for (const auto& t : proto_.graph().initializer()) initializers.insert(t.name());
    const auto& inputs = proto_.graph().input();
    std::optional<std::string> symbol;
    std::string first_input;
    std::vector<Dim> first_dims;
    for (int i = 0; i < inputs.size(); ++i) {
      const auto& name = inputs[i].name();
      if (initializers.count(name)) continue;
      const ValueType t = value_type(inputs[i].type());
      const bool symbolic = t.has_shape && !t.dims.empty() && t.dims[0].value < 0;
      const std::string this_symbol = symbolic ? t.dims[0].symbol : "";
      if (first_input.empty()) {
        first_input = name;
        first_dims = t.dims;
        if (symbolic) symbol = this_symbol;
        continue;
      }
      if (symbolic != symbol.has_value() || (symbolic && this_symbol != *symbol))
        fail("/graph/input/" + std::to_string(i), "onnx.batch-dimension",
             "graph inputs \"" + first_input + "\" and \"" + name + "\" disagree on the batch dimension (shapes " +
                 shape_text(first_dims) + " and " + shape_text(t.dims) +
                 "): give every input the same symbolic leading dimension, or export with static shapes and name "
                 "the batch size (scenario \"modelBatchSize\", --batch-size)");
    }
    if (!symbol) {
      warn_static_batch(first_input, first_dims);
      return;
    }
    batch_stand_in_ = true;
    auto* g = proto_.mutable_graph();
    for (auto* list : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
      for (auto& v : *list) {
        if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
        for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
          if (d.has_dim_param() && d.dim_param() == *symbol) d.set_dim_value(kBatchStandIn);
      }
  }

  void collect_types() {
    const auto& g = proto_.graph();
    // A graph output may be declared without a shape that value_info or inference gives.
    auto note = [&](const onnx::ValueInfoProto& v) {
      ValueType t = value_type(v.type());
      auto [it, added] = types_.emplace(v.name(), t);
      if (!added && t.has_shape) it->second = t;
    };
    for (const auto& v : g.input()) note(v);
    for (const auto& v : g.value_info()) note(v);
    for (const auto& v : g.output()) note(v);
    for (int i = 0; i < g.initializer_size(); ++i) {
      const auto& t = g.initializer(i);
      initializer_index_[t.name()] = i;
      ValueType v;
      v.elem_type = t.data_type();
      v.has_shape = true;
      for (auto d : t.dims()) v.dims.push_back(Dim{d, {}});
      types_[t.name()] = v;
    }
  }

  // Values fixed when the graph is compiled: non-float initializers (shapes, indices),
  // buffers (onnx_buffers.hpp),
  // Constant outputs, Shape/Size outputs, and whatever is computed from those alone.
  // They are not tensors of the model: nodes computing them are dropped, and ops read them
  // for free.
  void find_constants() {
    const auto& g = proto_.graph();
    for (const auto& t : g.initializer())
      if (!is_float(t.data_type()) || is_buffer(g, t)) constants_.insert(t.name());
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      bool constant = n.op_type() == "Shape" || n.op_type() == "Size";
      if (!constant) {
        constant = true;
        for (const auto& in : n.input())
          if (!in.empty() && !constants_.count(in)) constant = false;
      }
      if (!constant) continue;
      dropped_.insert(i);
      for (const auto& out : n.output()) constants_.insert(out);
    }
  }

  // The shape of one sample. With a symbolic batch (now kBatchStandIn), the first
  // dimension equal to the stand-in is dropped, or the first multiple of it divided by it,
  // wherever it is (PyTorch's batch_first attention runs [seq, batch, hidden] inside, and
  // [batch x heads, seq, dh]). With a static batch size B, a leading B is dropped and a
  // leading multiple of B (a flattened [B*n, ...]) divided by B; any other leading size (a
  // loss reduced over the batch) stays.
  std::vector<std::int64_t> per_sample_shape(const std::string& tensor, const std::string& pointer) const {
    const auto it = types_.find(tensor);
    if (it == types_.end() || !it->second.has_shape)
      fail(pointer, "onnx.shape-unknown",
           "the shape of tensor \"" + tensor +
               "\" cannot be inferred (an op ONNX does not know, or a missing input shape): give it in "
               "graph.value_info, or export with static shapes");
    const std::vector<Dim>& dims = it->second.dims;
    const std::int64_t batch = batch_stand_in_ ? kBatchStandIn : options_.batch_size.value_or(0);
    bool batch_seen = batch == 0;
    std::vector<std::int64_t> shape;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::int64_t d = dims[i].value;
      if (d < 0)
        fail(pointer, "onnx.shape-unknown",
             "tensor \"" + tensor + "\" has shape " + shape_text(dims) + ": dimension " + std::to_string(i) +
                 " is not a number. Only the batch dimension may be symbolic; export with static shapes");
      if (d == 0)
        fail(pointer, "tensor.bad-shape",
             "tensor \"" + tensor + "\" has shape " + shape_text(dims) + "; every dimension must be a positive integer");
      if (!batch_seen && (batch_stand_in_ || i == 0) && d % batch == 0) {
        batch_seen = true;
        if (d != batch) shape.push_back(d / batch);
        continue;
      }
      shape.push_back(d);
    }
    return shape;
  }

  static std::optional<DType> dtype_of(int elem_type) {
    using T = onnx::TensorProto;
    switch (elem_type) {
    case T::FLOAT: return DType::Float32;
    case T::FLOAT16: return DType::Float16;
    case T::INT32: return DType::Int32;
    case T::INT64: return DType::Int64;
    case T::INT8: return DType::Int8;
    case T::BOOL: return DType::Bool;
    default: return std::nullopt;
    }
  }

  DType dtype(const std::string& tensor, const std::string& pointer) const {
    const auto it = types_.find(tensor);
    const int elem = it == types_.end() ? 0 : it->second.elem_type;
    const auto d = dtype_of(elem);
    if (!d)
      fail(pointer, "onnx.unsupported-dtype",
           "tensor \"" + tensor + "\" has ONNX element type " + onnx::TensorProto_DataType_Name(elem) +
               "; ipusim models float16, float32, int32, int64, int8 and bool tensors");
    return *d;
  }

  void add_tensor(Model& m, const std::string& name, TensorKind kind, std::vector<std::int64_t> shape,
                  const std::string& pointer) {
    Tensor t;
    t.name = name;
    t.kind = kind;
    t.dtype = dtype(name, pointer);
    // As for a JSON model: sizes are int64 bytes, and a shape whose byte count overflows
    // would be a wrong (even negative) size downstream (a shape inference gave it).
    double bytes = static_cast<double>(dtype_bytes(t.dtype));
    for (auto d : shape) bytes *= static_cast<double>(d);
    if (bytes > 0x1p50) {
      char amount[32];
      std::snprintf(amount, sizeof amount, "%.3g", bytes);
      fail(pointer, "tensor.bad-shape",
           "tensor \"" + name + "\" has shape " + shape_text(dims_of(shape)) + ": " + amount +
               " bytes per sample, more than any IPU system could hold");
    }
    t.shape = std::move(shape);
    m.tensors.emplace(name, std::move(t));
  }

  void add_weights(Model& m) {
    const auto& g = proto_.graph();
    for (int i = 0; i < g.initializer_size(); ++i) {
      const auto& t = g.initializer(i);
      if (constants_.count(t.name()) || copies_.count(t.name())) continue;
      const std::string pointer = "/graph/initializer/" + std::to_string(i);
      std::vector<std::int64_t> shape(t.dims().begin(), t.dims().end());
      for (auto d : shape)
        if (d <= 0)
          fail(pointer, "tensor.bad-shape", "initializer \"" + t.name() + "\" has a dimension " + std::to_string(d) +
                                                "; every dimension must be a positive integer");
      add_tensor(m, t.name(), TensorKind::Weight, shape, pointer);
    }
  }

  // Parameters the exporter merged into another, each written as an Identity of it.
  void find_separated_weights() {
    const auto& g = proto_.graph();
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (dropped_.count(i) || !separated_weight(g, n) || constants_.count(n.input(0))) continue;
      separated_[n.output(0)] = n.input(0);
      types_[n.output(0)] = types_.at(n.input(0));
      dropped_.insert(i);
    }
  }

  // Each merged parameter becomes the weight it was, as PopART would hold them apart had the
  // file kept them apart; one weight read by several layers (on several IPUs) would be
  // neither the user's model nor runnable (annotation.weight-on-several-ipus).
  void add_separated_weights(Model& m) {
    std::map<std::string, std::vector<std::string>> by_source;
    for (const auto& [name, source] : separated_) by_source[source].push_back(name);
    for (const auto& [source, names] : by_source) {
      const Tensor& weight = m.tensor(source);
      for (const auto& name : names) add_tensor(m, name, TensorKind::Weight, weight.shape, "/graph/initializer");
      std::string list;
      for (const auto& name : names) list += (list.empty() ? "\"" : ", \"") + name + "\"";
      m.warnings.push_back("the exporter merged " + std::to_string(names.size()) + " parameter(s) into \"" + source +
                           "\", writing each as an Identity of it (PyTorch de-duplicates initializers, and in an "
                           "evaluation-mode export those with equal values, such as norm weights starting at 1): "
                           "ipusim holds " + list + " as weights of their own, as the model has them; to keep them "
                           "apart in the file, export with training=torch.onnx.TrainingMode.TRAINING");
    }
  }

  void add_inputs(Model& m) {
    const auto& inputs = proto_.graph().input();
    for (int i = 0; i < inputs.size(); ++i) {
      const auto& name = inputs[i].name();
      if (initializer_index_.count(name)) continue;
      const std::string pointer = "/graph/input/" + std::to_string(i);
      add_tensor(m, name, TensorKind::Input, per_sample_shape(name, pointer), pointer);
    }
  }

  std::optional<std::int64_t> annotation(const onnx::NodeProto& n, const std::string& pointer,
                                         const std::string& attribute, std::int64_t max) const {
    for (const auto& a : n.attribute()) {
      if (a.name() != attribute) continue;
      const std::string what = "node \"" + n.name() + "\" (" + n.op_type() + "): " + attribute;
      if (a.type() != onnx::AttributeProto::INT)
        fail(pointer, "annotation.not-integer",
             what + " must be an INT attribute as PopART writes it, found " +
                 onnx::AttributeProto_AttributeType_Name(a.type()));
      if (a.i() < 0) fail(pointer, "annotation.negative", what + " must not be negative, got " + std::to_string(a.i()));
      if (a.i() > max) fail(pointer, "annotation.too-large", what + " " + std::to_string(a.i()) + " is out of range");
      return a.i();
    }
    return std::nullopt;
  }

  void copy_attributes(const onnx::NodeProto& n, const std::string& pointer, Op& op) const {
    for (int j = 0; j < n.attribute_size(); ++j) {
      const auto& a = n.attribute(j);
      if (a.name() == kIpuAttribute || a.name() == kStageAttribute) continue;
      switch (a.type()) {
      case onnx::AttributeProto::INT: op.attributes[a.name()] = static_cast<std::int64_t>(a.i()); break;
      case onnx::AttributeProto::FLOAT: op.attributes[a.name()] = static_cast<double>(a.f()); break;
      case onnx::AttributeProto::STRING: op.attributes[a.name()] = a.s(); break;
      case onnx::AttributeProto::INTS:
        op.attributes[a.name()] = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        op.attributes[a.name()] = std::vector<double>(a.floats().begin(), a.floats().end());
        break;
      default: continue;  // tensors and subgraphs: nothing the cost model reads
      }
      check_attribute_range(a.name(), op.attributes[a.name()], path_, pointer + "/attribute/" + std::to_string(j));
    }
  }

  void add_ops(Model& m) {
    const auto& g = proto_.graph();
    for (const auto& n : g.node())
      for (const auto& in : n.input()) used_.insert(in);
    for (const auto& v : g.output()) used_.insert(v.name());
    std::set<std::string> names;
    for (int i = 0; i < g.node_size(); ++i) {
      if (dropped_.count(i)) continue;
      const auto& n = g.node(i);
      const std::string pointer = "/graph/node/" + std::to_string(i);
      Op op;
      op.index = m.ops.size();
      op.source_index = static_cast<std::size_t>(i);
      op.name = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
      if (!names.insert(op.name).second) op.name += "#" + std::to_string(i);  // ONNX does not require unique names
      op.type = n.op_type();
      bool transposed_b = false;  // B is a transposed copy of a weight: the op reads the weight with transB
      for (int k = 0; k < n.input_size(); ++k) {
        std::string in = n.input(k);
        if (const auto copy = copies_.find(in); copy != copies_.end()) {
          in = copy->second.weight;
          transposed_b = copy->second.transposed;
        }
        if (!in.empty() && !constants_.count(in)) {
          if (!m.tensors.count(in))
            fail(pointer, "tensor.unknown",
                 "node \"" + op.name + "\" reads \"" + in + "\", which no node, input or initializer defines");
          op.inputs.push_back(in);
        }
      }
      // An optional output nothing reads (BatchNormalization's running statistics in a
      // training export) is left out, as long as the node has an output that is used.
      const bool any_used = std::any_of(n.output().begin(), n.output().end(), [&](const std::string& o) {
        return used_.count(o) > 0;
      });
      for (const auto& out : n.output()) {
        if (out.empty() || (any_used && !used_.count(out))) continue;
        add_tensor(m, out, TensorKind::Activation, per_sample_shape(out, pointer), pointer);
        op.outputs.push_back(out);
      }
      op.virtual_graph = annotation(n, pointer, kIpuAttribute, INT32_MAX);
      op.pipeline_stage = annotation(n, pointer, kStageAttribute, INT32_MAX);
      op.execution_phase = annotation(n, pointer, kPhaseAttribute, INT32_MAX);
      // PopART's RecomputeType: 0 Undefined, 1 Checkpoint, 2 Recompute, 3 Recomputed.
      annotation(n, pointer, kRecomputeAttribute, 3);
      copy_attributes(n, pointer, op);
      if (transposed_b) {
        const auto it = op.attributes.find("transB");
        const auto* v = it == op.attributes.end() ? nullptr : std::get_if<std::int64_t>(&it->second);
        op.attributes["transB"] = std::int64_t{v && *v != 0 ? 0 : 1};
      }
      m.ops.push_back(std::move(op));
    }
  }

  void add_anchors(Model& m) const {
    for (const auto& v : proto_.graph().output()) {
      const auto it = m.tensors.find(v.name());
      if (it != m.tensors.end() && it->second.kind == TensorKind::Activation) m.anchors.push_back(v.name());
    }
  }

  std::string path_;
  OnnxImportOptions options_;
  onnx::ModelProto proto_;
  std::map<std::string, ValueType> types_;
  std::map<std::string, int> initializer_index_;
  std::set<std::string> constants_;
  std::set<int> dropped_;
  std::map<std::string, WeightCopy> copies_;  // tensors that repeat a weight (tied weights), by name
  std::map<std::string, std::string> separated_;  // parameters the exporter merged -> the one it kept
  bool batch_stand_in_ = false;
  std::vector<std::string> warnings_;  // said before the model's own (Model::warnings)
  std::set<std::string> used_;  // tensors a node reads, and the graph outputs
};

} // namespace

onnx::ModelProto read_onnx_proto(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(path, "/", "file.missing", "the ONNX model \"" + path + "\" is not a readable file");
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto proto;
  if (!in || !proto.ParseFromIstream(&in))
    throw InputError(path, "/", "onnx.unreadable",
                     "the file does not parse as an ONNX model (protobuf ModelProto): truncated or not ONNX; export "
                     "it again");
  if (!proto.has_graph() || proto.graph().node_size() == 0)
    throw InputError(path, "/graph", "onnx.unreadable",
                     "the ONNX model has no graph nodes (truncated or empty); export it again");
  return proto;
}

Model model_from_onnx_proto(onnx::ModelProto proto, const std::string& origin, const OnnxImportOptions& options) {
  if (options.batch_size && *options.batch_size < 1)
    throw InputError(origin, "/", "value.not-positive", "the batch size must be at least 1");
  return Importer(std::move(proto), origin, options).run();
}

Model load_onnx_model(const std::string& path, const OnnxImportOptions& options) {
  return model_from_onnx_proto(read_onnx_proto(path), path, options);
}

} // namespace ipusim
