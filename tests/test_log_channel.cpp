// The wire between the simulating child and ipusim: an event, a transfer and a run summary sent
// by the child arrive whole, every field in its place (one field list serves both directions),
// and a record of the caller's own goes to the caller.
#include <catch2/catch.hpp>

#include "sim/engine/log_channel.hpp"

using namespace ipusim;

TEST_CASE("log channel: a transfer and a run summary cross the pipe field for field", "[engine]") {
  TransferRecord sent;
  sent.src = 3;
  sent.dst = -2;
  sent.copy = 17;
  sent.start = 1.25e-3;
  sent.end = 2.5e-3;
  sent.bytes = 4096.5;
  sent.links = {4, 9, 11};
  RunSummary summary;
  summary.end_time = 0.75;
  summary.activities = 123456789012ull;
  summary.steps_total = 1LL << 40;
  summary.steps_simulated = 77;
  summary.links = {{"ipu0->ipu1", 1e9}, {"host->ipu3", 2.5}};
  summary.not_periodic = {"main cycles", ""};

  Event event;
  event.ipu = 5;
  event.micro_batch = 9;
  event.start = 0.5;
  event.end = 0.625;
  LogCollector log;
  RunSummary got_summary;
  double other = 0;
  run_forked(
      [&](ByteWriter& out) {
        LogSender sender(out);
        sender.on_event(event);
        sender.on_transfer(sent);
        out.record('Q');  // a record of the caller's own, between the log's
        out.value(6.5);
        send_summary(out, summary);
      },
      [&](ByteReader& in) {
        got_summary = receive_log(in, log, [&](char tag, ByteReader& record) {
          if (tag == 'Q') other = record.value<double>();
          return tag == 'Q';
        });
      });
  CHECK(other == 6.5);
  REQUIRE(log.events.size() == 1);
  CHECK(log.events[0].ipu == 5);
  CHECK(log.events[0].micro_batch == 9);
  CHECK(log.events[0].start == 0.5);
  CHECK(log.events[0].end == 0.625);
  REQUIRE(log.transfers.size() == 1);
  const TransferRecord& got = log.transfers[0];
  CHECK(got.src == 3);
  CHECK(got.dst == -2);
  CHECK(got.copy == 17);
  CHECK(got.start == 1.25e-3);
  CHECK(got.end == 2.5e-3);
  CHECK(got.bytes == 4096.5);
  CHECK(got.links == std::vector<int>{4, 9, 11});
  CHECK(got_summary.end_time == 0.75);
  CHECK(got_summary.activities == 123456789012ull);
  CHECK(got_summary.steps_total == (1LL << 40));
  CHECK(got_summary.steps_simulated == 77);
  REQUIRE(got_summary.links.size() == 2);
  CHECK(got_summary.links[0].name == "ipu0->ipu1");
  CHECK(got_summary.links[0].bytes == 1e9);
  CHECK(got_summary.links[1].name == "host->ipu3");
  CHECK(got_summary.links[1].bytes == 2.5);
  CHECK(got_summary.not_periodic == std::vector<std::string>{"main cycles", ""});
}

TEST_CASE("log channel: a record nobody reads is an engine error, not skipped", "[engine]") {
  LogCollector log;
  auto child = [](ByteWriter& out) {
    out.record('Q');
    out.value(1.0);
    send_summary(out, RunSummary{});
  };
  CHECK_THROWS_AS(run_forked(child, [&](ByteReader& in) { receive_log(in, log); }), EngineError);
  CHECK_THROWS_AS(run_forked(child, [&](ByteReader& in) { receive_log(in, log, [](char, ByteReader&) { return false; }); }),
                  EngineError);
}
