#include "sim/engine/log_channel.hpp"

#include <algorithm>

namespace ipusim {

void LogSender::on_event(const Event& event) {
  out_.record('E');
  out_.value(event);
}

void LogSender::on_transfer(const TransferRecord& t) {
  out_.record('T');
  out_.value(t.src);
  out_.value(t.dst);
  out_.value(t.copy);
  out_.value(t.start);
  out_.value(t.end);
  out_.value(t.bytes);
  out_.value<std::uint64_t>(t.links.size());
  for (int l : t.links) out_.value(l);
}

void send_summary(ByteWriter& out, const RunSummary& s) {
  out.record('S');
  out.value(s.end_time);
  out.value(s.activities);
  out.value(s.steps_total);
  out.value(s.steps_simulated);
  out.value<std::uint64_t>(s.links.size());
  for (const LinkTraffic& l : s.links) {
    out.text(l.name);
    out.value(l.bytes);
  }
  out.value<std::uint64_t>(s.not_periodic.size());
  for (const std::string& name : s.not_periodic) out.text(name);
}

Event receive_event(ByteReader& in) { return in.value<Event>(); }

TransferRecord receive_transfer(ByteReader& in) {
  TransferRecord t;
  t.src = in.value<int>();
  t.dst = in.value<int>();
  t.copy = in.value<int>();
  t.start = in.value<double>();
  t.end = in.value<double>();
  t.bytes = in.value<double>();
  t.links.resize(in.value<std::uint64_t>());
  for (int& l : t.links) l = in.value<int>();
  return t;
}

RunSummary receive_summary(ByteReader& in) {
  RunSummary s;
  s.end_time = in.value<double>();
  s.activities = in.value<std::uint64_t>();
  s.steps_total = in.value<std::int64_t>();
  s.steps_simulated = in.value<std::int64_t>();
  s.links.resize(in.value<std::uint64_t>());
  for (LinkTraffic& l : s.links) {
    l.name = in.text();
    l.bytes = in.value<double>();
  }
  s.not_periodic.resize(in.value<std::uint64_t>());
  for (std::string& name : s.not_periodic) name = in.text();
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
