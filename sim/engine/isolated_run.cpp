// run_engine: the simulation in a forked child, its whole log streamed back.
#include "sim/base/heap.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/log_channel.hpp"

namespace ipusim {

RunLog run_engine(const Schedule& schedule, const HardwareConfig& hardware, const EngineOptions& options) {
  LogCollector log;
  RunSummary summary;
  // A fresh heap's pages are zero pages to fault in; an inherited one's are the parent's, shared.
  const ChildHeap heap = simulation_child_heap();
  run_forked(
      [&](ByteWriter& out) {
        if (heap == ChildHeap::Fresh) prefault_heap(simulation_heap_bytes(schedule));
        LogSender sender(out);
        const RunSummary s = run_engine_in_process(schedule, hardware, sender, options);
        send_summary(out, s);
      },
      [&](ByteReader& in) { summary = receive_log(in, log); }, "the simulation process", heap);
  return make_log(std::move(log.events), std::move(log.transfers), summary);
}

} // namespace ipusim
