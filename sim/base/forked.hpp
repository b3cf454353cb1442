#pragma once
// SimGrid keeps global state (one engine, one clock per process), so each simulation
// runs in a forked child that streams its results back through a pipe as tagged records
// (a tag byte, then its fields). Plain data only: both sides are this same program.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

namespace ipusim {

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
  // The next record's tag; a child that failed sent 'X' and its message, thrown here as EngineError.
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

// Runs `child` in a forked process and `parent` here on what it writes. A child that
// throws sends the message (EngineError in the parent); one that dies by a signal is an
// EngineError too.
void run_forked(const std::function<void(ByteWriter&)>& child, const std::function<void(ByteReader&)>& parent);

} // namespace ipusim
