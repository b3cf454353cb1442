#pragma once
// `ipusim run --trace FILE`: the runs as a Chrome trace-event document (JSON Object
// Format), for https://ui.perfetto.dev and chrome://tracing (docs/timelines.md).
//
// One process per mode run ("sharded", "pipelined (popart)"); inside it one track per
// IPU ("IPU n": compute, host streams, copy phases, syncs) and one track per directed
// link that carried traffic ("link ipu0->ipu1", "link host->ipu0": one slice per
// transfer crossing it). Complete ("X") events, ts and dur in microseconds. Events of
// zero duration are left out (chrome://tracing cannot show them); otherData counts them.
// The same simulation always gives the same document, byte for byte.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sim/io/scenario.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

nlohmann::json chrome_trace(const Scenario& scenario, const Simulation& simulation);
// The document as text, one trace event per line (compact, diffable).
std::string render_trace(const nlohmann::json& trace);
// The same text, written as it is made: only the runs' logs and one small record per
// slice are held, not the document.
void write_trace(std::ostream& out, const Scenario& scenario, const Simulation& simulation);

} // namespace ipusim
