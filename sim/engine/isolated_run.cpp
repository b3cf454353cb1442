// run_engine: the simulation in a forked child, its whole log streamed back.
#include "sim/engine/engine.hpp"
#include "sim/engine/log_channel.hpp"

namespace ipusim {

RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware, const EngineOptions& options) {
  LogCollector log;
  RunSummary summary;
  fork_simulation(
      schedule,
      [&](ByteWriter& out) {
        LogSender sender(out);
        const RunSummary s = run_engine_in_process(schedule, hardware, sender, options);
        send_summary(out, s);
      },
      [&](ByteReader& in) { summary = receive_log(in, log); });
  return make_log(std::move(log.events), std::move(log.transfers), summary);
}

} // namespace ipusim
