#pragma once
// A run's log over the pipe from the simulating process: 'E' an event, 'T' a transfer,
// 'S' the run summary.
#include "sim/engine/engine.hpp"
#include "sim/base/forked.hpp"

#include <functional>

namespace ipusim {

class LogSender : public RunObserver {
public:
  explicit LogSender(ByteWriter& out) : out_(out) {}
  void on_event(const Event& event) override;
  void on_transfer(const TransferRecord& transfer) override;

private:
  ByteWriter& out_;
};

void send_summary(ByteWriter& out, const RunSummary& summary);

// The wire formats (forked.hpp's Writing and Reading), each field named once.
template <class Wire, class Links> void link_traffic_fields(Wire& w, Links& links) {
  w.list(links, [&](auto& l) {
    w(l.name);
    w(l.bytes);
  });
}
template <class Wire, class Transfer> void transfer_fields(Wire& w, Transfer& t) {
  w(t.src);
  w(t.dst);
  w(t.copy);
  w(t.start);
  w(t.end);
  w(t.bytes);
  w.list(t.links, [&](auto& link) { w(link); });
}
template <class Wire, class Summary> void summary_fields(Wire& w, Summary& s) {
  w(s.end_time);
  w(s.activities);
  w(s.steps_total);
  w(s.steps_simulated);
  w(s.ipus_simulated);
  link_traffic_fields(w, s.links);
  w.list(s.not_periodic, [&](auto& name) { w(name); });
}

// Keeps everything, in this process.
class LogCollector : public RunObserver {
public:
  void on_event(const Event& event) override { events.push_back(event); }
  void on_transfer(const TransferRecord& transfer) override { transfers.push_back(transfer); }
  std::vector<Event> events;
  std::vector<TransferRecord> transfers;
};

// The parent side: the records up to the summary, events and transfers into `log`, a record of
// another tag to `other` (which reads its fields and says whether it knew the tag); an unknown
// tag is an EngineError. Returns the summary.
using OtherRecord = std::function<bool(char tag, ByteReader& in)>;
RunSummary receive_log(ByteReader& in, LogCollector& log, const OtherRecord& other = {});

// RunLog's order: events as they came (per IPU in program order), transfers grouped by
// the IPU that recorded them.
RunLog make_log(std::vector<Event> events, std::vector<TransferRecord> transfers, const RunSummary& summary);

} // namespace ipusim
