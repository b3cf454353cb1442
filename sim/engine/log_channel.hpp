#pragma once
// A run's log over the pipe from the simulating process: 'E' an event, 'T' a transfer,
// 'S' the run summary.
#include "sim/engine/engine.hpp"
#include "sim/base/forked.hpp"

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
  link_traffic_fields(w, s.links);
  w.list(s.not_periodic, [&](auto& name) { w(name); });
}

// The parent side. Reads the fields of a record whose tag was just read.
Event receive_event(ByteReader& in);
TransferRecord receive_transfer(ByteReader& in);
RunSummary receive_summary(ByteReader& in);

// Keeps everything, in this process.
class LogCollector : public RunObserver {
public:
  void on_event(const Event& event) override { events.push_back(event); }
  void on_transfer(const TransferRecord& transfer) override { transfers.push_back(transfer); }
  std::vector<Event> events;
  std::vector<TransferRecord> transfers;
};

// RunLog's order: events as they came (per IPU in program order), transfers grouped by
// the IPU that recorded them.
RunLog make_log(std::vector<Event> events, std::vector<TransferRecord> transfers, const RunSummary& summary);

} // namespace ipusim
