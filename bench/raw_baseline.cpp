#include "raw_baseline.hpp"

#include <deque>
#include <memory>

#include "sim/engine/engine_run.hpp"
#include "sim/engine/platform.hpp"
#include "sim/schedule/program_cursor.hpp"

namespace sg4 = simgrid::s4u;
using namespace ipusim;

namespace bench {

namespace {

// An expanded step: everything the actor needs, nothing else.
struct Op {
  StepKind kind;
  double seconds, bytes;
  bool overlapped;
  const std::vector<Transfer>* transfers;
  bool prefetched = false;  // host streams: the IPU sleeps `seconds`, the gateway's leg
  double floor = 0;         // HostRoundTrip: the host's own time for the run's streams
};

struct World {
  Platform platform;
  double last_round_trip = 0;
  engine_detail::CopyArrivals arrivals;  // as the engine's
  sg4::BarrierPtr barrier;
  std::uint64_t activities = 0;

  engine_detail::SendHandle put(int copy, double bytes) { return arrivals.put(copy, bytes); }
  sg4::CommPtr take(int copy) { return arrivals.take(copy); }
};

void run_ops(World& w, int ipu, const std::vector<Op>& ops) {
  sg4::Host* me = w.platform.ipus.at(ipu);
  std::deque<sg4::CommPtr> streams;
  std::deque<std::pair<int, engine_detail::SendHandle>> sends;  // copy, transfer
  auto reap = [&](auto& q, auto finish_time, auto wait) {
    while (!q.empty() && finish_time(q.front()) >= 0) {
      wait(q.front());
      ++w.activities;
      q.pop_front();
    }
  };
  const auto stream_finish = [](const sg4::CommPtr& c) { return c->get_finish_time(); };
  const auto stream_wait = [](const sg4::CommPtr& c) { c->wait(); };
  const auto send_finish = [](const std::pair<int, engine_detail::SendHandle>& s) { return s.second.finish_time(); };
  const auto send_wait = [](const std::pair<int, engine_detail::SendHandle>& s) { s.second.wait(); };
  for (const Op& op : ops) {
    reap(sends, send_finish, send_wait);
    reap(streams, stream_finish, stream_wait);
    switch (op.kind) {
    case StepKind::Compute:
      if (op.seconds > 0) {
        sg4::this_actor::execute(op.seconds * kHostSpeed);
        ++w.activities;
      }
      break;
    case StepKind::HostInput:
    case StepKind::HostOutput: {
      if (op.prefetched) {
        sg4::this_actor::sleep_for(op.seconds);
        ++w.activities;
        break;
      }
      const bool in = op.kind == StepKind::HostInput;
      auto comm = in ? sg4::Comm::sendto_async(w.platform.host, me, static_cast<std::uint64_t>(op.bytes))
                     : sg4::Comm::sendto_async(me, w.platform.host, static_cast<std::uint64_t>(op.bytes));
      if (op.overlapped) {
        streams.push_back(comm);
      } else {
        comm->wait();
        ++w.activities;
      }
      break;
    }
    case StepKind::StateLoad:
    case StepKind::StateStore: {
      sg4::Host* memory = w.platform.memory_of_ipu.at(ipu);
      auto comm = op.kind == StepKind::StateLoad ? sg4::Comm::sendto_async(memory, me, static_cast<std::uint64_t>(op.bytes))
                                                 : sg4::Comm::sendto_async(me, memory, static_cast<std::uint64_t>(op.bytes));
      comm->wait();
      ++w.activities;
      break;
    }
    case StepKind::Exchange: {
      std::vector<sg4::CommPtr> comms;
      std::vector<std::pair<int, engine_detail::SendHandle>> puts;
      for (const Transfer& t : *op.transfers)
        if (t.src_ipu == ipu) puts.emplace_back(t.copy, w.put(t.copy, t.bytes));
      for (const Transfer& t : *op.transfers)
        if (t.dst_ipu == ipu)
          if (sg4::CommPtr arriving = w.take(t.copy)) comms.push_back(std::move(arriving));
      for (const auto& [copy, send] : puts) {
        w.arrivals.wait_started(copy, send);
        comms.push_back(*send.started());
      }
      sg4::Comm::wait_all(comms);
      w.activities += puts.size();
      if (op.seconds > 0) {
        sg4::this_actor::sleep_for(op.seconds);
        ++w.activities;
      }
      break;
    }
    case StepKind::Send:
      for (const Transfer& t : *op.transfers)
        sends.emplace_back(t.copy, w.put(t.copy, t.bytes));
      break;
    case StepKind::Receive:
      for (const Transfer& t : *op.transfers)
        if (sg4::CommPtr arriving = w.take(t.copy)) arriving->wait();
      break;
    case StepKind::HostRoundTrip: {
      for (auto& c : streams) {
        c->wait();
        ++w.activities;
      }
      streams.clear();
      w.barrier->wait();
      const double wait = std::max(0.0, w.last_round_trip + op.floor - sg4::Engine::get_clock()) + op.seconds;
      if (wait > 0) {
        sg4::this_actor::sleep_for(wait);
        ++w.activities;
      }
      w.barrier->wait();
      w.last_round_trip = sg4::Engine::get_clock();
      break;
    }
    case StepKind::Sync:
      for (auto& c : streams) {
        c->wait();
        ++w.activities;
      }
      streams.clear();
      w.barrier->wait();
      if (op.seconds > 0) {
        sg4::this_actor::sleep_for(op.seconds);
        ++w.activities;
      }
      break;
    }
  }
  for (auto& c : streams) {
    c->wait();
    ++w.activities;
  }
  for (const auto& [copy, send] : sends) {
    w.arrivals.wait_started(copy, send);
    send.wait();
    ++w.activities;
  }
}

} // namespace

RawResult run_raw(const Schedule& schedule, const HardwareConfig& hw) {
  const std::unique_ptr<sg4::Engine> engine(start_engine());
  int copies = 0;
  for (const Program& p : schedule.programs)
    for (const Step& s : p.steps)
      for (const Transfer& t : s.transfers) copies = std::max(copies, t.copy + 1);
  World w{build_platform(hw, schedule), 0, engine_detail::CopyArrivals(static_cast<std::size_t>(copies)),
          sg4::Barrier::create(static_cast<unsigned>(schedule.programs.size())), 0};

  // Expanded before the simulation starts, so that the baseline pays nothing for programs.
  std::vector<std::vector<Op>> ops(schedule.programs.size());
  for (std::size_t i = 0; i < schedule.programs.size(); ++i)
    for (ProgramCursor c(schedule.programs[i]); !c.done(); c.advance()) {
      const Step& s = c.step();
      Op op{s.kind, s.seconds, s.bytes, s.overlapped, &s.transfers};
      if (s.prefetched) {
        op.prefetched = true;
        op.seconds = hw.host_link.latency_s + s.bytes / hw.host_link.gateway_bandwidth_bytes_per_s;
      }
      op.floor = s.floor_seconds;
      ops[i].push_back(op);
    }
  for (std::size_t i = 0; i < schedule.programs.size(); ++i) {
    const int ipu = schedule.programs[i].ipu;
    sg4::Actor::create("raw" + std::to_string(ipu), w.platform.ipus.at(ipu),
                       [&w, ipu, &o = ops[i]] { run_ops(w, ipu, o); });
  }
  for (const Program& p : schedule.programs)
    for (const Step& s : p.steps)
      for (const Transfer& t : s.transfers)
        w.arrivals.connect(t.copy, w.platform.ipus.at(t.src_ipu), w.platform.ipus.at(t.dst_ipu));
  engine->run();
  return {w.activities, sg4::Engine::get_clock()};
}

} // namespace bench
