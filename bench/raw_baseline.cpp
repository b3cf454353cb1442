#include "raw_baseline.hpp"

#include <deque>
#include <map>
#include <memory>

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
};

struct World {
  Platform platform;
  std::vector<sg4::Mailbox*> mailboxes;
  sg4::BarrierPtr barrier;
  std::uint64_t activities = 0;
};

void run_ops(World& w, int ipu, const std::vector<Op>& ops) {
  static int payload = 0;
  sg4::Host* me = w.platform.ipus.at(ipu);
  std::deque<sg4::CommPtr> sends, streams;
  auto reap = [&](std::deque<sg4::CommPtr>& q) {
    while (!q.empty() && q.front()->get_finish_time() >= 0) {
      q.front()->wait();
      ++w.activities;
      q.pop_front();
    }
  };
  for (const Op& op : ops) {
    reap(sends);
    reap(streams);
    switch (op.kind) {
    case StepKind::Compute:
      if (op.seconds > 0) {
        sg4::this_actor::execute(op.seconds * kHostSpeed);
        ++w.activities;
      }
      break;
    case StepKind::HostInput:
    case StepKind::HostOutput: {
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
      std::vector<int*> received(op.transfers->size());
      std::size_t puts = 0;
      for (std::size_t i = 0; i < op.transfers->size(); ++i)
        if ((*op.transfers)[i].dst_ipu == ipu)
          comms.push_back(w.mailboxes[(*op.transfers)[i].copy]->get_async<int>(&received[i]));
      for (const Transfer& t : *op.transfers)
        if (t.src_ipu == ipu) {
          comms.push_back(w.mailboxes[t.copy]->put_async(&payload, static_cast<std::uint64_t>(t.bytes)));
          ++puts;
        }
      sg4::Comm::wait_all(comms);
      w.activities += puts;
      break;
    }
    case StepKind::Send:
      for (const Transfer& t : *op.transfers)
        sends.push_back(w.mailboxes[t.copy]->put_async(&payload, static_cast<std::uint64_t>(t.bytes)));
      break;
    case StepKind::Receive:
      for (const Transfer& t : *op.transfers) {
        int* data = nullptr;
        w.mailboxes[t.copy]->get_async<int>(&data)->wait();
      }
      break;
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
  for (auto* q : {&streams, &sends})
    for (auto& c : *q) {
      c->wait();
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
  World w{build_platform(hw, schedule), {}, sg4::Barrier::create(static_cast<unsigned>(schedule.programs.size())), 0};
  for (int c = 0; c < copies; ++c) w.mailboxes.push_back(sg4::Mailbox::by_name("copy" + std::to_string(c)));

  // Expanded before the simulation starts, so that the baseline pays nothing for programs.
  std::vector<std::vector<Op>> ops(schedule.programs.size());
  for (std::size_t i = 0; i < schedule.programs.size(); ++i)
    for (ProgramCursor c(schedule.programs[i]); !c.done(); c.advance()) {
      const Step& s = c.step();
      ops[i].push_back({s.kind, s.seconds, s.bytes, s.overlapped, &s.transfers});
    }
  std::map<int, sg4::ActorPtr> actors;
  for (std::size_t i = 0; i < schedule.programs.size(); ++i) {
    const int ipu = schedule.programs[i].ipu;
    actors[ipu] = sg4::Actor::create("raw" + std::to_string(ipu), w.platform.ipus.at(ipu),
                                     [&w, ipu, &o = ops[i]] { run_ops(w, ipu, o); });
  }
  for (const Program& p : schedule.programs)
    for (const Step& s : p.steps)
      for (const Transfer& t : s.transfers) w.mailboxes[t.copy]->set_receiver(actors.at(t.dst_ipu));
  engine->run();
  for (sg4::Mailbox* m : w.mailboxes) m->set_receiver(nullptr);
  return {w.activities, sg4::Engine::get_clock()};
}

} // namespace bench
