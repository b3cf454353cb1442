#pragma once
// Where a copy's sends meet its receives. A send is a host-to-host transfer that starts the
// moment it is posted (SimGrid's sendto: no mailbox, no receiver to wait for), so that what a
// receiver posts changes no time. The n-th receive of a copy waits for the n-th send's
// transfer; one that finished before the receive was posted is only counted, not kept:
// GPipe's forwards, and 1F1B's in inference, run ahead of a slower next stage by up to the
// whole step, and a mailbox (as before) held every such transfer and a mailbox of its own
// until it was received (0.3-0.4 KiB each, growing with the micro-batches). Used by the
// engine and by bench/raw_baseline.cpp (the same calls).
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <deque>
#include <vector>

namespace ipusim::engine_detail {

class CopyArrivals {
public:
  explicit CopyArrivals(std::size_t copies) : copies_(copies), sent_(copies, 0), taken_(copies, 0) {}

  // Before the simulation runs: copy `copy` goes from `from` to `to`.
  void connect(int copy, simgrid::s4u::Host* from, simgrid::s4u::Host* to) {
    Copy& c = copies_.at(static_cast<std::size_t>(copy));
    c.from = from;
    c.to = to;
    if (!c.posted) c.posted = simgrid::s4u::Semaphore::create(0);
  }

  // Sends copy `copy`'s next transfer.
  simgrid::s4u::CommPtr put(int copy, double bytes) {
    const auto c = static_cast<std::size_t>(copy);
    Copy& q = copies_[c];
    // Its place is taken before SimGrid is called (other actors run during the call); the
    // receiver learns of it from the semaphore, once it is there.
    const std::int64_t n = sent_[c]++;
    q.unreceived.emplace_back();
    simgrid::s4u::CommPtr comm = simgrid::s4u::Comm::sendto_async(q.from, q.to, static_cast<std::uint64_t>(bytes));
    q.unreceived[static_cast<std::size_t>(n - q.first)] = comm;
    q.posted->release();
    forget_arrived(q, taken_[c]);
    return comm;
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
  struct Copy {
    simgrid::s4u::Host* from = nullptr;
    simgrid::s4u::Host* to = nullptr;
    simgrid::s4u::SemaphorePtr posted;             // counts the transfers sent and not yet taken
    std::deque<simgrid::s4u::CommPtr> unreceived;  // transfers first, first + 1, ... (null: being sent)
    std::int64_t first = 0;
  };

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
