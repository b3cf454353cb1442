#pragma once
// What `plan` checks of its output before it searches.
#include <string>

namespace ipusim::cli {

// `plan --write PREFIX` writes PREFIX.model.json and PREFIX.scenario.json: PREFIX must name a
// file in a folder, not a folder ("out/", hidden files inside it) nor a device or FIFO
// ("/dev/null", files created beside it in /dev). Throws cli.bad-value.
void check_write_prefix(const std::string& prefix);

} // namespace ipusim::cli
