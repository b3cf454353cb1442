#include "sim/io/model_writer.hpp"

#include <nlohmann/json.hpp>
#include <variant>

namespace ipusim {

namespace {

using Json = nlohmann::ordered_json;

Json attribute_json(const AttributeValue& value) {
  return std::visit([](const auto& v) { return Json(v); }, value);
}

Json tensor_json(const Tensor& t) {
  return Json{{"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"kind", tensor_kind_name(t.kind)}};
}

Json op_json(const Op& op) {
  Json j{{"name", op.name}, {"type", op.type}, {"inputs", op.inputs}, {"outputs", op.outputs}};
  if (!op.attributes.empty()) {
    Json a = Json::object();
    for (const auto& [name, value] : op.attributes) a[name] = attribute_json(value);
    j["attributes"] = a;
  }
  if (op.virtual_graph) j["virtualGraph"] = *op.virtual_graph;
  if (op.pipeline_stage) j["pipelineStage"] = *op.pipeline_stage;
  if (op.execution_phase) j["executionPhase"] = *op.execution_phase;
  if (op.flops) j["flops"] = *op.flops;
  if (op.backward_flops) j["backwardFlops"] = *op.backward_flops;
  return j;
}

} // namespace

std::string model_to_json_text(const Model& m, const std::string& description) {
  // A string attribute of an ONNX node is bytes, not always UTF-8: replaced, not thrown on.
  std::string s = "{\n  \"name\": " + Json(m.name).dump(-1, ' ', false, Json::error_handler_t::replace) + ",\n  \"description\": " + Json(description).dump(-1, ' ', false, Json::error_handler_t::replace) +
                  ",\n  \"tensors\": {\n";
  std::size_t i = 0;
  for (const auto& [name, t] : m.tensors)
    s += "    " + Json(name).dump(-1, ' ', false, Json::error_handler_t::replace) + ": " + tensor_json(t).dump(-1, ' ', false, Json::error_handler_t::replace) + (++i < m.tensors.size() ? ",\n" : "\n");
  s += "  },\n  \"ops\": [\n";
  for (std::size_t k = 0; k < m.ops.size(); ++k)
    s += "    " + op_json(m.ops[k]).dump(-1, ' ', false, Json::error_handler_t::replace) + (k + 1 < m.ops.size() ? ",\n" : "\n");
  s += "  ],\n  \"anchors\": " + Json(m.anchors).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n}\n";
  return s;
}

} // namespace ipusim
