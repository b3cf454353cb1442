#pragma once
// Where a copy's sends meet its receives. The n-th send and the n-th receive of a copy
// meet in a mailbox of their own, taken from a pool of the receiving IPU's and given back
// once both are posted: SimGrid 3.32 keeps a mailbox's transfers in a circular buffer and
// erases a matched one by moving every transfer behind it, so one mailbox holding a
// copy's backlog (GPipe's slowest stage, thousands deep) would make every receive linear
// in it. Each pool mailbox has its IPU as permanent receiver, so a send starts the moment
// it is posted, as with one mailbox per copy: which mailbox carries a transfer changes no
// time. Used by the engine and by bench/raw_baseline.cpp (the same calls).
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipusim::engine_detail {

class CopyMailboxes {
public:
  explicit CopyMailboxes(std::size_t copies) : copies_(copies), sent_(copies, 0), taken_(copies, 0) {}

  // Before the simulation runs: copy `copy` goes from `sender` to `receiver`.
  void connect(int copy, const simgrid::s4u::ActorPtr& sender, const simgrid::s4u::ActorPtr& receiver) {
    auto& pool = pools_[receiver->get_pid()];
    if (!pool) pool = std::make_unique<Pool>(receiver, "meet." + std::to_string(pools_.size()) + ".");
    pool->posters.insert(sender->get_pid());
    pool->posters.insert(receiver->get_pid());
    copies_.at(static_cast<std::size_t>(copy)).pool = pool.get();
  }
  // After connect, before the simulation runs.
  void fill() {
    for (auto& [actor, pool] : pools_) top_up(*pool);
  }

  // Sends copy `copy` (asynchronously) / takes its next arrival.
  simgrid::s4u::CommPtr put(int copy, double bytes) {
    static int payload = 0;
    const auto c = static_cast<std::size_t>(copy);
    const bool behind = sent_[c] < taken_[c];
    simgrid::s4u::Mailbox* m = meeting(c, behind);
    ++sent_[c];
    simgrid::s4u::CommPtr comm = m->put_async(&payload, static_cast<std::uint64_t>(bytes));
    done(c, behind, m);
    return comm;
  }
  simgrid::s4u::CommPtr take(int copy, int** data) {
    const auto c = static_cast<std::size_t>(copy);
    const bool behind = taken_[c] < sent_[c];
    simgrid::s4u::Mailbox* m = meeting(c, behind);
    ++taken_[c];
    simgrid::s4u::CommPtr comm = m->get_async<int>(data);
    done(c, behind, m);
    return comm;
  }

  // Per copy: its sends and receives posted so far.
  const std::vector<std::int64_t>& sent() const { return sent_; }
  const std::vector<std::int64_t>& taken() const { return taken_; }
  std::size_t size() const { return copies_.size(); }

  // After the simulation: no mailbox keeps its receiver (SimGrid's teardown needs it).
  void release() {
    for (auto& [actor, pool] : pools_)
      for (simgrid::s4u::Mailbox* m : pool->all) m->set_receiver(nullptr);
  }

private:
  struct Pool {
    Pool(simgrid::s4u::ActorPtr r, std::string p) : receiver(std::move(r)), prefix(std::move(p)) {}
    simgrid::s4u::ActorPtr receiver;
    std::string prefix;
    std::set<aid_t> posters;  // the actors that post in its mailboxes
    std::vector<simgrid::s4u::Mailbox*> free, all;
    std::size_t created = 0;
  };
  struct Copy {
    Pool* pool = nullptr;
    std::deque<simgrid::s4u::Mailbox*> open;  // for the transfers only one side has posted, oldest first
  };

  // The mailbox of this side's next transfer: the side ahead takes a free one, the side
  // behind the oldest open one. No call into SimGrid here: other actors run during such
  // a call, and this copy's other side would find it half done.
  simgrid::s4u::Mailbox* meeting(std::size_t c, bool behind) {
    Copy& copy = copies_[c];
    if (behind) {
      simgrid::s4u::Mailbox* m = copy.open.front();
      copy.open.pop_front();
      return m;
    }
    Pool& pool = *copy.pool;
    if (pool.free.empty()) throw std::logic_error("a copy's pool of mailboxes ran dry");
    copy.open.push_back(pool.free.back());
    pool.free.pop_back();
    return copy.open.back();
  }

  // After a post has returned. The side behind frees the mailbox (both have posted:
  // SimGrid has matched them and forgotten it); the side ahead tops its pool up, so that
  // each of the pool's posters finds a free mailbox before it tops up again.
  void done(std::size_t c, bool behind, simgrid::s4u::Mailbox* m) {
    Pool& pool = *copies_[c].pool;
    if (behind) pool.free.push_back(m);
    else top_up(pool);
  }

  void top_up(Pool& pool) {
    while (pool.free.size() <= pool.posters.size()) {
      const std::string name = pool.prefix + std::to_string(pool.created++);  // before SimGrid lets others run
      simgrid::s4u::Mailbox* mailbox = simgrid::s4u::Mailbox::by_name(name);
      mailbox->set_receiver(pool.receiver);
      pool.all.push_back(mailbox);
      pool.free.push_back(mailbox);
    }
  }

  std::vector<Copy> copies_;
  std::vector<std::int64_t> sent_, taken_;
  // Keyed by the receiver's actor id, not its address, so that the pools (and the mailboxes
  // fill() creates) come in the same order on every run.
  std::map<aid_t, std::unique_ptr<Pool>> pools_;
};

} // namespace ipusim::engine_detail
