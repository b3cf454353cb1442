#pragma once
// Reading the documents `ipusim run --json` and `ipusim sweep` write. Every key the
// report reads goes through `field` (or the typed readers below), so that an absent or
// mistyped member reads as "-" rather than throwing.
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipusim::report {

using Json = nlohmann::json;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// `key` of an object; nullptr when absent or when `j` is not an object.
const Json* field(const Json& j, const std::string& key);
// A number, else `fallback`.
double num(const Json& j, const std::string& key, double fallback = kNaN);
// A string; another value as its JSON text; else `fallback`.
std::string str(const Json& j, const std::string& key, const std::string& fallback = "");
// An object or array member, else an empty one of that kind.
const Json& object_at(const Json& j, const std::string& key);
const Json& array_at(const Json& j, const std::string& key);
// An integer member (e.g. an IPU's "id"), else `fallback`.
std::int64_t integer(const Json& j, const std::string& key, std::int64_t fallback = -1);

// A JSON scalar as a person reads it: strings bare, numbers in shortest form.
std::string scalar_text(const Json& v);
std::string or_dash(const std::string& s);
std::string seconds(double s);
std::string percent(double f);
std::string rate(double r);
std::string bytes(double b);
std::string percent_tick(double f);

// "sharded", "pipelined (popart)".
std::string mode_label(const Json& run);
std::string mode_color(const std::string& mode);
// Runs ordered sharded, pipelined, then any other mode in document order.
std::vector<const Json*> ordered_runs(const Json& doc);
const Json* run_of(const Json& doc, const std::string& mode);
// Sharded step time / pipelined step time; NaN without both.
double speedup_of(const Json& doc);

struct Shares {
  double busy = kNaN, host = kNaN, exchange = kNaN, sync = kNaN, idle = kNaN;
};
// Shares of IPU-time (IPUs x step time) from the per-IPU seconds, as `ipusim run` prints them.
Shares shares_of(const Json& run);

// One part of a run's step in `timeShares` (docs/step-time.md): its key and its name.
struct TimePart {
  std::string key;      // in runs[].timeShares
  std::string ipu_key;  // in runs[].ipus[] (busy parts) or runs[].ipus[].idle (idle causes)
  std::string name;
  bool idle;
};
// compute, host I/O, Streaming Memory, copies, syncs, then the idle causes.
const std::vector<TimePart>& time_parts();
// The run's share of IPU-time in that part; NaN when the document lacks timeShares.
double time_share(const Json& run, const TimePart& part);
// The same part in seconds for one IPU (ipus[] entry); NaN when not recorded.
double ipu_seconds(const Json& ipu, const TimePart& part);

// Whether the run's memory fits (memory.fits); nullopt-like -1 when not recorded.
int fits_in_memory(const Json& run);

std::string execution_text(const Json& execution, const std::set<std::string>& skip = {});

} // namespace ipusim::report
