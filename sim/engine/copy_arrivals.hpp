#pragma once
// Where a copy's sends meet its receives. A send is a host-to-host transfer (SimGrid's sendto:
// no mailbox, no receiver to wait for), so that what a receiver posts changes no time. A copy's
// transfers cross their route one after another, in the order they were posted, as an IPU's
// exchanges or a GPU stream's sends do: one starts the moment it is posted when the copy's
// previous transfer has arrived, else the moment that one arrives (a driver actor of the copy
// starts it then). Where the copies are posted faster than their route carries them, each
// arrives as soon as the route has carried it; shared among all of them at once, as SimGrid
// would share them, every one would arrive late, and SimGrid's sharing anew at every arrival
// would cost the square of their number. The receiver learns of a transfer once it has started.
// The n-th receive of a copy waits for the n-th send's transfer; one that finished before the
// receive was posted is only counted, not kept: GPipe's forwards, and 1F1B's in inference, run
// ahead of a slower next stage by up to the whole step, and a mailbox (as before) held every
// such transfer and a mailbox of its own until it was received (0.3-0.4 KiB each, growing with
// the micro-batches). Used by the engine and by bench/raw_baseline.cpp (the same calls).
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ipusim::engine_detail {

// A transfer an IPU sent: started (its SimGrid transfer), or queued behind its copy's transfer
// on the route, its SimGrid transfer made when it starts (SimGrid scans every transfer made
// and not yet started at each arrival: made early, thousands queued would cost the square of
// their number).
class SendHandle {
public:
  SendHandle(simgrid::s4u::CommPtr started) : comm_(std::move(started)) {}  // NOLINT: a started transfer is one
  explicit SendHandle(std::shared_ptr<const simgrid::s4u::CommPtr> queued) : queued_(std::move(queued)) {}

  // Its SimGrid transfer, or null while it is queued.
  const simgrid::s4u::CommPtr* started() const {
    if (comm_) return &comm_;
    return queued_ && *queued_ ? queued_.get() : nullptr;
  }
  // -1 while not started or not finished, as SimGrid's.
  double start_time() const { return started() ? (*started())->get_start_time() : -1; }
  double finish_time() const { return started() ? (*started())->get_finish_time() : -1; }
  double remaining(double bytes) const { return started() ? (*started())->get_remaining() : bytes; }
  // Waits for it to arrive (it must have started).
  void wait() const { (*started())->wait(); }

private:
  simgrid::s4u::CommPtr comm_;
  std::shared_ptr<const simgrid::s4u::CommPtr> queued_;
};

class CopyArrivals {
public:
  explicit CopyArrivals(std::size_t copies) : copies_(copies), sent_(copies, 0), taken_(copies, 0) {}

  // Before the simulation runs: copy `copy` goes from `from` to `to`.
  void connect(int copy, simgrid::s4u::Host* from, simgrid::s4u::Host* to) {
    Copy& c = copies_.at(static_cast<std::size_t>(copy));
    c.from = from;
    c.to = to;
    if (!c.posted) c.posted = simgrid::s4u::Semaphore::create(0);
    if (!c.guard) c.guard = simgrid::s4u::Mutex::create();
    if (!c.started) c.started = simgrid::s4u::ConditionVariable::create();
  }

  // Sends copy `copy`'s next transfer: started now, or queued behind the copy's transfer on
  // its route and started when that one arrives.
  SendHandle put(int copy, double bytes) {
    const auto c = static_cast<std::size_t>(copy);
    Copy& q = copies_[c];
    // Its place is taken before SimGrid is called (other actors run during the call); the
    // receiver learns of it from the semaphore, once it has started.
    ++sent_[c];
    q.unreceived.emplace_back();
    if (!q.queued.empty() || (q.on_route && q.on_route->get_finish_time() < 0)) {
      auto slot = std::make_shared<simgrid::s4u::CommPtr>();
      q.queued.push_back({bytes, slot});
      if (!q.driven) {
        q.driven = true;
        simgrid::s4u::Actor::create("copy" + std::to_string(copy), q.from, [this, c] { drive(c); });
      }
      return SendHandle(std::shared_ptr<const simgrid::s4u::CommPtr>(std::move(slot)));
    }
    simgrid::s4u::CommPtr comm = start(q, bytes);
    forget_arrived(q, taken_[c]);
    return comm;
  }

  // Returns once `send`, a transfer of copy `copy`, has started (at once unless it is queued):
  // the copy's driver starts it when the one before it arrives.
  void wait_started(int copy, const SendHandle& send) {
    if (send.started()) return;
    Copy& q = copies_.at(static_cast<std::size_t>(copy));
    std::unique_lock<simgrid::s4u::Mutex> lock(*q.guard);
    ++q.waiting;
    while (!send.started()) q.started->wait(lock);
    --q.waiting;
  }

  // Waits until copy `copy`'s next transfer has been sent; returns it, or null when it has
  // arrived already.
  simgrid::s4u::CommPtr take(int copy) {
    const auto c = static_cast<std::size_t>(copy);
    Copy& q = copies_[c];
    q.posted->acquire();
    const std::int64_t n = taken_[c]++;
    simgrid::s4u::CommPtr comm = n >= q.first ? q.unreceived[static_cast<std::size_t>(n - q.first)] : nullptr;
    forget_arrived(q, taken_[c]);
    return comm;
  }

  // Per copy: its sends and receives posted so far.
  const std::vector<std::int64_t>& sent() const { return sent_; }
  const std::vector<std::int64_t>& taken() const { return taken_; }
  std::size_t size() const { return copies_.size(); }

private:
  struct Queued {
    double bytes;
    std::shared_ptr<simgrid::s4u::CommPtr> slot;  // its SimGrid transfer, once started
  };
  struct Copy {
    simgrid::s4u::Host* from = nullptr;
    simgrid::s4u::Host* to = nullptr;
    simgrid::s4u::SemaphorePtr posted;             // counts the transfers started and not yet taken
    std::deque<simgrid::s4u::CommPtr> unreceived;  // transfers first, first + 1, ... (null: not started)
    std::int64_t first = 0;
    simgrid::s4u::CommPtr on_route;  // the transfer started last
    std::deque<Queued> queued;       // sent behind it, not started
    bool driven = false;             // a driver actor starts the queued ones
    // Senders waiting for a queued transfer of theirs to start (wait_started), told by the driver.
    simgrid::s4u::MutexPtr guard;
    simgrid::s4u::ConditionVariablePtr started;
    int waiting = 0;
  };

  // Starts the copy's oldest transfer not started: the one behind those still queued.
  static simgrid::s4u::CommPtr start(Copy& q, double bytes) {
    // Known as on the route before SimGrid is called (other actors run during the call): a
    // send posted meanwhile goes behind it.
    simgrid::s4u::CommPtr comm =
        simgrid::s4u::Comm::sendto_init(q.from, q.to)->set_payload_size(static_cast<std::uint64_t>(bytes));
    q.unreceived[q.unreceived.size() - 1 - q.queued.size()] = comm;
    q.on_route = comm;
    comm->vetoable_start();
    q.posted->release();
    return comm;
  }

  // The driver of copy `c`: starts each queued transfer the moment the one before it arrives.
  void drive(std::size_t c) {
    Copy& q = copies_[c];
    while (!q.queued.empty()) {
      q.on_route->wait();
      const Queued next = q.queued.front();
      q.queued.pop_front();
      *next.slot = start(q, next.bytes);
      if (q.waiting > 0) q.started->notify_all();
      forget_arrived(q, taken_[c]);
    }
    q.driven = false;
  }

  // Drops the oldest transfers that have arrived or been taken (their receivers hold
  // them): a copy keeps only those in flight and not yet received.
  static void forget_arrived(Copy& q, std::int64_t taken) {
    while (!q.unreceived.empty() && q.unreceived.front() &&
           (q.first < taken || q.unreceived.front()->get_finish_time() >= 0)) {
      q.unreceived.pop_front();
      ++q.first;
    }
  }

  std::vector<Copy> copies_;
  std::vector<std::int64_t> sent_, taken_;
};

} // namespace ipusim::engine_detail
