#pragma once
// Work that must not take ipusim down, or that keeps global state, runs in a forked child
// that streams its results back through a pipe as tagged records (a tag byte, then its
// fields). Plain data only: both sides are this same program. SimGrid keeps one engine and
// one clock per process, so each simulation runs so; libonnx's shape inference runs so
// because a malformed model can crash it (a crash becomes an error here).
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ipusim {

// A child that failed: its own error message, or how it died.
class ChildProcessError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class ByteWriter {
public:
  explicit ByteWriter(int fd) : fd_(fd) {}
  // Starts a record. Records reach the pipe whole: the buffer is flushed only between them.
  void record(char tag) {
    if (buffer_.size() >= kFlushBytes) flush();
    value(tag);
  }
  template <class T> void value(const T& v) { buffer_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(const std::string& s) {
    value<std::uint64_t>(s.size());
    buffer_.append(s);
  }
  void flush();
  // Drops what was not flushed (a child failing mid-run sends its error after whole records only).
  void discard() { buffer_.clear(); }

private:
  static constexpr std::size_t kFlushBytes = 1 << 16;
  int fd_;
  std::string buffer_;
};

class ByteReader {
public:
  explicit ByteReader(int fd) : fd_(fd) {}
  // The next record's tag; a child that failed sent 'X' and its message, thrown here as ChildProcessError.
  char tag();
  template <class T> T value() {
    T v{};
    read(&v, sizeof v);
    return v;
  }
  std::string text();

private:
  void read(void* out, std::size_t size);
  bool fill();
  int fd_;
  char buffer_[1 << 16];
  std::size_t begin_ = 0, end_ = 0;
};

// One field list for both directions of a struct's wire format: a template `fields(wire, object)`
// names each field once and is called with a Writing (the object const) or a Reading, so the
// sender and the receiver cannot drift apart.
struct Writing {
  ByteWriter& out;
  template <class T> void operator()(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "a field sent as bytes");
    out.value(v);
  }
  void operator()(const std::string& s) { out.text(s); }
  template <class T, class Each> void list(const std::vector<T>& items, Each each) {
    out.value<std::uint64_t>(items.size());
    for (const T& item : items) each(item);
  }
};

struct Reading {
  ByteReader& in;
  template <class T> void operator()(T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "a field read as bytes");
    v = in.value<T>();
  }
  void operator()(std::string& s) { s = in.text(); }
  template <class T, class Each> void list(std::vector<T>& items, Each each) {
    items.resize(in.value<std::uint64_t>());
    for (T& item : items) each(item);
  }
};

// Where a forked child allocates. A forked child shares the parent's pages until it writes
// them, and malloc hands it the parent's free chunks, scattered over pages it must then copy
// one by one (a fault each, and on a virtual machine an expensive one). On a thread of its
// own the child's work allocates from a new malloc arena instead, on fresh pages: a Python
// call's simulation child 14.5 -> 10 ms of CPU. SimGrid runs on any thread whose process has
// not started its engine yet; one started before the fork (a sweep's, prepare_engine_for_forks)
// belongs to the thread that started it, so such children keep the inherited heap.
enum class ChildHeap { Inherited, Fresh };

// Runs `child` in a forked process and `parent` here on what it writes. A child that
// throws sends the message (ChildProcessError in the parent); one that dies by a signal is
// a ChildProcessError naming `what` ("the simulation process") and the signal.
void run_forked(const std::function<void(ByteWriter&)>& child, const std::function<void(ByteReader&)>& parent,
                const std::string& what = "the simulation process", ChildHeap heap = ChildHeap::Inherited);

} // namespace ipusim
