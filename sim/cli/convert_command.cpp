// ipusim convert MODEL.onnx -o MODEL.json: an ONNX model in ipusim's JSON model format,
// to read, edit (give an op "flops") and run.
#include <filesystem>
#include <iostream>
#include <memory>

#include "sim/io/model_loader.hpp"
#include "sim/cli/commands.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "sim/output/output_file.hpp"

namespace ipusim::cli {

namespace {

struct ConvertOptions {
  std::string input, output;
  std::int64_t batch_size = 0;
  std::string dtype;
  bool force = false;
};

int convert(const ConvertOptions& o) {
  if (!is_onnx_path(o.input))
    throw InputError(o.input, "/", "convert.bad-input", "ipusim convert reads an ONNX model (a .onnx file)");
  if (o.output != "-" && std::filesystem::path(o.output).extension() != ".json")
    throw InputError(o.output, "/", "convert.bad-output", "ipusim convert writes ipusim's JSON model format: name a .json file");
  OnnxImportOptions options;
  if (o.batch_size > 0) options.batch_size = o.batch_size;
  if (!o.dtype.empty()) options.float_dtype = parse_dtype(o.dtype);
  const Model m = load_onnx_model(o.input, options);
  say_import_warnings(m, std::cerr);
  write_output(o.output, model_to_json_text(m, "converted by ipusim convert from " + o.input), o.force);
  // With -o -, standard output is the document alone.
  (o.output == "-" ? std::cerr : std::cout) << o.output << ": " << m.ops.size() << " ops, " << m.tensors.size()
                                            << " tensors\n";
  return kExitOk;
}

} // namespace

Command add_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand("convert", "Write an ONNX model in ipusim's JSON model format");
  cmd->add_option("model", o->input, "ONNX model (.onnx)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "JSON model to write (atomically; - is standard output)")->required();
  cmd->add_option("--batch-size", o->batch_size,
                  "Size of the static leading batch dimension in the file (default: a symbolic one, or none)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", o->dtype, "The precision the model runs in: every float tensor becomes this type "
                                        "(default: as the file has them)")
      ->check(CLI::IsMember({"float16", "float32"}));
  cmd->add_flag("--force", o->force, "Overwrite the output file if it exists");
  return [o] { return convert(*o); };
}

} // namespace ipusim::cli
