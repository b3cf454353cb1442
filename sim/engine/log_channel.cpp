#include "sim/engine/log_channel.hpp"

#include <algorithm>

namespace ipusim {

void LogSender::on_event(const Event& event) {
  out_.record('E');
  out_.value(event);
}

void LogSender::on_transfer(const TransferRecord& t) {
  out_.record('T');
  Writing w{out_};
  transfer_fields(w, t);
}

void send_summary(ByteWriter& out, const RunSummary& s) {
  out.record('S');
  Writing w{out};
  summary_fields(w, s);
}

Event receive_event(ByteReader& in) { return in.value<Event>(); }

TransferRecord receive_transfer(ByteReader& in) {
  TransferRecord t;
  Reading r{in};
  transfer_fields(r, t);
  return t;
}

RunSummary receive_summary(ByteReader& in) {
  RunSummary s;
  Reading r{in};
  summary_fields(r, s);
  return s;
}

RunLog make_log(std::vector<Event> events, std::vector<TransferRecord> transfers, const RunSummary& summary) {
  RunLog log;
  log.end_time = summary.end_time;
  log.activities = summary.activities;
  log.links = summary.links;
  log.events = std::move(events);
  const auto recorder = [](const TransferRecord& t) { return t.src >= 0 ? t.src : t.dst; };
  std::stable_sort(transfers.begin(), transfers.end(),
                   [&](const TransferRecord& a, const TransferRecord& b) { return recorder(a) < recorder(b); });
  log.transfers = std::move(transfers);
  return log;
}

} // namespace ipusim
