#include "sim/cli/plan_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "sim/io/input_error.hpp"
#include "sim/base/units.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/layers.hpp"

namespace ipusim::cli {

void check_write_prefix(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(prefix);
  const auto status = fs::status(p, ec);
  std::string why;
  if (prefix == "-")
    why = "would be standard output (as for run), which cannot hold two files";
  else if (prefix.empty() || p.filename().empty() || p.filename() == "." || p.filename() == "..")
    why = "names a folder";
  else if (fs::is_directory(status))
    why = "is a folder";
  else if (fs::exists(status) && !fs::is_regular_file(status))
    why = "is a device, FIFO or socket";
  else if (const fs::path parent = p.parent_path(); !parent.empty() && fs::is_directory(parent, ec) &&
                                                       parent.lexically_normal() == fs::path("/dev"))
    why = "is in /dev";
  if (!why.empty())
    throw InputError("command line", "--write", "cli.bad-value",
                     "--write " + prefix + " " + why + "; it is the prefix of the two files written (PREFIX.model.json, "
                     "PREFIX.scenario.json): name one, e.g. --write out/bert-plan");
}

} // namespace ipusim::cli
