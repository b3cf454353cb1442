#pragma once
// CSV for analysis (pandas, spreadsheets): a run's figures, one row per mode.
#include <string>

#include <nlohmann/json.hpp>

namespace ipusim {

// RFC 4180: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);

// The `run --json` document as CSV: a header, then one row per run (mode). Every number of
// a run's JSON object is a column named by its path in it, arrays by element id:
// "stepTimeSeconds", "latencySeconds.mean", "timeShares.idleImbalance", "ipu3.idle.fillFlushSeconds"
// (runs[].ipus[]: physical IPUs), "memory.vipu1.fullestTileBytes" (runs[].memory.ipus[]: virtual IPUs,
// the IPUs of one replica), "links.ipu0->ipu1.bytes". Lists of names and memory details
// (categories, stashes, verdicts) are left to the JSON. Numbers print as the JSON does
// (the shortest text that reads back to the same double); a figure one run lacks is empty.
std::string render_run_csv(const nlohmann::json& report);

} // namespace ipusim
