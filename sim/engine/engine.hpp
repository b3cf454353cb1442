#pragma once
// The only part of ipusim that sees SimGrid. It builds the platform from the
// hardware config (a host per IPU, full-duplex IPU-Links with exact analytic timing,
// a host link per IPU), runs one actor per IPU program, and returns what happened.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/io/hardware.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// Receive: waiting for an asynchronous copy to arrive (idle time, not work).
// StreamingMemory: optimizer state moving to or from Streaming Memory.
enum class EventKind { Compute, HostInput, HostOutput, Exchange, Sync, Receive, StreamingMemory };
std::string event_kind_name(EventKind kind);

struct Event {
  int ipu = 0;
  EventKind kind = EventKind::Compute;
  double start = 0, end = 0;
  int stage = -1;
  std::int64_t micro_batch = -1;
  Pass pass = Pass::None;
  double bytes = 0;
};

struct LinkTraffic {
  std::string name;   // "ipu0->ipu1", "host->ipu0": one direction of a full-duplex link
  double bytes = 0;
};

// One transfer over the links of its route (an inter-IPU copy or a host stream).
struct TransferRecord {
  int src = 0, dst = 0;       // IPU ids; -1 is the host, -2 the IPU's Streaming Memory
  int copy = -1;              // the plan's copy id; -1 for host streams
  double start = 0, end = 0;  // when the bytes moved (after both sides were ready)
  double bytes = 0;
  std::vector<int> links;     // indices into RunLog::links, along the route
};

struct RunLog {
  double end_time = 0;
  std::vector<Event> events;        // per IPU in program order, IPUs ascending
  std::vector<LinkTraffic> links;   // every directed link, in config order
  std::vector<TransferRecord> transfers;  // in completion order per IPU, IPUs ascending
  std::uint64_t activities = 0;     // SimGrid activities run: execs, comms and sync sleeps
};

// A simulation that cannot finish (deadlock, inconsistent programs) is an internal fault.
class EngineError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// SimGrid allows one simulation per process: run_engine runs it in a forked child
// process and returns its log, so callers may simulate as often as they like.
RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware);
// Runs in this process; only for a process that simulates exactly once.
RunLog run_engine_in_process(const Schedule& schedule, const HardwareConfig& hardware);

} // namespace ipusim
