#include "sim/engine/engine.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "sim/plan/routes.hpp"

namespace sg4 = simgrid::s4u;

namespace ipusim {

std::string event_kind_name(EventKind kind) {
  switch (kind) {
  case EventKind::Compute: return "compute";
  case EventKind::HostInput: return "host-input";
  case EventKind::HostOutput: return "host-output";
  case EventKind::Exchange: return "exchange";
  case EventKind::Sync: return "sync";
  case EventKind::Receive: return "receive";
  case EventKind::StreamingMemory: return "streaming-memory";
  }
  return "?";
}

namespace {

// Hosts compute at 1e12 "flop"/s so that a step of t seconds is an exec of t*1e12:
// large enough that SimGrid's work precision (maxmin/precision) is far below 1e-9 relative.
constexpr double kHostSpeed = 1e12;

// Only what the schedule uses is built: a SimGrid host per IPU that runs a program and a
// route per pair of IPUs that exchange data, so a large system costs what a run touches.
struct Platform {
  std::map<int, sg4::Host*> ipus;             // by IPU id, the IPUs with programs
  sg4::Host* host = nullptr;
  std::map<int, sg4::Host*> memory_of_ipu;  // the Streaming Memory behind each IPU with a program
  std::map<int, int> memory_slot_of_ipu;    // its traffic slot
  std::vector<std::string> link_names;        // directed: 2 per IPU-Link, then 2 per host link
  // Directed link slots along the route from src to dst; the host is -1.
  std::unordered_map<std::int64_t, std::vector<int>> route_slots;
  std::int64_t stride = 0;
  std::int64_t key(int src, int dst) const { return (src + 1) * stride + dst + 1; }
  const std::vector<int>& slots(int src, int dst) const { return route_slots.at(key(src, dst)); }
};

Platform build_platform(const HardwareConfig& hw, const Schedule& schedule) {
  Platform p;
  p.stride = hw.ipu_count + 1;
  auto* zone = sg4::create_full_zone("system");
  for (const Program& program : schedule.programs)
    p.ipus.emplace(program.ipu, zone->create_host("ipu" + std::to_string(program.ipu), kHostSpeed));
  p.host = zone->create_host("host", kHostSpeed);

  std::vector<sg4::SplitDuplexLink*> links;
  for (std::size_t i = 0; i < hw.links.size(); ++i) {
    const LinkSpec& spec = hw.links[i];
    auto* link = zone->create_split_duplex_link("link" + std::to_string(i), spec.bandwidth_bytes_per_s);
    link->set_latency(spec.latency_s)->seal();
    links.push_back(link);
    p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), true}));
    p.link_names.push_back(directed_link_name(hw, {static_cast<int>(i), false}));
  }
  RouteFinder finder(hw);
  std::set<std::pair<int, int>> pairs;
  for (const Program& program : schedule.programs)
    for (const Step& step : program.steps)
      for (const Transfer& t : step.transfers) pairs.insert({t.src_ipu, t.dst_ipu});
  for (const auto& [a, b] : pairs) {
    std::vector<sg4::LinkInRoute> path;
    std::vector<int> slots;
    for (const Hop& hop : finder.route(a, b)) {
      path.emplace_back(links[hop.link], hop.forward ? sg4::LinkInRoute::Direction::UP
                                                     : sg4::LinkInRoute::Direction::DOWN);
      slots.push_back(2 * hop.link + (hop.forward ? 0 : 1));
    }
    zone->add_route(p.ipus.at(a)->get_netpoint(), p.ipus.at(b)->get_netpoint(), nullptr, nullptr, path, false);
    p.route_slots[p.key(a, b)] = slots;
  }
  // One host link per group of `shared_by` IPUs (an M2000's IPU-Gateway): their streams share it.
  // Every group gets its link (and its name in the log), used or not, as the config lists them.
  const int group = hw.host_link.shared_by;
  const int host_slot0 = static_cast<int>(p.link_names.size());
  std::map<int, sg4::SplitDuplexLink*> host_links;
  for (int first = 0; first < hw.ipu_count; first += group) {
    const std::string who = group == 1 ? "ipu" + std::to_string(first)
                                       : "ipu" + std::to_string(first) + "-" + std::to_string(first + group - 1);
    p.link_names.push_back("host->" + who);
    p.link_names.push_back(who + "->host");
  }
  for (const auto& [i, ipu] : p.ipus) {
    const int g = i / group;
    sg4::SplitDuplexLink*& link = host_links[g];
    if (link == nullptr) {
      link = zone->create_split_duplex_link("host" + std::to_string(g), hw.host_link.bandwidth_bytes_per_s);
      link->set_latency(hw.host_link.latency_s)->seal();
    }
    zone->add_route(p.host->get_netpoint(), ipu->get_netpoint(), nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::UP}}, false);
    zone->add_route(ipu->get_netpoint(), p.host->get_netpoint(), nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::DOWN}}, false);
    p.route_slots[p.key(-1, i)] = {host_slot0 + 2 * g};
    p.route_slots[p.key(i, -1)] = {host_slot0 + 2 * g + 1};
  }
  // One Streaming Memory per group of `shared_by` IPUs: reads and writes share its bandwidth.
  if (hw.streaming_memory.present) {
    // Every group is named in the log, as the host links; only the groups a run uses are built.
    const int per = hw.streaming_memory.shared_by;
    const int memory_slot0 = static_cast<int>(p.link_names.size());
    for (int first = 0; first < hw.ipu_count; first += per) {
      const std::string who = per == 1 ? "ipu" + std::to_string(first)
                                       : "ipu" + std::to_string(first) + "-" + std::to_string(first + per - 1);
      p.link_names.push_back("streaming-memory(" + who + ")");
    }
    std::map<int, std::pair<sg4::Host*, sg4::Link*>> memories;
    for (const auto& [i, ipu] : p.ipus) {
      const int g = i / per;
      auto& [memory, channel] = memories[g];
      if (memory == nullptr) {
        memory = zone->create_host("memory" + std::to_string(g), kHostSpeed);
        channel = zone->create_link("memory-channel" + std::to_string(g), hw.streaming_memory.bandwidth_bytes_per_s)
                      ->set_latency(hw.streaming_memory.latency_s)
                      ->seal();
      }
      zone->add_route(memory->get_netpoint(), ipu->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(channel)}, true);
      p.memory_of_ipu[i] = memory;
      p.memory_slot_of_ipu[i] = memory_slot0 + g;
    }
  }
  zone->seal();
  return p;
}

struct Shared {
  const Platform* platform = nullptr;
  std::vector<sg4::Mailbox*> copy_mailboxes;  // by copy id, resolved once
  sg4::BarrierPtr barrier;
  std::vector<double> link_bytes;
  std::uint64_t activities = 0;
};

struct IpuRunner {
  const Program* program;
  Shared* shared;
  std::vector<Event>* events;
  std::vector<TransferRecord>* transfers;
  std::size_t* position;

  // Called by the sender once the transfer is done.
  void record(int src, int dst, int copy, double bytes, const sg4::CommPtr& comm) const {
    const auto& slots = shared->platform->slots(src, dst);
    for (int slot : slots) shared->link_bytes[slot] += bytes;
    transfers->push_back({src, dst, copy, comm->get_start_time(), comm->get_finish_time(), bytes, slots});
    ++shared->activities;
  }

  void operator()() const {
    static int payload = 0;
    const Platform& p = *shared->platform;
    sg4::Host* me = p.ipus.at(program->ipu);
    // Asynchronous receives are posted up front, in program order (mailboxes match FIFO).
    std::vector<sg4::CommPtr> posted;
    std::vector<int*> posted_data;
    for (const Step& step : program->steps)
      if (step.kind == StepKind::Receive) posted_data.resize(posted_data.size() + step.transfers.size());
    for (const Step& step : program->steps)
      if (step.kind == StepKind::Receive)
        for (const Transfer& t : step.transfers)
          posted.push_back(shared->copy_mailboxes[t.copy]->get_async<int>(&posted_data[posted.size()]));
    std::size_t next_posted = 0;
    std::vector<std::pair<const Transfer*, sg4::CommPtr>> in_flight;
    struct Stream {
      sg4::CommPtr comm;
      int src, dst;
      double bytes;
    };
    std::vector<Stream> streams;
    // Host streams left running on the I/O tiles must land before the IPU syncs; the wait
    // is host I/O the compute did not hide.
    auto finish_streams = [&](const Event& next) {
      if (streams.empty()) return;
      Event wait = next;
      wait.kind = streams.front().src == -1 ? EventKind::HostInput : EventKind::HostOutput;
      wait.start = sg4::Engine::get_clock();
      for (const Stream& st : streams) {
        st.comm->wait();
        record(st.src, st.dst, -1, st.bytes, st.comm);
      }
      streams.clear();
      wait.end = sg4::Engine::get_clock();
      wait.stage = -1;
      wait.micro_batch = -1;
      wait.bytes = 0;
      if (wait.end > wait.start) events->push_back(wait);
    };
    for (*position = 0; *position < program->steps.size(); ++*position) {
      const Step& step = program->steps[*position];
      Event e;
      e.ipu = program->ipu;
      e.stage = step.stage;
      e.micro_batch = step.micro_batch;
      e.pass = step.pass;
      e.bytes = step.bytes;
      e.start = sg4::Engine::get_clock();
      switch (step.kind) {
      case StepKind::Compute:
        e.kind = EventKind::Compute;
        if (step.seconds > 0) {
          sg4::this_actor::execute(step.seconds * kHostSpeed);
          ++shared->activities;
        }
        break;
      case StepKind::HostInput:
      case StepKind::HostOutput: {
        const bool in = step.kind == StepKind::HostInput;
        e.kind = in ? EventKind::HostInput : EventKind::HostOutput;
        auto comm = in ? sg4::Comm::sendto_async(p.host, me, static_cast<std::uint64_t>(step.bytes))
                       : sg4::Comm::sendto_async(me, p.host, static_cast<std::uint64_t>(step.bytes));
        const int src = in ? -1 : program->ipu, dst = in ? program->ipu : -1;
        if (step.overlapped) {
          streams.push_back({comm, src, dst, step.bytes});  // the I/O tiles carry it; waited for at the next sync
        } else {
          comm->wait();
          record(src, dst, -1, step.bytes, comm);
        }
        break;
      }
      case StepKind::StateLoad:
      case StepKind::StateStore: {
        e.kind = EventKind::StreamingMemory;
        sg4::Host* memory = p.memory_of_ipu.at(program->ipu);
        const bool load = step.kind == StepKind::StateLoad;
        auto comm = load ? sg4::Comm::sendto_async(memory, me, static_cast<std::uint64_t>(step.bytes))
                         : sg4::Comm::sendto_async(me, memory, static_cast<std::uint64_t>(step.bytes));
        comm->wait();
        const int slot = p.memory_slot_of_ipu.at(program->ipu);
        shared->link_bytes[slot] += step.bytes;
        transfers->push_back({load ? -2 : program->ipu, load ? program->ipu : -2, -1, comm->get_start_time(),
                              comm->get_finish_time(), step.bytes, {slot}});
        ++shared->activities;
        break;
      }
      case StepKind::Exchange: {
        e.kind = EventKind::Exchange;
        // Receives are posted first so no transfer waits for its receiver (simgrid-notes.md).
        std::vector<sg4::CommPtr> comms;
        std::vector<int*> received(step.transfers.size());
        for (std::size_t i = 0; i < step.transfers.size(); ++i) {
          const Transfer& t = step.transfers[i];
          if (t.dst_ipu == program->ipu)
            comms.push_back(shared->copy_mailboxes[t.copy]->get_async<int>(&received[i]));
        }
        std::vector<std::pair<const Transfer*, sg4::CommPtr>> sends;
        for (const Transfer& t : step.transfers) {
          if (t.src_ipu != program->ipu) continue;
          sends.emplace_back(&t, shared->copy_mailboxes[t.copy]->put_async(&payload, static_cast<std::uint64_t>(t.bytes)));
          comms.push_back(sends.back().second);
          e.bytes += t.bytes;
        }
        sg4::Comm::wait_all(comms);
        for (const auto& [t, comm] : sends) record(t->src_ipu, t->dst_ipu, t->copy, t->bytes, comm);
        break;
      }
      case StepKind::Send:
        e.kind = EventKind::Exchange;
        for (const Transfer& t : step.transfers)
          in_flight.emplace_back(&t, shared->copy_mailboxes[t.copy]->put_async(&payload, static_cast<std::uint64_t>(t.bytes)));
        break;
      case StepKind::Receive:
        e.kind = EventKind::Receive;
        for (std::size_t i = 0; i < step.transfers.size(); ++i) posted[next_posted++]->wait();
        break;
      case StepKind::Sync:
        finish_streams(e);
        shared->barrier->wait();
        e.kind = EventKind::Sync;
        e.start = sg4::Engine::get_clock();  // waiting for the others is idle time, not sync
        if (step.seconds > 0) {
          sg4::this_actor::sleep_for(step.seconds);
          ++shared->activities;
        }
        break;
      }
      e.end = sg4::Engine::get_clock();
      events->push_back(e);
    }
    Event last;
    last.ipu = program->ipu;
    finish_streams(last);
    for (const auto& [t, comm] : in_flight) {
      comm->wait();
      record(t->src_ipu, t->dst_ipu, t->copy, t->bytes, comm);
    }
  }
};

} // namespace

#if defined(__SANITIZE_ADDRESS__)
#define IPUSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPUSIM_ASAN 1
#endif
#endif

RunLog run_engine_in_process(const Schedule& schedule, const HardwareConfig& hw) {
  char name[] = "ipusim";
#ifdef IPUSIM_ASAN
  // AddressSanitizer cannot follow SimGrid's own stack switching; threads it can. Chosen
  // on the command line, before the engine sets up its contexts.
  char quiet[] = "--log=xbt_cfg.thres:warning";  // SimGrid announces every setting it is given
  char factory[] = "--cfg=contexts/factory:thread";
  int argc = 3;
  char* argv[] = {name, quiet, factory, nullptr};
#else
  int argc = 1;
  char* argv[] = {name, nullptr};
#endif
  sg4::Engine engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  // Exact analytic timing: transfer = latency + bytes / bandwidth (simgrid-notes.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("surf/precision:1e-15");

  const Platform platform = build_platform(hw, schedule);
  Shared shared;
  shared.platform = &platform;
  shared.barrier = sg4::Barrier::create(static_cast<unsigned>(schedule.programs.size()));
  shared.link_bytes.assign(platform.link_names.size(), 0.0);
  int copies = 0;
  for (const Program& program : schedule.programs)
    for (const Step& step : program.steps)
      for (const Transfer& t : step.transfers) copies = std::max(copies, t.copy + 1);
  for (int c = 0; c < copies; ++c) shared.copy_mailboxes.push_back(sg4::Mailbox::by_name("copy" + std::to_string(c)));

  std::vector<std::vector<Event>> events(schedule.programs.size());
  std::vector<std::vector<TransferRecord>> transfers(schedule.programs.size());
  std::vector<std::size_t> positions(schedule.programs.size(), 0);
  for (std::size_t i = 0; i < schedule.programs.size(); ++i) {
    const Program& program = schedule.programs[i];
    events[i].reserve(program.steps.size());
    sg4::Actor::create("ipu" + std::to_string(program.ipu), platform.ipus.at(program.ipu),
                       IpuRunner{&program, &shared, &events[i], &transfers[i], &positions[i]});
  }
  bool deadlocked = false;
  sg4::Engine::on_deadlock_cb([&deadlocked] { deadlocked = true; });
  engine.run();

  std::string stuck;
  for (std::size_t i = 0; i < schedule.programs.size(); ++i)
    if (positions[i] < schedule.programs[i].steps.size())
      stuck += " IPU " + std::to_string(schedule.programs[i].ipu) + " at step " + std::to_string(positions[i]) + " of " +
               std::to_string(schedule.programs[i].steps.size()) + ";";
  if (deadlocked || !stuck.empty())
    throw EngineError("the simulation deadlocked in schedule \"" + schedule.name + "\":" + stuck);

  RunLog log;
  log.end_time = sg4::Engine::get_clock();
  for (auto& per_ipu : events) log.events.insert(log.events.end(), per_ipu.begin(), per_ipu.end());
  for (auto& per_ipu : transfers) log.transfers.insert(log.transfers.end(), per_ipu.begin(), per_ipu.end());
  for (std::size_t i = 0; i < platform.link_names.size(); ++i)
    log.links.push_back({platform.link_names[i], shared.link_bytes[i]});
  log.activities = shared.activities;
  return log;
}

} // namespace ipusim
