#include "sim/io/model_loader.hpp"

#include "sim/io/json_reader.hpp"
#include "sim/io/op_attribute_ranges.hpp"

#include <algorithm>
#include <ostream>
#include <climits>
#include <cstdint>

namespace ipusim {

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "float16") return DType::Float16;
  if (name == "float32") return DType::Float32;
  if (name == "int32") return DType::Int32;
  if (name == "int64") return DType::Int64;
  if (name == "int8") return DType::Int8;
  if (name == "float8") return DType::Float8;
  if (name == "bool") return DType::Bool;
  return std::nullopt;
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
  case DType::Float16: return "float16";
  case DType::Float32: return "float32";
  case DType::Int32: return "int32";
  case DType::Int64: return "int64";
  case DType::Int8: return "int8";
  case DType::Float8: return "float8";
  case DType::Bool: return "bool";
  }
  return "?";
}

std::int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
  case DType::Float16: return 2;
  case DType::Float32: return 4;
  case DType::Int32: return 4;
  case DType::Int64: return 8;
  case DType::Int8: return 1;
  case DType::Float8: return 1;
  case DType::Bool: return 1;
  }
  return 0;
}

bool is_float_dtype(DType dtype) { return dtype == DType::Float16 || dtype == DType::Float32; }

void Model::check_declared(const Op& op) const {
  const auto check = [&](const std::vector<std::string>& names, const char* field, const char* verb) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (!tensors.count(names[i]))
        throw InputError(file, op_pointer(op) + "/" + field + "/" + std::to_string(i), "tensor.unknown",
                         "op \"" + op.name + "\" " + verb + " tensor \"" + names[i] + "\", which \"tensors\" does not declare");
  };
  check(op.inputs, "inputs", "reads");
  check(op.outputs, "outputs", "writes");
}

void Model::set_float_dtype(DType dtype) {
  for (auto& entry : tensors)
    if (is_float_dtype(entry.second.dtype)) entry.second.dtype = dtype;
}

std::string tensor_kind_name(TensorKind kind) {
  switch (kind) {
  case TensorKind::Input: return "input";
  case TensorKind::Weight: return "weight";
  case TensorKind::Activation: return "activation";
  }
  return "?";
}

std::int64_t Tensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

double Tensor::bytes_per_micro_batch(std::int64_t micro_batch_size) const {
  const double b = static_cast<double>(bytes());
  return kind == TensorKind::Weight ? b : b * static_cast<double>(micro_batch_size);
}

namespace {

Tensor read_tensor(const std::string& name, ObjectReader r) {
  Tensor t;
  t.name = name;
  t.shape = r.int_list("shape", true);
  const std::string dtype = r.optional_string("dtype", "float32");
  auto parsed = parse_dtype(dtype);
  if (!parsed) throw r.error("dtype", "tensor.bad-dtype",
                             "unknown dtype \"" + dtype + "\" (expected float16, float32, int32, int64, int8, float8 or bool)");
  t.dtype = *parsed;
  // Sizes are int64 bytes; a shape whose byte count overflows would turn into a wrong (even
  // negative) size downstream, so it is bad input. 2^50 bytes leaves room for micro-batch scaling.
  double bytes = static_cast<double>(dtype_bytes(t.dtype));
  for (auto d : t.shape) bytes *= static_cast<double>(d);
  if (bytes > 0x1p50)
    throw r.error("shape", "tensor.bad-shape",
                  "tensor \"" + name + "\" would hold " + json_excerpt(Json(bytes)) +
                      " bytes per sample, more than any IPU system could hold");
  const std::string kind = r.required_string("kind");
  if (kind == "input") t.kind = TensorKind::Input;
  else if (kind == "weight") t.kind = TensorKind::Weight;
  else if (kind == "activation") t.kind = TensorKind::Activation;
  else throw r.error("kind", "tensor.bad-kind", "unknown kind \"" + kind + "\" (expected input, weight or activation)");
  r.finish();
  return t;
}

std::optional<std::int64_t> read_annotation(ObjectReader& r, const std::string& op_name, const std::string& key) {
  const Json* v = r.maybe_value(key);
  if (!v) return std::nullopt;
  const std::string what = "op \"" + op_name + "\": " + key;
  if (!v->is_number_integer())
    throw r.error(key, "annotation.not-integer",
                  what + " must be an integer as PopART stores it, found " + json_type_name(*v) + " " + json_excerpt(*v));
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT32_MAX))
    throw r.error(key, "annotation.too-large", what + " " + json_excerpt(*v) + " is too large to be an IPU or stage id");
  const auto value = v->get<std::int64_t>();
  if (value < 0) throw r.error(key, "annotation.negative", what + " must not be negative, got " + std::to_string(value));
  if (value > INT32_MAX)
    throw r.error(key, "annotation.too-large", what + " " + std::to_string(value) + " is too large to be an IPU or stage id");
  return value;
}

// ONNX-style attributes: integers, numbers, strings and arrays of integers or of numbers.
std::map<std::string, AttributeValue> read_attributes(ObjectReader& r) {
  std::map<std::string, AttributeValue> out;
  const Json* v = r.maybe_value("attributes");
  if (!v) return out;
  if (!v->is_object()) throw r.error("attributes", "json.type", "expected an object of attribute values");
  for (auto it = v->begin(); it != v->end(); ++it) {
    const Json& a = it.value();
    const auto fits = [](const Json& x) {
      return x.is_number_integer() && !(x.is_number_unsigned() && x.get<std::uint64_t>() > INT64_MAX);
    };
    if (fits(a)) out[it.key()] = a.get<std::int64_t>();
    else if (a.is_number()) out[it.key()] = a.get<double>();
    else if (a.is_string()) out[it.key()] = a.get<std::string>();
    else if (a.is_array() && std::all_of(a.begin(), a.end(), fits)) out[it.key()] = a.get<std::vector<std::int64_t>>();
    else if (a.is_array() && std::all_of(a.begin(), a.end(), [](const Json& x) { return x.is_number(); }))
      out[it.key()] = a.get<std::vector<double>>();
    else
      throw InputError(r.file(), pointer_child(r.pointer_of("attributes"), it.key()), "op.bad-attribute",
                       "attribute \"" + it.key() + "\" must be an integer, a number, a string or an array of numbers, found " +
                           json_excerpt(a));
    check_attribute_range(it.key(), out[it.key()], r.file(), pointer_child(r.pointer_of("attributes"), it.key()));
  }
  return out;
}

} // namespace

Model model_from_json(const Json& document, const std::string& origin) {
  ObjectReader root(document, origin, "", Format::Model);
  Model m;
  m.file = origin;
  m.name = root.optional_string("name", origin);
  root.optional_string("description", "");

  ObjectReader tensors = root.object("tensors");
  const Json& tensor_map = root.required_value("tensors");
  for (auto it = tensor_map.begin(); it != tensor_map.end(); ++it)
    m.tensors.emplace(it.key(), read_tensor(it.key(), tensors.object(it.key())));

  const Json& ops = root.required_value("ops");
  if (!ops.is_array()) throw root.error("ops", "json.type", "expected an array of ops, found " + json_type_name(ops));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ObjectReader r(ops[i], origin, pointer_child("/ops", i), Format::Model);
    Op op;
    op.index = i;
    op.source_index = i;
    op.name = r.required_string("name");
    op.type = r.required_string("type");
    op.inputs = r.string_list("inputs", true);
    op.outputs = r.string_list("outputs", true);
    op.virtual_graph = read_annotation(r, op.name, "virtualGraph");
    op.pipeline_stage = read_annotation(r, op.name, "pipelineStage");
    op.execution_phase = read_annotation(r, op.name, "executionPhase");
    op.flops = r.maybe_number("flops");
    op.backward_flops = r.maybe_number("backwardFlops");
    op.attributes = read_attributes(r);
    r.finish();
    m.ops.push_back(std::move(op));
  }
  m.anchors = root.string_list("anchors", false);
  root.finish();
  return m;
}

void say_import_warnings(const Model& model, std::ostream& out) {
  for (const auto& warning : model.warnings) out << "ipusim: warning: " << model.file << ": " << warning << "\n";
  out << std::flush;
}

Model load_model(const std::string& path, const OnnxImportOptions& onnx) {
  if (is_onnx_path(path)) return load_onnx_model(path, onnx);
  return model_from_json(read_json_file(path), path);
}

} // namespace ipusim
