#pragma once
// The protobuf side of ONNX import, shared by the loader and `ipusim annotate`. Only
// sim/io/onnx_*.cpp include this (and with it the ONNX headers).
#include <onnx/onnx_pb.h>

#include <string>

#include "sim/io/onnx_model_loader.hpp"

namespace ipusim {

// Parses the file; a truncated or non-ONNX file is InputError onnx.unreadable.
onnx::ModelProto read_onnx_proto(const std::string& path);
// `origin` names the file in errors and locates external data files.
Model model_from_onnx_proto(onnx::ModelProto proto, const std::string& origin, const OnnxImportOptions& options);

} // namespace ipusim
