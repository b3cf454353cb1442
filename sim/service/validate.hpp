#pragma once
// `ipusim validate` as a call both front ends make: every check a run would make of a model,
// config or scenario file, without simulating.
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "sim/service/option_range.hpp"

namespace ipusim::service {

struct ValidateOptions {
  std::string path;               // a model (JSON or .onnx), config or scenario file, told apart by its keys
  std::vector<std::string> sets;  // --set path=value: model.* on a model, config.* on a config
  std::int64_t batch_size = 0;    // an ONNX model's static leading batch dimension (0: as the file has it)
  std::string dtype;              // an ONNX model's float precision (empty: as the file has it)
};

inline const std::vector<std::string> kDtypes{"float16", "float32"};  // dtype's choices
// batch_size's range, checked as a real number (1.5 passes it, then is no integer): above 0.
inline constexpr OptionRange<double> kBatchSizeRange{std::numeric_limits<double>::min(),
                                                     std::numeric_limits<double>::max()};

// Writes what the file is ("PATH: valid scenario, ...") to `report`, and for a scenario that does
// not fit in memory, why and what would make it fit; warnings go to standard error. A file that
// is not valid throws InputError (the CLI's exit code 2); returning means it is (exit code 0).
void validate_file(const ValidateOptions& options, std::ostream& report);

} // namespace ipusim::service
