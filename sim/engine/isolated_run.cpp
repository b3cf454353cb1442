// run_engine: the simulation in a forked child, its whole log streamed back.
#include "sim/engine/engine.hpp"
#include "sim/engine/log_channel.hpp"

namespace ipusim {

RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware, const EngineOptions& options) {
  std::vector<Event> events;
  std::vector<TransferRecord> transfers;
  RunSummary summary;
  run_forked(
      [&](ByteWriter& out) {
        LogSender sender(out);
        const RunSummary s = run_engine_in_process(schedule, hardware, sender, options);
        send_summary(out, s);
      },
      [&](ByteReader& in) {
        for (char tag = in.tag(); tag != 'S'; tag = in.tag()) {
          if (tag == 'E') events.push_back(receive_event(in));
          else if (tag == 'T') transfers.push_back(receive_transfer(in));
          else throw EngineError("the simulation process sent an unreadable result");
        }
        summary = receive_summary(in);
      },
      "the simulation process", simulation_child_heap());
  return make_log(std::move(events), std::move(transfers), summary);
}

} // namespace ipusim
