// ipusim validate FILE: the flags bound onto the options of validate_file (sim/service/validate.hpp),
// its report printed.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/service/validate.hpp"

namespace ipusim::cli {

Command add_validate_command(CLI::App& app) {
  using namespace service;
  auto o = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Check a model, config or scenario file without simulating");
  cmd->add_option("file", o->path, "Model (JSON or .onnx), config or scenario file")->required();
  cmd->add_option("--batch-size", o->batch_size, "An ONNX model's static leading batch dimension")
      ->check(CLI::Range(kBatchSizeRange.min, kBatchSizeRange.max, "POSITIVE"));
  cmd->add_option("--dtype", o->dtype, "The precision the model runs in: every float tensor becomes this type "
                                        "(default: as the file has them)")
      ->check(CLI::IsMember(kDtypes));
  cmd->add_option("--set", o->sets,
                  "Override a field first: path=value (model.* on a model, config.* on a config); repeatable")
      ->allow_extra_args(false);
  return [o] {
    validate_file(*o, std::cout);
    return kExitOk;
  };
}

} // namespace ipusim::cli
