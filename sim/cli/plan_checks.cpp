#include "sim/cli/plan_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "sim/io/input_error.hpp"
#include "sim/output/units.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/layers.hpp"

namespace ipusim::cli {

namespace {

// Measured on the development machine (docs/planner.md, "Bounds"): the search keeps each
// candidate in about 0.2 KiB (1 KiB assumed) and evaluates one in about 10 us plus 19 ns per
// micro-batch of G (the PopART step is timed micro-batch by micro-batch; twice that assumed,
// for slower machines).
constexpr double kBytesPerCandidate = 1024;
constexpr double kSecondsPerCandidate = 2e-5;
constexpr double kSecondsPerCandidateMicroBatch = 4e-8;
// A search estimated to take longer is refused: nobody waits for it, and a smaller search
// (fewer IPUs, fewer G values, named layers) answers the same question.
constexpr double kMaxSeconds = 600;
// Searches estimated above these are announced.
constexpr double kNoteSeconds = 10;
constexpr double kNoteBytes = 256.0 * (1 << 20);

// C(n, k) as a double (exact below 2^53, and large values stay large instead of wrapping).
double binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  k = std::min(k, n - k);
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return std::round(c);
}

std::string count_text(double n) {
  char text[32];
  std::snprintf(text, sizeof text, n < 1e15 ? "%.0f" : "%.3g", n);
  return text;
}

} // namespace

void check_write_prefix(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(prefix);
  const auto status = fs::status(p, ec);
  std::string why;
  if (prefix.empty() || p.filename().empty() || p.filename() == "." || p.filename() == "..")
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

PlanSearchSize check_plan_inputs(const Scenario& sc, int ipus, const std::vector<std::int64_t>& gs,
                                 std::ostream* notes) {
  PlanSearchSize size;
  if (ipus <= 0) {
    std::int64_t highest = 0;
    for (const Op& op : sc.model.ops) highest = std::max(highest, op.virtual_graph.value_or(0));
    ipus = static_cast<int>(std::min<std::int64_t>(highest + 1, INT32_MAX));
  }
  size.ipus = ipus;
  const LayerStructure layers = detect_layers(sc.model);
  size.units = static_cast<int>(layers.names.size());
  if (ipus < 2 || ipus > size.units) return size;  // the planner refuses it (plan.ipus)
  // The replicas of the planned pipeline must fit the system, and a placement must name
  // each of their IPUs once, as run requires.
  physical_ipus(sc, ipus);
  const Execution& ex = sc.execution;
  const std::vector<std::int64_t> g_values =
      ex.training && !gs.empty() ? gs : std::vector<std::int64_t>{ex.gradient_accumulation};
  const double per_g = binomial(size.units - 1, ipus - 1) * (layers.has_heads() ? 2 : 1) * (ex.training ? 2 : 1);
  size.candidates = per_g * static_cast<double>(g_values.size());
  for (std::int64_t g : g_values)
    size.seconds += per_g * (kSecondsPerCandidate + kSecondsPerCandidateMicroBatch * static_cast<double>(g) *
                                                        static_cast<double>(ex.batches_per_step));
  size.bytes = size.candidates * kBytesPerCandidate;
  const std::string what = "splitting " + std::to_string(size.units) + (layers.by_ops ? " ops" : " layers") +
                           " over " + std::to_string(ipus) + " IPUs is " + count_text(size.candidates) +
                           " candidates to evaluate, about " + format_bytes(size.bytes) + " and " +
                           format_seconds(size.seconds);
  const std::string smaller =
      "plan fewer IPUs (--ipus), fewer or smaller G values (--gradient-accumulation), or a model with named layers "
      "(docs/planner.md)";
  if (size.bytes > memory_budget_bytes())
    throw InputError(sc.model.file, sc.model.ops_pointer, "plan.too-large",
                     what + ", more memory than the " + format_bytes(memory_budget_bytes()) +
                         " this machine can give; " + smaller);
  if (size.seconds > kMaxSeconds)
    throw InputError(sc.model.file, sc.model.ops_pointer, "plan.too-large",
                     what + ", longer than the " + format_seconds(kMaxSeconds) + " a search may take; " + smaller);
  if (notes && (size.seconds > kNoteSeconds || size.bytes > kNoteBytes)) *notes << "ipusim: note: " << what << "\n";
  return size;
}

} // namespace ipusim::cli
