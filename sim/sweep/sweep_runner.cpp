#include "sim/sweep/sweep_runner.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <poll.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <list>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "sim/base/heap.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/output/output_file.hpp"
#include "sim/sweep/child_process.hpp"
#include "sim/sweep/folder_lock.hpp"
#include "sim/sweep/sweep_results.hpp"
#include "sim/sweep/sweep_spec.hpp"

namespace ipusim::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The most points one process runs (Sweep::batch_size).
constexpr std::size_t kPointsPerProcess = 64;
// A point process's exit code when it stopped before its share's end (it cannot run another
// point, Options::can_run_another_point, or it has grown too much, ProcessGrowth): the rest go
// to a new process.
constexpr int kStoppedEarly = 75;


constexpr int kResultsMilliseconds = 250;

std::size_t parse_count(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--shard", text, "sweep.bad-shard", what + " \"" + text + "\" is not a whole number");
  return static_cast<std::size_t>(v);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string duration(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1fs", seconds);
  } else {
    const auto s = static_cast<long long>(seconds + 0.5);
    if (s < 3600) std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
    else std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  }
  return text;
}

// The index of the point `text` names: its index in the sweep, or its 16-hex-digit id.
std::size_t point_named(const std::string& text, const std::vector<Point>& points) {
  const bool digits = !text.empty() && text.size() < 16 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    const auto index = static_cast<std::size_t>(std::stoull(text));
    if (index < points.size()) return index;
  } else {
    for (const Point& p : points)
      if (p.id == text) return p.index;
  }
  throw InputError("--point", text, "sweep.bad-point",
                   "this sweep has no point " + text + " (points are 0.." + std::to_string(points.size() - 1) +
                       ", or their 16-digit ids); `ipusim sweep FILE --list-points` lists them");
}

} // namespace

std::vector<std::size_t> selected_points(const Options& o, const std::vector<Point>& points) {
  std::vector<std::size_t> mine;
  if (!o.only_points.empty()) {
    for (const std::string& text : o.only_points) mine.push_back(point_named(text, points));
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    return mine;
  }
  const Shard shard = o.shard.value_or(Shard{});
  for (const Point& p : points)
    if (p.index % shard.count == shard.index) mine.push_back(p.index);
  return mine;
}

void list_points(const Options& o, std::ostream& out) {
  const Spec spec = load_sweep(o.sweep_file, {o.set, o.modes});
  const std::vector<Point> points = expand_points(spec);
  for (std::size_t index : selected_points(o, points)) {
    const Point& p = points[index];
    out << p.index << '\t' << p.id;
    for (std::size_t i = 0; i < p.axes.size(); ++i)
      out << (i ? ' ' : '\t') << p.axes[i].path << '=' << p.axes[i].value.dump(-1, ' ', false, Json::error_handler_t::replace);
    out << '\n';
  }
}

namespace {

// Refuses a folder that holds another sweep's points (or output with no definition), unless
// --force; `alone`: no other sweep runs there now.
void check_dir_is_ours(const Options& o, const std::string& dir, const Spec& spec, const std::string& hash, bool alone) {
  const fs::path d(dir), copy = d / "sweep.json";
  const std::string refuse_hint = "; use another -o DIR, or pass --force to add this sweep's points to it "
                                  "(nothing there is deleted)";
  std::error_code ec;
  if (fs::exists(copy, ec)) {
    std::string existing;
    std::optional<Spec> stored;
    try {
      stored = load_sweep(copy.string());
      existing = definition_hash(expand_points(*stored));
    } catch (const InputError&) {
      existing = "(unreadable)";
    }
    if (existing != hash && !alone)
      throw InputError(dir, "/", "sweep.dir-busy",
                       "another sweep, with other points, is running in this folder now; wait for it or use another -o DIR");
    if (existing != hash && !o.force) {
      // Most often a resume with other --set or --mode flags: say which, where it is stored.
      const auto [pointer, difference] = stored ? first_difference(*stored, spec) : std::pair<std::string, std::string>{};
      if (!pointer.empty())
        throw InputError(copy.string(), pointer, "sweep.dir-in-use",
                         difference + ": this folder holds another sweep's points; resume it with the same sweep "
                                      "file, --set and --mode" + refuse_hint);
      throw InputError(dir, "/", "sweep.dir-in-use",
                       "the folder holds the results of a different sweep (its sweep.json defines other points)" +
                           refuse_hint);
    }
  } else if (!o.force && (fs::exists(d / "points", ec) || fs::exists(d / "results.jsonl", ec) ||
                          fs::exists(d / "results.csv", ec))) {
    throw InputError(dir, "/", "sweep.dir-in-use", "the folder holds sweep output but no sweep.json" + refuse_hint);
  }
}

// Writes the sweep's definition as run (sweep.json) and makes points/.
void write_definition(const Options& o, const std::string& dir, const Spec& spec) {
  const fs::path d(dir), copy = d / "sweep.json";
  std::error_code ec;
  // sweep.json first, points/ after: a shard starting beside us sees either nothing
  // or our definition, never output without one.
  // The definition as run: the file's bytes, or with the command line's flags merged in.
  const std::string text = o.set.empty() && o.modes.empty()
                               ? read_bytes(o.sweep_file)
                               : spec.document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  if (!fs::exists(copy, ec) || read_bytes(copy.string()) != text) replace_file(copy.string(), text, true);
  fs::create_directories(d / "points", ec);
  // Point files go into points/ itself, never through a link to somewhere else.
  if (ec || fs::is_symlink(d / "points", ec) || !fs::is_directory(d / "points", ec))
    throw InputError((d / "points").string(), "/", "output.not-regular",
                     "is not a folder ipusim can write points into (a link or a file?); remove it");
}

// Checks that the folder is ours to use and claims it (see folder_lock.hpp): returns the
// lock, held until the sweep ends. Throws when another sweep's results are there, or
// another sweep with other points runs there now.
std::unique_ptr<FolderLock> prepare_dir(const Options& o, const std::string& dir, const Spec& spec,
                                        const std::vector<Point>& points, const std::vector<std::size_t>& mine) {
  const fs::path d(dir);
  std::error_code ec;
  if (o.merge && !fs::exists(d / "sweep.json", ec))
    throw InputError(dir, "/", "sweep.no-results", "no sweep ran in this folder (it has no sweep.json)");
  fs::create_directories(d, ec);
  if (ec) throw InputError(dir, "/", "output.unwritable", "cannot create the sweep folder: " + ec.message());
  auto lock = std::make_unique<FolderLock>(dir);
  lock->lock_gate();
  const bool alone = lock->try_run_alone();
  check_dir_is_ours(o, dir, spec, definition_hash(points), alone);
  // Nobody else uses the folder: what a killed sweep left half-written goes.
  if (alone) {
    remove_temp_files(d.string());
    remove_temp_files((d / "points").string());
  }
  if (!o.merge || o.force) write_definition(o, dir, spec);
  if (!o.merge) {
    std::size_t taken = 0;
    if (!lock->try_claim_points(mine, taken))
      throw InputError(dir, "/", "sweep.dir-busy",
                       "point " + points[taken].id + " of this sweep is being run by another ipusim sweep in this "
                       "folder now (the same sweep, or the same shard, started twice); wait for it, or run another "
                       "shard (--shard K/N)");
  }
  lock->run_shared();  // alone: the exclusive hold becomes shared (the gate keeps others out meanwhile)
  lock->unlock_gate();
  return lock;
}

// The last process to leave the folder removes what killed writers left there.
void release_dir(FolderLock& lock, const std::string& dir) {
  lock.stop_running();
  lock.lock_gate();
  if (lock.try_run_alone()) {
    remove_temp_files(dir);
    remove_temp_files((fs::path(dir) / "points").string());
  }
  lock.stop_running();
  lock.unlock_gate();
}

struct Row {
  bool present = false, ok = false;  // ok: the run succeeded, whether or not it fits in memory
  bool oom = false;
  bool exact = false;  // answered by the exact evaluators (--fast), not the engine
  std::string jsonl, csv;
};

Row row_of(const Point& p, const Json& record) {
  const std::string status = record.value("status", "");
  return {true, status == "ok" || status == "oom", status == "oom", record.value("evaluator", "") == "exact",
          jsonl_line(p, record), csv_row(p, record)};
}

class Sweep {
public:
  Sweep(const Options& o, std::ostream& log) : o_(o), log_(log) {}

  int run() {
    spec_ = load_sweep(o_.sweep_file, {o_.set, o_.modes});
    points_ = expand_points(spec_);
    dir_ = o_.dir.empty() ? (fs::path(kDefaultParent) / spec_.name).string() : o_.dir;
    if (!o_.merge) {
      remember_parsed_files();  // every point is forked from here: they read no input file again
      read_input_file(spec_.scenario_path, spec_.file, "/scenario");  // exists, readable, a regular file
      check_paths(spec_);
    }
    if (!o_.merge) mine_ = selected_points(o_, points_);
    lock_ = prepare_dir(o_, dir_, spec_, points_, mine_);
    rows_.resize(points_.size());
    for (const Point& p : points_)
      if (auto record = read_point_file(point_file(p), p)) rows_[p.index] = row_of(p, *record);
    if (o_.merge) {
      const int code = merge();
      release_dir(*lock_, dir_);
      return code;
    }

    const Shard shard = o_.shard.value_or(Shard{});
    for (std::size_t index : mine_) {
      const Point& p = points_[index];
      // Without --fast the engine answers: a point the exact evaluators answered runs again.
      if (!rows_[p.index].present || (o_.retry_failed && !rows_[p.index].ok) || (!o_.fast && rows_[p.index].exact))
        todo_.push_back(p.index);
    }
    skipped_ = mine_.size() - todo_.size();
    total_ = todo_.size();
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    jobs_ = std::min<std::size_t>(o_.jobs ? o_.jobs : hw, std::max<std::size_t>(todo_.size(), 1));
    start_ = Clock::now();
    if (o_.fast && o_.exact_point) answer_exactly();
    order_longest_first();
    run_points();
    store_batch();
    // Pick up what other shards finished meanwhile, then write the final results.
    for (const Point& p : points_)
      if (!rows_[p.index].present)
        if (auto record = read_point_file(point_file(p), p)) rows_[p.index] = row_of(p, *record);
    write_results();
    release_dir(*lock_, dir_);
    return summarize(shard);
  }

private:
  std::string point_file(const Point& p) const { return (fs::path(dir_) / "points" / (p.id + ".json")).string(); }

  // Points a new process takes: a share of those left, fewer as the end nears so that the -j
  // processes end together, at most kPointsPerProcess (the platforms a process's simulations
  // built stay until it exits); one where a process cannot run another.
  std::size_t batch_size(std::size_t left) const {
    if (!o_.can_run_another_point) return 1;
    return std::clamp<std::size_t>(left / (2 * jobs_), 1, kPointsPerProcess);
  }

  // A process running points, and how far the sweep has read its output.
  struct Running {
    std::vector<std::size_t> points;  // in the order it runs them
    sweep::ChildProcess child;
    std::size_t taken = 0;        // points whose record the sweep has stored
    std::size_t read = 0;         // bytes of its output consumed (two lines a point: its record, its file's temporary name)
    bool record_waiting = false;  // a record has arrived without its file's name
    // It takes one of the -j slots until its last point's record arrives; the durable write
    // of that record overlaps the next points.
    bool computing() const { return taken + (record_waiting ? 1 : 0) < points.size(); }
  };

  // One thread keeps up to jobs_ processes running, each a child forked from this process
  // (so forking is safe: nothing else runs here), and takes in each record as it arrives.
  void run_points() {
    std::list<Running> running;  // erased from the middle as processes end
    std::deque<std::size_t> queue(todo_.begin(), todo_.end());
    std::vector<pollfd> fds;
    auto last_draw = Clock::now();
    while (!queue.empty() || !running.empty()) {
      const auto computing = [&] {
        return static_cast<std::size_t>(std::count_if(running.begin(), running.end(), [](const Running& r) { return r.computing(); }));
      };
      while (computing() < jobs_ && !queue.empty()) {
        std::vector<std::size_t> batch;
        for (std::size_t n = batch_size(queue.size()); n > 0 && !queue.empty(); --n) {
          batch.push_back(queue.front());
          queue.pop_front();
        }
        sweep::ChildProcess child("", "ipusim", {}, [this, batch](const std::vector<std::string>&) { return run_batch(batch); });
        running.push_back({std::move(batch), std::move(child)});
      }
      fds.clear();
      for (const Running& r : running) r.child.poll_fds(fds);
      int wait_ms = 250;
      if (!batch_.empty())
        wait_ms = std::max<int>(0, kBatchMilliseconds - static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                            Clock::now() - batch_since_).count()));
      if (!fds.empty() && ::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      for (auto r = running.begin(); r != running.end();) {
        r->child.read_ready(fds);
        take_records(*r);
        if (!r->child.output_closed()) {
          ++r;
          continue;
        }
        end_process(*r, r->child.finish(), queue);
        r = running.erase(r);
      }
      if (!batch_.empty() && (batch_.size() >= kBatchPoints || Clock::now() - batch_since_ >= std::chrono::milliseconds(kBatchMilliseconds)))
        store_batch();
      if (o_.progress && Clock::now() - last_draw >= std::chrono::milliseconds(250)) {
        draw_progress();
        last_draw = Clock::now();
      }
    }
  }

  // Stores the points whose record and temporary file name have both arrived.
  void take_records(Running& r) {
    const std::string& out = r.child.output();
    for (;;) {
      const std::size_t record_end = out.find('\n', r.read);
      r.record_waiting = record_end != std::string::npos;
      if (!r.record_waiting) return;
      const std::size_t name_end = out.find('\n', record_end + 1);
      if (name_end == std::string::npos) return;
      const Point& p = points_[r.points[r.taken++]];
      store(p, Json::parse(out.substr(r.read, record_end - r.read)), out.substr(record_end + 1, name_end - record_end - 1));
      r.read = name_end + 1;
    }
  }

  // A process ended: the point it was running when it died gets its record, and the points it
  // did not reach (it stopped early, or died) go back to the queue for a new process. One that
  // exited otherwise without a point's record stops the sweep (its output cannot be trusted).
  void end_process(Running& r, const sweep::ChildResult& child, std::deque<std::size_t>& queue) {
    take_records(r);
    if (r.taken == r.points.size()) return;
    const Point& p = points_[r.points[r.taken]];
    if (interrupted(child)) {
      interrupted_ += r.points.size() - r.taken;
      return;
    }
    if (child.signal != 0) {  // the point's process died before it could record it
      store(p, point_record(p, command_of(p), child));
      ++r.taken;
    } else if (child.exit_code != kStoppedEarly || r.taken == 0) {
      throw InputError(point_file(p), "", "output.unwritable",
                       "cannot record the point: " + (child.err.empty() ? "its process exited with code " +
                                                                              std::to_string(child.exit_code)
                                                                        : child.err));
    }
    for (std::size_t i = r.points.size(); i-- > r.taken;) queue.push_front(r.points[i]);
  }

  std::vector<std::string> command_of(const Point& p) const {
    std::vector<std::string> command = {"ipusim"};
    const std::vector<std::string> args = run_arguments(spec_, p);
    command.insert(command.end(), args.begin(), args.end());
    return command;
  }

  // In a forked process: runs its points one after another, as long as it can run another.
  int run_batch(const std::vector<std::size_t>& batch) {
    ProcessGrowth growth;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (i > 0 && !o_.can_run_another_point()) return kStoppedEarly;
      const int code = run_point(batch[i], run_arguments(spec_, points_[batch[i]]));
      if (code != 0) return code;
      if (!growth.settle() && i + 1 < batch.size()) return kStoppedEarly;
    }
    return 0;
  }

  // In a point's process: runs it with what it prints captured and hands its record to the
  // sweep on standard output (a line, then its file's temporary name), which stores it.
  // Returns 2 when the record cannot be handed over; the sweep counts the point once both
  // lines have arrived.
  int run_point(std::size_t index, const std::vector<std::string>& args) {
    const Point& p = points_[index];
    const int to_sweep = ::dup(1);
    const int saved_err = ::dup(2);
    const int out = ::memfd_create("ipusim-out", 0), err = ::memfd_create("ipusim-err", 0);
    const auto close_all = [&] {
      for (int fd : {to_sweep, saved_err, out, err})
        if (fd >= 0) ::close(fd);
    };
    if (to_sweep < 0 || saved_err < 0 || out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
      close_all();
      return 2;
    }
    const auto start = Clock::now();
    sweep::ChildResult result;
    result.exit_code = o_.run_point(args);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::cout.clear();
    std::cerr.clear();
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.out = read_back(out);
    result.err = read_back(err);
    const bool restored = ::dup2(to_sweep, 1) >= 0 && ::dup2(saved_err, 2) >= 0;
    close_all();
    if (!restored) return 2;
    try {
      const Json record = point_record(p, command_of(p), result);
      if (!send(1, record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n")) return 2;
      // The point's file beside its place; the sweep makes its batch durable (one syncfs)
      // and renames it into points/.
      const std::string text = record.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
      if (!send(1, write_temp_file(point_file(p), [&](std::ostream& file) { file << text; }, /*durable=*/false) + "\n")) return 2;
    } catch (const std::exception& e) {
      std::cerr << e.what() << std::flush;
      return 2;
    }
    return 0;
  }

  static bool send(int fd, const std::string& line) {
    for (std::size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  static std::string read_back(int fd) {
    std::string text;
    char buffer[65536];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
      at += n;
    }
    return text;
  }

  // The point's file beside its place (`temp`, or written now), to be renamed there with its batch.
  void store(const Point& p, const Json& record, std::string temp = "") {
    Row row = row_of(p, record);
    if (!row.ok) failed_.push_back(p.index);
    rows_[p.index] = std::move(row);
    ++finished_;
    const std::string path = point_file(p);
    if (temp.empty()) {
      const std::string text = record.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
      temp = write_temp_file(path, [&](std::ostream& out) { out << text; }, /*durable=*/false);
    }
    if (batch_.empty()) batch_since_ = Clock::now();
    batch_.push_back({temp, path});
  }

  // The batch's files, written beside their places, are made durable together (one syncfs of
  // the filesystem instead of an fsync per file), then renamed into points/ and the folder
  // fsync'ed once: a point is in points/ whole, or not at all (its temporary file is removed
  // later and the point runs again), even after a power loss.
  // Then the results files are rewritten, at most every kResultsMilliseconds, and once
  // rewriting them has become a large share of the time (big sweeps) at most every 4x its cost.
  void store_batch() {
    if (batch_.empty()) return;
    const std::string folder = (fs::path(dir_) / "points").string();
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw InputError(folder, "/", "output.unwritable", std::string("cannot open the folder: ") + std::strerror(errno));
    // Every file of the batch is written and closed (by the sweep or by its point's process,
    // which has exited) before this syncfs, so each is on the disk before its name is.
    if (::syncfs(fd) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError(folder, "/", "output.unwritable", "cannot make the points durable: " + why);
    }
    for (const auto& [temp, path] : batch_) commit_temp_file(temp, path);
    const bool synced = ::fsync(fd) == 0;
    const std::string why = std::strerror(errno);
    ::close(fd);
    if (!synced) throw InputError(folder, "/", "output.unwritable", "cannot make the points durable: " + why);
    batch_.clear();
    if (Clock::now() - last_write_ >= std::max<Clock::duration>(4 * last_write_cost_, std::chrono::milliseconds(kResultsMilliseconds)))
      write_results();
  }

  // With more points than -j slots, the longest (by the estimate) go first, so the sweep does
  // not end waiting on one long point started last; ties keep index order. Results are written
  // in index order whatever the order of running.
  void order_longest_first() {
    if (!o_.estimate_point || todo_.size() <= jobs_) return;
    std::vector<double> seconds(points_.size(), 0);
    for (std::size_t index : todo_) {
      std::vector<Override> overrides = spec_.set;
      overrides.insert(overrides.end(), points_[index].axes.begin(), points_[index].axes.end());
      seconds[index] = o_.estimate_point(spec_.scenario_path, spec_.modes, overrides);
    }
    std::stable_sort(todo_.begin(), todo_.end(), [&](std::size_t a, std::size_t b) { return seconds[a] > seconds[b]; });
  }

  // --fast: each point whose every mode an exact evaluator answers is answered here, in
  // index order; the others stay for the engine.
  void answer_exactly() {
    std::vector<std::size_t> engine;
    for (std::size_t index : todo_) {
      const Point& p = points_[index];
      std::vector<Override> overrides = spec_.set;
      overrides.insert(overrides.end(), p.axes.begin(), p.axes.end());
      const auto begin = Clock::now();
      std::optional<Json> report = o_.exact_point(spec_.scenario_path, spec_.modes, overrides);
      if (!report) {
        engine.push_back(index);
        continue;
      }
      store(p, exact_record(p, command_of(p), std::move(*report), std::chrono::duration<double>(Clock::now() - begin).count()));
      if (batch_.size() >= kBatchPoints || Clock::now() - batch_since_ >= std::chrono::milliseconds(kBatchMilliseconds))
        store_batch();
    }
    todo_ = std::move(engine);
  }

  void write_results() {
    const auto begin = Clock::now();
    std::string jsonl, csv = csv_header(spec_);
    for (const Row& r : rows_)
      if (r.present) {
        jsonl += r.jsonl;
        csv += r.csv;
      }
    const fs::path d(dir_);
    // Derived from points/ and rebuilt by every run and merge: replaced atomically but not
    // fsync'ed, which would cost more than many a point.
    replace_file((d / "results.jsonl").string(), jsonl, false);
    replace_file((d / "results.csv").string(), csv, false);
    last_write_ = Clock::now();
    last_write_cost_ = last_write_ - begin;
  }

  void draw_progress() {
    const std::size_t total = total_, done = finished_ + interrupted_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    constexpr std::size_t width = 30;
    const std::size_t filled = total ? done * width / total : width;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::string line = "\r\033[K[" + bar + "] " + std::to_string(done) + "/" + std::to_string(total) + " points";
    if (!failed_.empty()) line += ", " + std::to_string(failed_.size()) + " failed";
    line += ", " + duration(elapsed) + " elapsed";
    if (done > 0 && done < total)
      line += ", ETA " + duration(elapsed / static_cast<double>(done) * static_cast<double>(total - done));
    log_ << line << std::flush;
  }

  int merge() {
    write_results();
    std::size_t present = 0, ok = 0, oom = 0;
    for (const Row& r : rows_) {
      present += r.present;
      ok += r.ok;
      oom += r.oom;
    }
    log_ << "ipusim sweep: " << spec_.name << ": merged " << present << " of " << points_.size() << " points ("
         << ok << " ok" << (oom ? " (" + std::to_string(oom) + " out of memory)" : std::string()) << ", "
         << present - ok << " failed, " << points_.size() - present << " missing) into "
         << (fs::path(dir_) / "results.csv").string() << " and results.jsonl\n";
    return exit_code(present < points_.size(), ok < present, oom > 0);
  }

  int summarize(const Shard& shard) {
    if (o_.progress) {
      draw_progress();
      log_ << "\n";
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    std::size_t present = 0, ok = 0, oom = 0;
    for (std::size_t i : mine_) {
      present += rows_[i].present;
      ok += rows_[i].ok;
      oom += rows_[i].oom;
    }
    char rate[64] = "";
    if (finished_ > 0 && elapsed > 0)
      std::snprintf(rate, sizeof rate, " (%.1f points/s)", static_cast<double>(finished_) / elapsed);
    log_ << "ipusim sweep: " << spec_.name;
    if (o_.shard) log_ << " shard " << shard.index << "/" << shard.count;
    log_ << ": " << mine_.size() << " of " << points_.size() << " points; ran " << finished_;
    if (total_ > 0) log_ << " in " << duration(elapsed) << rate << " with -j" << jobs_;
    log_ << ", " << skipped_ << " already done";
    if (interrupted_) log_ << ", " << interrupted_ << " interrupted (run the sweep again)";
    log_ << "; " << ok << " ok";
    if (oom) log_ << " (" << oom << " out of memory" << (o_.fail_on_oom ? ", --fail-on-oom" : "") << ")";
    log_ << ", " << present - ok << " failed; results in " << (fs::path(dir_) / "results.csv").string()
         << "\n";
    std::sort(failed_.begin(), failed_.end());
    for (std::size_t i = 0; i < failed_.size() && i < 10; ++i) {
      const Point& p = points_[failed_[i]];
      log_ << "  failed: point " << p.index << " (" << point_file(p) << ")\n";
    }
    if (failed_.size() > 10) log_ << "  ... and " << failed_.size() - 10 << " more\n";
    return exit_code(present < mine_.size(), ok < present, oom > 0);
  }

  int exit_code(bool incomplete, bool failed, bool out_of_memory) const {
    if (incomplete) return kExitIncomplete;
    if (failed) return kExitPointsFailed;
    return o_.fail_on_oom && out_of_memory ? kExitOutOfMemory : 0;
  }

  const Options& o_;
  std::ostream& log_;
  Spec spec_;
  std::vector<Point> points_;
  std::string dir_;
  std::unique_ptr<FolderLock> lock_;
  std::vector<Row> rows_;
  std::vector<std::size_t> mine_, todo_, failed_;
  std::size_t skipped_ = 0, total_ = 0, jobs_ = 1, finished_ = 0, interrupted_ = 0;
  std::vector<std::pair<std::string, std::string>> batch_;  // (temporary file, point file) not yet renamed
  Clock::time_point start_, last_write_{}, batch_since_{};
  Clock::duration last_write_cost_{};
};

} // namespace

namespace {

// A process's rank and the number of ranks from an MPI launcher or srun: Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE), MPICH and Intel MPI (PMI_RANK/SIZE), srun's tasks
// (SLURM_PROCID/NTASKS), first found first.
std::optional<std::pair<std::size_t, std::size_t>> launcher_rank(std::string& source) {
  static const std::pair<const char*, const char*> launchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank, size] : launchers)
    if (!env(rank).empty() && !env(size).empty()) {
      source = std::string(rank) + "/" + size;
      return std::pair{parse_count(env(rank), rank), parse_count(env(size), size)};
    }
  return std::nullopt;
}

// A batch scheduler's array task: its id, and the ids the array holds when the scheduler says.
struct ArrayTask {
  std::string scheduler;  // "SLURM", "SGE", "PBS": for messages
  std::string id_text;    // the task id as the scheduler gave it
  std::size_t id = 0;
  std::optional<std::size_t> first, last, step;  // SLURM and SGE say; PBS does not
  std::optional<std::size_t> count;              // SLURM says
  std::size_t lowest_id = 0;                     // the smallest id the scheduler allows (SGE: 1)
};

std::optional<std::size_t> count_or_none(const char* name) {
  const std::string v = env(name);
  if (v.empty()) return std::nullopt;
  return parse_count(v, name);
}

// SLURM (sbatch --array, with its task count), Grid Engine (qsub -t: SGE_TASK_ID is "undefined"
// outside an array), PBS Pro (qsub -J: PBS_ARRAY_INDEX) and Torque (qsub -t: PBS_ARRAYID), first found first.
std::optional<ArrayTask> array_task() {
  ArrayTask t;
  if (const std::string id = env("SLURM_ARRAY_TASK_ID"); !id.empty() && !env("SLURM_ARRAY_TASK_COUNT").empty()) {
    t = {"SLURM", id, parse_count(id, "SLURM_ARRAY_TASK_ID"), count_or_none("SLURM_ARRAY_TASK_MIN"),
         count_or_none("SLURM_ARRAY_TASK_MAX"), count_or_none("SLURM_ARRAY_TASK_STEP"),
         count_or_none("SLURM_ARRAY_TASK_COUNT"), 0};
    if (!t.first) t.first = 0;
    return t;
  }
  if (const std::string id = env("SGE_TASK_ID"); !id.empty() && id != "undefined") {
    t = {"SGE", id, parse_count(id, "SGE_TASK_ID"), count_or_none("SGE_TASK_FIRST"), count_or_none("SGE_TASK_LAST"),
         count_or_none("SGE_TASK_STEPSIZE"), std::nullopt, 1};
    return t;
  }
  for (const char* name : {"PBS_ARRAY_INDEX", "PBS_ARRAYID"})
    if (const std::string id = env(name); !id.empty()) {
      t.scheduler = "PBS";
      t.id_text = id;
      t.id = parse_count(id, name);
      return t;
    }
  return std::nullopt;
}

// --shard auto from an array task: K = (id - first) / step, N = the array's count (SLURM's, or
// (last - first) / step + 1). A one-task array whose id is not the lowest the scheduler allows
// is what SLURM or SGE make of a task submitted again alone (sbatch --array=3, qsub -t 3): as
// shard 0 of 1 it would run the other shards' points, so it is refused.
Shard shard_of_array(const std::string& text, const ArrayTask& t) {
  const std::string name = t.scheduler == "SGE" ? "SGE_TASK_ID" : "SLURM_ARRAY_TASK_ID";
  if (!t.first || (!t.count && !t.last))
    throw InputError("--shard", text, "sweep.bad-shard",
                     t.scheduler + " gives the task id (" + t.id_text +
                         ") but not the array's size; give --shard auto/N with the number of tasks N");
  const std::size_t first = *t.first, stride = t.step.value_or(1);
  if (t.id < first || stride == 0 || (t.id - first) % stride != 0 || (t.last && t.id > *t.last))
    throw InputError("--shard", text, "sweep.bad-shard",
                     name + " " + t.id_text + " is not in the array (first " + std::to_string(first) + ", step " +
                         std::to_string(stride) + ")");
  Shard s;
  s.index = (t.id - first) / stride;
  s.count = t.count ? *t.count : (*t.last - first) / stride + 1;
  if (s.count == 1 && t.id != t.lowest_id)
    throw InputError("--shard", text, "sweep.bad-shard",
                     "a job array of one task, id " + t.id_text + ": a shard submitted again alone (" +
                         (t.scheduler == "SGE" ? "qsub -t " : "sbatch --array=") + t.id_text +
                         ") cannot tell how many shards the sweep has; give --shard auto/N with the array's size N "
                         "(the task id is then the shard), or --shard K/N");
  return s;
}

// --shard auto: K and N from a batch scheduler's job array, else from the launcher's ranks.
Shard shard_from_launcher(const std::string& text) {
  if (const auto task = array_task()) return shard_of_array(text, *task);
  std::string source;
  if (const auto rank = launcher_rank(source)) {
    Shard s;
    s.index = rank->first;
    s.count = rank->second;
    return s;
  }
  throw InputError("--shard", text, "sweep.bad-shard",
                   "--shard auto needs a job array (SLURM_ARRAY_TASK_ID, SGE_TASK_ID, PBS_ARRAY_INDEX or PBS_ARRAYID) "
                   "or an MPI launcher's ranks (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS); give "
                   "--shard K/N elsewhere");
}

// --shard auto/N: N given, K the array task's id less the lowest id the scheduler allows
// (SLURM, PBS: arrays 0..N-1; SGE: 1..N), so a task submitted again alone is still its
// shard; else the launcher's rank.
Shard shard_of_count(const std::string& text, std::size_t count) {
  Shard s;
  s.count = count;
  std::string source;
  if (const auto task = array_task()) {
    if (task->id < task->lowest_id)
      throw InputError("--shard", text, "sweep.bad-shard",
                       task->scheduler + " task id " + task->id_text + " is below " +
                           std::to_string(task->lowest_id) + ", the first id of an array");
    s.index = task->id - task->lowest_id;
  } else if (const auto rank = launcher_rank(source)) {
    if (rank->second != count)
      throw InputError("--shard", text, "sweep.bad-shard",
                       source + " says " + std::to_string(rank->second) + " ranks, --shard says " +
                           std::to_string(count) + ": give --shard auto (the launcher's count) or the same N");
    s.index = rank->first;
  } else {
    throw InputError("--shard", text, "sweep.bad-shard",
                     "--shard auto/N needs a job array's task id (SLURM_ARRAY_TASK_ID, SGE_TASK_ID, PBS_ARRAY_INDEX, "
                     "PBS_ARRAYID) or an MPI launcher's rank; give --shard K/N elsewhere");
  }
  return s;
}

} // namespace

Shard parse_shard(const std::string& text) {
  Shard s;
  if (text == "auto") {
    s = shard_from_launcher(text);
  } else if (text.rfind("auto/", 0) == 0) {
    s = shard_of_count(text, parse_count(text.substr(5), "N"));
  } else {
    const auto slash = text.find('/');
    if (slash == std::string::npos)
      throw InputError("--shard", text, "sweep.bad-shard",
                       "expected K/N (such as 0/4), auto or auto/N, got \"" + text + "\"");
    s.index = parse_count(text.substr(0, slash), "K");
    s.count = parse_count(text.substr(slash + 1), "N");
  }
  if (s.count == 0 || s.index >= s.count)
    throw InputError("--shard", text, "sweep.bad-shard",
                     "shard " + std::to_string(s.index) + "/" + std::to_string(s.count) + ": need 0 <= K < N");
  return s;
}

int run_sweep(const Options& options, std::ostream& log) { return Sweep(options, log).run(); }

} // namespace ipusim::sweep
