#pragma once
// `ipusim compare`: run documents (ipusim run --json) side by side, figure by figure,
// each against the first with its difference and ratio, and a paragraph on what changed
// and where the time went. docs/reports.md ("Comparing runs") describes the table.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ipusim {

struct RunDocument {
  std::string file;
  nlohmann::json document;
};

// Throws InputError (compare.not-a-run) unless `document` has the shape of `run --json`.
void check_run_document(const nlohmann::json& document, const std::string& file);

// A document of `run --schedules` (several pipelined runs, one per schedule) as one document
// per schedule, named "FILE [SCHEDULE]", each with its run, its plan and its schedule in
// "execution", so that they compare as runs of one schedule each ("differs from A in:
// schedule"). Any other document is returned as it is.
std::vector<RunDocument> split_by_schedule(const RunDocument& run);

std::string render_comparison(const std::vector<RunDocument>& runs);

} // namespace ipusim
