#include "sim/output/trace.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/metrics/attribution.hpp"
#include "sim/output/json_report.hpp"
#include "sim/base/units.hpp"

namespace ipusim {

namespace {

using Json = nlohmann::json;

constexpr double kMicrosecondsPerSecond = 1e6;

std::string endpoint_name(int ipu) {
  return ipu == -2 ? "streaming memory" : ipu < 0 ? "host" : "ipu" + std::to_string(ipu);
}

std::string process_name(const ModeRun& run) {
  const std::string mode = mode_name(run.metrics.mode);
  return run.metrics.mode == Mode::Pipelined ? mode + " (" + run.schedule.name + ")" : mode;
}

// The label Perfetto shows beside the process: the step time and where the idle time
// went (docs/step-time.md), as shares of IPU time.
std::string process_label(const RunMetrics& m) {
  const TimeShares s = time_shares(m);
  std::string label = "step time " + format_seconds(m.step_time_s);
  if (!(s.idle_total() > 0)) return label;
  label += "; idle " + format_percent(s.idle_total());
  const std::pair<double, const char*> causes[] = {{s.idle.fill_flush_s, "fill and flush"},
                                                   {s.idle.imbalance_s, "imbalance"},
                                                   {s.idle.copy_wait_s, "waiting on copies"},
                                                   {s.idle.update_wait_s, "waiting on updates"},
                                                   {s.idle.turn_wait_s, "waiting for its turn"}};
  const char* separator = ": ";
  for (const auto& [share, cause] : causes)
    if (share >= 0.0005) {
      label += separator + format_percent(share) + " " + cause;
      separator = ", ";
    }
  return label;
}

std::string compute_name(const Event& e) {
  // An update after the flush covers every weight of its IPU; one every micro-batch, one stage's.
  if (e.pass == Pass::Update && e.stage < 0) return "weight update";
  std::string name = "stage " + std::to_string(e.stage);
  // What it ran: F, BW (a whole backward), B or W (a zero-bubble order's halves); "" for updates.
  const std::string work = pass_letter(e.pass);
  if (e.pass == Pass::Update) name = "weight update " + name;
  // Perfetto colours a slice by its name with the digits left out, so each kind of work
  // has its own word: B and W of a zero-bubble order do not share "bwd"'s colour.
  else name += work == "F" ? " fwd" : work == "B" ? " bwd-input" : work == "W" ? " wgrad" : " bwd";
  if (e.micro_batch >= 0) name += " mb " + std::to_string(e.micro_batch);
  return name;
}

// chrome://tracing's reserved colour names (its color_scheme); Perfetto ignores "cname"
// and colours by name (compute_name). F green, B and BW orange, W blue.
const char* work_color(const std::string& work) {
  if (work == "F") return "good";
  if (work == "B" || work == "BW") return "bad";
  if (work == "W") return "rail_load";
  return "";
}

// What a transfer carried, when the log tells: the stage and micro-batch of a host
// stream, the micro-batch of an inter-IPU copy.
struct Origin {
  int stage = -1;
  std::int64_t micro_batch = -1;
};

// Host streams block their IPU, so the k-th stream from the host to IPU i is its k-th
// host-input event (likewise outputs). A copy carries the micro-batch its sending stage
// computed last before the copy started, once: copies a lockstep schedule runs in fill
// or flush cycles, when the sending stage has no new micro-batch, carry none.
std::vector<Origin> transfer_origins(const Plan& plan, const RunLog& log) {
  std::vector<Origin> origins(log.transfers.size());

  std::map<std::pair<int, int>, std::vector<const Event*>> streams;  // (ipu, +1 input / -1 output)
  std::map<std::pair<int, int>, std::vector<std::pair<double, std::int64_t>>> computed;  // (ipu, stage)
  for (const Event& e : log.events) {
    if (e.kind == EventKind::HostInput) streams[{e.ipu, 1}].push_back(&e);
    if (e.kind == EventKind::HostOutput) streams[{e.ipu, -1}].push_back(&e);
    if (e.kind == EventKind::Compute && e.stage >= 0 && e.micro_batch >= 0)
      computed[{e.ipu, e.stage}].emplace_back(e.end, e.micro_batch);
  }
  std::map<std::pair<int, int>, std::vector<std::size_t>> stream_transfers;
  for (std::size_t i = 0; i < log.transfers.size(); ++i) {
    const TransferRecord& t = log.transfers[i];
    if (t.src == -1) stream_transfers[{t.dst, 1}].push_back(i);
    else if (t.dst == -1) stream_transfers[{t.src, -1}].push_back(i);
  }
  for (const auto& [key, indices] : stream_transfers) {
    const auto found = streams.find(key);
    if (found == streams.end() || found->second.size() != indices.size()) continue;  // cannot pair them up
    for (std::size_t k = 0; k < indices.size(); ++k)
      origins[indices[k]] = {found->second[k]->stage, found->second[k]->micro_batch};
  }

  std::map<int, const PlanCopy*> copies;
  for (const PlanCopy& c : plan.copies) copies[c.id] = &c;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < log.transfers.size(); ++i)
    if (log.transfers[i].copy >= 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return log.transfers[a].start < log.transfers[b].start;
  });
  std::set<std::pair<int, std::int64_t>> carried;  // (copy, micro-batch)
  for (std::size_t i : order) {
    const TransferRecord& t = log.transfers[i];
    const auto copy = copies.find(t.copy);
    if (copy == copies.end()) continue;
    const auto sent = computed.find({t.src, copy->second->from_stage});
    if (sent == computed.end()) continue;
    const auto& done = sent->second;  // in program order, so by end time
    const auto after = std::upper_bound(done.begin(), done.end(), t.start,
                                        [](double start, const auto& c) { return start < c.first; });
    if (after == done.begin()) continue;
    const std::int64_t mb = std::prev(after)->second;
    if (carried.insert({t.copy, mb}).second) origins[i].micro_batch = mb;
  }
  return origins;
}

Json metadata(const char* name, int pid, int tid, Json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// A slice before its JSON is made: where it goes, and what it shows (an event of a run,
// or a transfer on one link of its route). Only these are kept and sorted; each slice's
// JSON is made as it is written, so a long trace streams to its file.
struct Slice {
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;
  std::size_t sequence = 0;
  std::size_t run = 0, index = 0;
  int link = -1;  // -1: an event, kIdleSlice: an idle stretch (index into idle_slices_[run])
};

constexpr int kIdleSlice = -2;

// The run's idle stretches by cause, from its logged events replayed through the same
// attribution the metrics use (the per-IPU order of the log is all it depends on: copies
// pair with receives first in, first out).
std::vector<IdleSlice> idle_slices(const ModeRun& run) {
  TimeAttribution attribution(run.schedule, run.metrics.mode, true);
  if (attribution.wants_transfers())
    for (const TransferRecord& t : run.log.transfers) attribution.on_transfer(t);
  for (const Event& e : run.log.events) attribution.on_event(e);
  return attribution.finish(run.metrics.step_time_s).idle_slices;
}

std::string idle_slice_name(IdleCause cause) {
  switch (cause) {
  case IdleCause::FillFlush: return "idle: fill and flush";
  case IdleCause::Imbalance: return "idle: imbalance";
  case IdleCause::CopyWait: return "idle: waiting on copies";
  case IdleCause::UpdateWait: return "idle: waiting on updates";
  case IdleCause::TurnWait: return "idle: waiting for its turn";
  }
  return "idle";
}

// The document in its order: metadata, then each slice; `otherData` last.
class TraceMaker {
public:
  TraceMaker(const Scenario& sc, const Simulation& sim) : sc_(sc), sim_(sim) {}

  void write(const std::function<void(const Json&)>& event) {
    Json step_times = Json::object(), dropped = Json::object();
    for (std::size_t r = 0; r < sim_.runs.size(); ++r) add_run(r, step_times, dropped);
    // Per track by start; of two slices starting together the longer first, so that
    // transfers sharing a link nest; then in the order they were made.
    std::sort(slices_.begin(), slices_.end(), [](const Slice& x, const Slice& y) {
      return std::tie(x.pid, x.tid, x.ts, y.dur, x.sequence) < std::tie(y.pid, y.tid, y.ts, x.dur, y.sequence);
    });
    for (const Json& m : metadata_) event(m);
    metadata_.clear();
    for (const Slice& s : slices_) event(slice_json(s));
    Json flows = Json::object();
    for (std::size_t r = 0; r < sim_.runs.size(); ++r) {
      flows[process_name(sim_.runs[r])] = write_flows(r, event);
      write_link_load(r, event);
    }
    other_ = {{"generator", "ipusim"},
              {"scenario", sc_.name},
              {"scenarioFile", sc_.file},
              {"model", sc_.model.name},
              {"config", sc_.hardware.name},
              {"timeUnit", "ts and dur in microseconds"},
              {"stepTimeSeconds", step_times},
              {"zeroDurationEventsLeftOut", dropped},
              {"copyFlows", flows},
              {"idleSeconds", idle_}};
  }
  // The document's keys after traceEvents, in the order nlohmann::json keeps them.
  Json tail() const { return {{"displayTimeUnit", "ns"}, {"otherData", other_}}; }

private:
  bool add(int pid, int tid, double start_s, double end_s, std::size_t run, std::size_t index, int link) {
    const double ts = start_s * kMicrosecondsPerSecond;
    const double dur = end_s * kMicrosecondsPerSecond - ts;  // so ts + dur lands on the next event's ts
    if (!(dur > 0)) return false;
    slices_.push_back({pid, tid, ts, dur, slices_.size(), run, index, link});
    return true;
  }

  void add_run(std::size_t r, Json& step_times, Json& dropped) {
    const ModeRun& run = sim_.runs[r];
    const RunLog& log = run.log;
    const int pid = static_cast<int>(r) + 1;
    const std::string process = process_name(run);
    metadata_.push_back(metadata("process_name", pid, 0, {{"name", process}}));
    metadata_.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", r}}));
    metadata_.push_back(metadata("process_labels", pid, 0, {{"labels", process_label(run.metrics)}}));

    // Tracks: the run's IPUs ascending, then the directed links that carried a transfer.
    int next_tid = 1;
    auto add_track = [&](const std::string& name) {
      const int tid = next_tid++;
      metadata_.push_back(metadata("thread_name", pid, tid, {{"name", name}}));
      metadata_.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
      return tid;
    };
    std::map<int, int> ipu_tid;
    for (const Program& p : run.schedule.programs) ipu_tid[p.ipu] = add_track("IPU " + std::to_string(p.ipu));
    std::vector<bool> carried(log.links.size(), false);
    for (const TransferRecord& t : log.transfers)
      for (int l : t.links)
        if (l >= 0 && static_cast<std::size_t>(l) < carried.size()) carried[static_cast<std::size_t>(l)] = true;
    std::vector<int> link_tid(log.links.size(), 0);
    for (std::size_t l = 0; l < log.links.size(); ++l)
      if (carried[l]) link_tid[l] = add_track("link " + log.links[l].name);

    std::int64_t left_out = 0;
    for (std::size_t i = 0; i < log.events.size(); ++i) {
      const Event& e = log.events[i];
      if (!ipu_tid.count(e.ipu)) ipu_tid[e.ipu] = add_track("IPU " + std::to_string(e.ipu));
      if (!add(pid, ipu_tid[e.ipu], e.start, e.end, r, i, -1)) ++left_out;
    }
    idle_slices_.push_back(idle_slices(run));
    for (std::size_t i = 0; i < idle_slices_.back().size(); ++i) {
      const IdleSlice& s = idle_slices_.back()[i];
      if (!ipu_tid.count(s.ipu)) continue;
      add(pid, ipu_tid[s.ipu], s.start, s.end, r, i, kIdleSlice);
    }
    origins_.push_back(transfer_origins(sim_.plan, log));
    for (std::size_t i = 0; i < log.transfers.size(); ++i) {
      const TransferRecord& t = log.transfers[i];
      for (int l : t.links) {
        if (l < 0 || static_cast<std::size_t>(l) >= link_tid.size()) continue;
        if (!add(pid, link_tid[static_cast<std::size_t>(l)], t.start, t.end, r, i, l)) ++left_out;
      }
    }
    ipu_tids_.push_back(ipu_tid);
    link_tids_.push_back(link_tid);
    step_times[process] = run.metrics.step_time_s;
    Json idle = Json::array();  // per IPU, seconds by cause
    for (const IpuMetrics& m : run.metrics.ipus) {
      Json entry = idle_json(m.idle);
      entry["ipu"] = m.id;
      idle.push_back(std::move(entry));
    }
    idle_[process] = std::move(idle);
    dropped[process] = left_out;
  }

  // A slice's name, category, colour (empty: the viewer's) and arguments.
  struct SliceText {
    std::string name, category, color;
    Json args = Json::object();
  };

  Json slice_json(const Slice& s) const {
    SliceText text = s.link == kIdleSlice ? idle_text(idle_slices_[s.run][s.index])
                     : s.link < 0         ? event_text(sim_.runs[s.run].log.events[s.index])
                                          : transfer_text(s.run, s.index);
    Json slice = {{"name", std::move(text.name)}, {"cat", text.category}, {"ph", "X"}, {"pid", s.pid},
                  {"tid", s.tid}, {"ts", s.ts}, {"dur", s.dur}, {"args", std::move(text.args)}};
    if (!text.color.empty()) slice["cname"] = text.color;
    return slice;
  }

  static SliceText idle_text(const IdleSlice& idle) {
    return {idle_slice_name(idle.cause), std::string("idle-") + idle_cause_name(idle.cause), "", {{"ipu", idle.ipu}}};
  }

  static SliceText event_text(const Event& e) {
    SliceText t;
    switch (e.kind) {
    case EventKind::Compute:
      t.name = compute_name(e);
      t.category = "compute";
      if (e.stage >= 0) t.args["stage"] = e.stage;
      if (e.micro_batch >= 0) t.args["microBatch"] = e.micro_batch;
      t.args["pass"] = pass_name(e.pass);
      if (const std::string work = pass_letter(e.pass); !work.empty()) {
        t.args["work"] = work;
        t.color = work_color(work);
      }
      t.args["ipu"] = e.ipu;
      break;
    case EventKind::HostInput:
    case EventKind::HostOutput:
      t.name = e.kind == EventKind::HostInput ? "host input" : "host output";
      t.category = "host-io";
      t.args = {{"bytes", e.bytes}, {"stage", e.stage}, {"microBatch", e.micro_batch}, {"ipu", e.ipu}};
      break;
    case EventKind::Exchange:
      t.name = "copy phase";
      t.category = "exchange";
      t.args = {{"bytes", e.bytes}, {"ipu", e.ipu}};  // bytes this IPU sent
      break;
    case EventKind::Sync:
      t.name = "sync";
      t.category = "sync";
      t.args = {{"ipu", e.ipu}};
      break;
    case EventKind::Receive:  // asynchronous schedules: waiting for a copy to arrive
      t.name = "waiting for copy";
      t.category = "wait";
      t.args = {{"ipu", e.ipu}};
      break;
    default:  // kinds added to the engine later show under their own name
      t.name = t.category = event_kind_name(e.kind);
      t.args = {{"ipu", e.ipu}};
      if (e.stage >= 0) t.args["stage"] = e.stage;
      if (e.micro_batch >= 0) t.args["microBatch"] = e.micro_batch;
      break;
    }
    return t;
  }

  SliceText transfer_text(std::size_t run, std::size_t index) const {
    const TransferRecord& r = sim_.runs[run].log.transfers[index];
    const Origin& origin = origins_[run][index];
    SliceText t;
    t.name = r.src == -2   ? "state load"
             : r.dst == -2 ? "state store"
             : r.src < 0   ? "host input"
             : r.dst < 0   ? "host output"
                           : "copy";
    t.args = {{"bytes", r.bytes}, {"src", endpoint_name(r.src)}, {"dst", endpoint_name(r.dst)}};
    if (r.copy >= 0) {
      t.args["copy"] = r.copy;
      for (const PlanCopy& c : sim_.plan.copies)
        if (c.id == r.copy) {
          t.name = "copy stage " + std::to_string(c.from_stage) + "->" + std::to_string(c.to_stage);
          t.args["gradient"] = c.gradient;
        }
    }
    if (origin.stage >= 0) t.args["stage"] = origin.stage;
    if (origin.micro_batch >= 0) t.args["microBatch"] = origin.micro_batch;
    t.category = r.src == -2 || r.dst == -2 ? "streaming-memory" : r.src < 0 || r.dst < 0 ? "host-io" : "copy";
    return t;
  }

  // One flow arrow ("s" on the sender's IPU track when the bytes start to move, "f" on
  // the receiver's when they have arrived) per inter-IPU copy that carried a micro-batch;
  // returns how many.
  std::int64_t write_flows(std::size_t r, const std::function<void(const Json&)>& event) {
    const RunLog& log = sim_.runs[r].log;
    const int pid = static_cast<int>(r) + 1;
    std::int64_t count = 0;
    for (std::size_t i = 0; i < log.transfers.size(); ++i) {
      const TransferRecord& t = log.transfers[i];
      const Origin& origin = origins_[r][i];
      if (t.copy < 0 || t.src < 0 || t.dst < 0 || origin.micro_batch < 0) continue;
      const auto from = ipu_tids_[r].find(t.src), to = ipu_tids_[r].find(t.dst);
      if (from == ipu_tids_[r].end() || to == ipu_tids_[r].end()) continue;
      std::string name = "copy";
      for (const PlanCopy& c : sim_.plan.copies)
        if (c.id == t.copy) name = "copy stage " + std::to_string(c.from_stage) + "->" + std::to_string(c.to_stage);
      name += " mb " + std::to_string(origin.micro_batch);
      ++next_flow_;
      event({{"name", name}, {"cat", "copy"}, {"ph", "s"}, {"id", next_flow_}, {"pid", pid}, {"tid", from->second},
             {"ts", t.start * kMicrosecondsPerSecond}});
      event({{"name", name}, {"cat", "copy"}, {"ph", "f"}, {"bp", "e"}, {"id", next_flow_}, {"pid", pid},
             {"tid", to->second}, {"ts", t.end * kMicrosecondsPerSecond}});
      ++count;
    }
    return count;
  }

  // A counter per link that carried traffic: the bytes per second moving over it, the
  // sum of the mean rates (bytes / duration) of the transfers crossing it at that time;
  // one value wherever it changes.
  void write_link_load(std::size_t r, const std::function<void(const Json&)>& event) const {
    const RunLog& log = sim_.runs[r].log;
    const int pid = static_cast<int>(r) + 1;
    std::vector<std::vector<std::pair<double, double>>> changes(log.links.size());  // (time, +-rate)
    for (const TransferRecord& t : log.transfers) {
      if (!(t.end > t.start)) continue;
      const double rate = t.bytes / (t.end - t.start);
      for (int l : t.links)
        if (l >= 0 && static_cast<std::size_t>(l) < changes.size()) {
          changes[static_cast<std::size_t>(l)].emplace_back(t.start, rate);
          changes[static_cast<std::size_t>(l)].emplace_back(t.end, -rate);
        }
    }
    for (std::size_t l = 0; l < changes.size(); ++l) {
      auto& c = changes[l];
      if (c.empty()) continue;
      std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const std::string name = "link " + log.links[l].name + " load";
      double load = 0;
      for (std::size_t k = 0; k < c.size(); ++k) {
        load += c[k].second;
        if (k + 1 < c.size() && c[k + 1].first == c[k].first) continue;  // all changes at one time, then one value
        if (std::fabs(load) < 1e-6 * std::fabs(c[k].second)) load = 0;  // rounding left by the subtractions
        event({{"name", name}, {"ph", "C"}, {"pid", pid}, {"tid", link_tids_[r][l]},
               {"ts", c[k].first * kMicrosecondsPerSecond}, {"args", {{"bytesPerSecond", load}}}});
      }
    }
  }

  const Scenario& sc_;
  const Simulation& sim_;
  std::vector<Json> metadata_;
  std::vector<Slice> slices_;
  std::vector<std::vector<Origin>> origins_;  // per run, per transfer
  std::vector<std::vector<IdleSlice>> idle_slices_;  // per run
  std::vector<std::map<int, int>> ipu_tids_;  // per run: IPU -> track
  std::vector<std::vector<int>> link_tids_;   // per run: link -> track (0: none)
  std::int64_t next_flow_ = 0;                // flow ids, unique in the document
  Json idle_ = Json::object();                // per process: each IPU's idle seconds by cause
  Json other_;
};

} // namespace

Json chrome_trace(const Scenario& sc, const Simulation& sim) {
  TraceMaker maker(sc, sim);
  Json events = Json::array();
  maker.write([&](const Json& e) { events.push_back(e); });
  Json doc = maker.tail();
  doc["traceEvents"] = std::move(events);
  return doc;
}

void write_trace(std::ostream& out, const Scenario& sc, const Simulation& sim) {
  TraceMaker maker(sc, sim);
  bool first = true;
  out << "{\"traceEvents\":[";
  maker.write([&](const Json& e) {
    out << (first ? "\n" : ",\n") << e.dump(-1, ' ', false, Json::error_handler_t::replace);
    first = false;
  });
  out << "\n]";
  const Json tail = maker.tail();
  for (const auto& [key, value] : tail.items()) out << ",\n" << Json(key).dump() << ":" << value.dump(-1, ' ', false, Json::error_handler_t::replace);
  out << "}\n";
}

std::string render_trace(const Json& trace) {
  std::string out = "{\"traceEvents\":[";
  const Json& events = trace.at("traceEvents");
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    out += events[i].dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  out += "\n]";
  for (const auto& [key, value] : trace.items()) {
    if (key == "traceEvents") continue;
    out += ",\n" + Json(key).dump() + ":" + value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  out += "}\n";
  return out;
}

} // namespace ipusim
