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

RunSummary receive_log(ByteReader& in, LogCollector& log, const OtherRecord& other) {
  for (char tag = in.tag(); tag != 'S'; tag = in.tag()) {
    if (tag == 'E') {
      log.events.push_back(in.value<Event>());
    } else if (tag == 'T') {
      TransferRecord& t = log.transfers.emplace_back();
      Reading r{in};
      transfer_fields(r, t);
    } else if (!other || !other(tag, in)) {
      throw EngineError("the simulation process sent an unreadable result");
    }
  }
  RunSummary summary;
  Reading r{in};
  summary_fields(r, summary);
  return summary;
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
