// ipusim annotate MODEL.onnx --layers-per-ipu 3,7,7,7 [--heads-on 0|last] -o OUT.onnx|.json:
// PopART's placement attributes written onto an un-annotated ONNX model, by the layers it
// detects or by node-name prefixes.
#include <filesystem>
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/onnx_annotate.hpp"
#include "sim/output/output_file.hpp"

namespace ipusim::cli {

namespace {

struct AnnotateCommandOptions {
  std::string input, output, layers_per_ipu, heads_on = "last";
  std::vector<std::string> split_at;
  std::int64_t batch_size = 0;
  int phased = 0;
  std::string dtype;
  bool force = false;
};

std::vector<std::int64_t> parse_counts(const std::string& text) {
  std::vector<std::int64_t> counts;
  std::string item;
  auto flush = [&] {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || v < 0)
      throw InputError("--layers-per-ipu", "", "annotate.bad-layers-per-ipu",
                       "expected non-negative layer counts per IPU such as 3,7,7,7, got \"" + text + "\"");
    counts.push_back(v);
    item.clear();
  };
  for (char c : text) {
    if (c == ',') flush();
    else if (c != ' ' && c != '[' && c != ']') item += c;
  }
  flush();
  return counts;
}

int annotate(const AnnotateCommandOptions& o) {
  if (!is_onnx_path(o.input))
    throw InputError(o.input, "/", "annotate.bad-input", "ipusim annotate reads an ONNX model (a .onnx file)");
  const auto extension = std::filesystem::path(o.output).extension();
  if (o.output != "-" && extension != ".onnx" && extension != ".json")
    throw InputError(o.output, "/", "annotate.bad-output", "name a .onnx or .json output file");
  const int ways = (o.layers_per_ipu.empty() ? 0 : 1) + (o.split_at.empty() ? 0 : 1) + (o.phased > 0 ? 1 : 0);
  if (ways != 1)
    throw InputError("--layers-per-ipu", "", "annotate.placement",
                     "give one of --layers-per-ipu (by detected layers), --split-at (by node-name prefixes) or "
                     "--phased (a phase per detected layer)");
  AnnotateOptions options;
  if (!o.layers_per_ipu.empty()) options.layers_per_ipu = parse_counts(o.layers_per_ipu);
  options.heads_on_last = o.heads_on == "last";
  options.split_at = o.split_at;
  options.phased_stages = o.phased;
  if (o.batch_size > 0) options.import.batch_size = o.batch_size;
  if (!o.dtype.empty()) options.import.float_dtype = parse_dtype(o.dtype);
  const Annotation a = annotate_onnx_model(o.input, o.output, options);
  write_output(o.output, a.output, o.force);
  std::ostream& summary = o.output == "-" ? std::cerr : std::cout;  // with -o -, standard output is the model alone
  if (o.phased > 0)
    summary << o.output << ": " << a.layers.size() << " layers (" << a.layers.front() << " ... " << a.layers.back()
            << ") in execution phases 1.." << a.layers.size() << ", the stem in 0 and the head in "
            << a.layers.size() + 1 << ", phase p on IPU p % " << o.phased << " (run with --mode phased"
            << (o.phased == 1 ? " --set execution.executionPhaseSettings.stages=1" : "") << ")\n";
  else if (!a.layers.empty())
    summary << o.output << ": " << a.layers.size() << " layers (" << a.layers.front() << " ... " << a.layers.back()
              << ") placed by --layers-per-ipu " << o.layers_per_ipu << ", heads on " << o.heads_on << "\n";
  else
    summary << o.output << ": placed by " << o.split_at.size() << " split(s)\n";
  return kExitOk;
}

} // namespace

Command add_annotate_command(CLI::App& app) {
  auto o = std::make_shared<AnnotateCommandOptions>();
  auto* cmd = app.add_subcommand("annotate", "Place an ONNX model's nodes on IPUs and pipeline stages (PopART's "
                                              "__ipu_number / __pipeline_stage)");
  cmd->add_option("model", o->input, "ONNX model (.onnx)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "Annotated model to write: .onnx, or .json (ipusim's format); - writes the annotated ONNX to standard output")
      ->required();
  cmd->add_option("--layers-per-ipu", o->layers_per_ipu,
                  "Detected layers per IPU, e.g. 3,7,7,7 (entry i = IPU i; 0 allowed)");
  cmd->add_option("--heads-on", o->heads_on, "After the last layer: on the last used IPU, or back on IPU 0 in a "
                                             "new final stage")
      ->check(CLI::IsMember({"0", "last"}));
  cmd->add_option("--split-at", o->split_at,
                  "Instead of layers: node-name prefixes where IPU 1, 2, ... begin (as Graphcore's --pipeline-splits)");
  cmd->add_option("--phased", o->phased,
                  "Instead: a PopART execution phase per detected layer (__execution_phase; the stem first, the head "
                  "last), phase p on IPU p % STAGES; STAGES is executionPhaseSettings.stages, 1 or 2")
      ->check(CLI::Range(1, 2));
  cmd->add_option("--batch-size", o->batch_size, "Static leading batch dimension (for a .json output)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", o->dtype, "The precision the model runs in: every float tensor becomes this type "
                                        "(default: as the file has them)")
      ->check(CLI::IsMember({"float16", "float32"}));
  cmd->add_flag("--force", o->force, "Overwrite the output file if it exists");
  return [o] { return annotate(*o); };
}

} // namespace ipusim::cli
