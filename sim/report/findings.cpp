#include "sim/report/findings.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/base/units.hpp"

namespace ipusim::report {

namespace {

// Parts smaller than this share of IPU time are left out of a sentence.
constexpr double kMention = 0.005;

std::string capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 'a' + 'A');
  return text;
}

std::string ratio(double r) { return format_fixed(r, 2) + "x"; }

// "40.0 % compute, 30.0 % host I/O, 20.0 % idle (11.0 % fill and flush, 9.0 % imbalance)".
std::string where_time_goes(const Json& run) {
  std::vector<std::pair<double, std::string>> busy, idle;
  double idle_total = 0;
  for (const TimePart& part : time_parts()) {
    const double share = time_share(run, part);
    if (!std::isfinite(share)) continue;
    if (part.idle) {
      idle_total += share;
      if (share >= kMention) idle.push_back({share, part.name.substr(6)});  // "idle: " dropped
    } else if (share >= kMention) {
      busy.push_back({share, part.name});
    }
  }
  if (busy.empty() && idle.empty()) return "";
  const auto larger = [](const auto& a, const auto& b) { return a.first > b.first; };
  std::stable_sort(busy.begin(), busy.end(), larger);
  std::stable_sort(idle.begin(), idle.end(), larger);
  std::string out;
  for (const auto& [share, name] : busy) out += (out.empty() ? "" : ", ") + format_percent(share) + " " + name;
  if (idle_total >= kMention) {
    out += (out.empty() ? "" : ", ") + format_percent(idle_total) + " idle";
    std::string causes;
    for (const auto& [share, name] : idle) causes += (causes.empty() ? "" : ", ") + format_percent(share) + " " + name;
    if (!causes.empty()) out += " (" + causes + ")";
  }
  return out;
}

// The largest idle cause of a run: its name and share of IPU time.
std::pair<std::string, double> largest_idle(const Json& run) {
  std::pair<std::string, double> best{"", 0};
  for (const TimePart& part : time_parts())
    if (const double share = time_share(run, part); part.idle && std::isfinite(share) && share > best.second)
      best = {part.name.substr(6), share};
  return best;
}

const Json* ipu_in(const Json& run, std::int64_t id) {
  for (const Json& m : array_at(run, "ipus"))
    if (integer(m, "id") == id) return &m;
  return nullptr;
}

// "The bottleneck is IPU 1 (stage 2), 78.0 % busy; the most idle is IPU 3, 61.0 % of the step idle, mostly imbalance (40.0 %)."
std::string bottleneck_sentence(const Json& run) {
  std::string out;
  const Json& bottleneck = object_at(run, "bottleneck");
  const std::int64_t ipu = integer(bottleneck, "ipu");
  if (const Json* m = ipu >= 0 ? ipu_in(run, ipu) : nullptr) {
    out = "The bottleneck is IPU " + std::to_string(ipu);
    if (const std::int64_t stage = integer(bottleneck, "stage"); stage >= 0) out += " (stage " + std::to_string(stage) + ")";
    if (const double u = num(*m, "utilization"); std::isfinite(u)) out += ", " + format_percent(u) + " busy";
  }
  const double step = num(run, "stepTimeSeconds");
  const Json* idlest = nullptr;
  for (const Json& m : array_at(run, "ipus"))
    if (!idlest || num(m, "idleSeconds", 0) > num(*idlest, "idleSeconds", 0)) idlest = &m;
  if (idlest && step > 0 && num(*idlest, "idleSeconds", 0) / step >= kMention && array_at(run, "ipus").size() > 1) {
    std::pair<std::string, double> cause{"", 0};
    for (const TimePart& part : time_parts())
      if (const double s = ipu_seconds(*idlest, part); part.idle && std::isfinite(s) && s > cause.second)
        cause = {part.name.substr(6), s};
    out += std::string(out.empty() ? "The" : "; the") + " most idle IPU is IPU " +
           std::to_string(integer(*idlest, "id")) + ", idle " + format_percent(num(*idlest, "idleSeconds") / step) +
           " of the step";
    if (!cause.first.empty()) out += ", mostly " + cause.first + " (" + format_percent(cause.second / step) + ")";
  }
  return out.empty() ? out : out + ".";
}

// One IPU that does not fit: its fullest tile against the tile's SRAM (or its total).
std::string overfull_ipu(const Json& m) {
  std::string text = "vIPU " + std::to_string(integer(m, "virtualIpu"));
  const double tile = num(m, "fullestTileBytes"), capacity = num(m, "tileCapacityBytes");
  if (std::isfinite(tile) && capacity > 0) return text + " (fullest tile " + format_bytes(tile) + " of " + format_bytes(capacity) + ")";
  if (const double total = num(m, "totalBytes"), cap = num(m, "capacityBytes"); cap > 0)
    return text + " (" + format_bytes(total) + " of " + format_bytes(cap) + ")";
  return text;
}

// How full an IPU is: its fullest tile's share of a tile, else its total's of the IPU.
double fullness(const Json& m) {
  const double tile = num(m, "fullestTileBytes"), capacity = num(m, "tileCapacityBytes");
  if (std::isfinite(tile) && capacity > 0) return tile / capacity;
  const double total = num(m, "totalBytes"), cap = num(m, "capacityBytes");
  return cap > 0 ? total / cap : 0;
}

// IPUs whose memory does not fit, each with its fullest tile; past three, the fullest and a count.
std::string memory_sentence(const Json& run, const std::string& label) {
  if (fits_in_memory(run) != 0) return "";
  std::vector<const Json*> overfull;
  for (const Json& m : array_at(object_at(run, "memory"), "ipus")) {
    const Json* fits = field(m, "fits");
    if (fits && fits->is_boolean() && !fits->get<bool>()) overfull.push_back(&m);
  }
  std::string ipus;
  if (overfull.size() > 3) {
    const Json* fullest = *std::max_element(overfull.begin(), overfull.end(),
                                            [](const Json* a, const Json* b) { return fullness(*a) < fullness(*b); });
    ipus = std::to_string(overfull.size()) + " virtual IPUs, the fullest " + overfull_ipu(*fullest);
  } else {
    for (const Json* m : overfull) ipus += (ipus.empty() ? "" : ", ") + overfull_ipu(*m);
  }
  std::string out = capitalised(label) + " does not fit in memory" + (ipus.empty() ? "" : " on " + ipus) + ".";
  // The settings the memory model found would make it fit (memory.fixes, best first).
  std::string fixes;
  for (const Json& f : array_at(object_at(run, "memory"), "fixes")) {
    const Json* fits = field(f, "fits");
    const Json* change = field(f, "change");
    const Json* how = field(f, "how");
    if (!fits || !fits->is_boolean() || !fits->get<bool>() || !change || !change->is_string()) continue;
    fixes += (fixes.empty() ? "" : "; ") + change->get<std::string>() +
             (how && how->is_string() ? " (" + how->get<std::string>() + ")" : "");
  }
  if (!fixes.empty()) out += " It would fit with " + fixes + ".";
  return out;
}

double throughput(const Json& run) { return num(run, "throughputSamplesPerSecond"); }

// The fastest run of a document: its mode label and throughput.
const Json* fastest_run(const Json& doc) {
  const Json* best = nullptr;
  for (const Json* r : ordered_runs(doc))
    if (std::isfinite(throughput(*r)) && (!best || throughput(*r) > throughput(*best))) best = r;
  return best;
}

std::string axes_text(const Json& axes) {
  std::string out;
  for (const auto& [key, value] : axes.items()) out += (out.empty() ? "" : ", ") + key + "=" + scalar_text(value);
  return out;
}

std::string point_name(const SweepPoint& p) {
  const std::string axes = axes_text(p.axes);
  return axes.empty() ? "point " + p.id : axes;
}

std::string id_list(const std::vector<const SweepPoint*>& points) {
  std::string out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == 6) return out + " and " + std::to_string(points.size() - 6) + " more";
    out += (i ? ", " : "") + point_name(*points[i]);
  }
  return out;
}

} // namespace

std::vector<std::string> run_findings(const Json& doc) {
  std::vector<std::string> out;
  const auto runs = ordered_runs(doc);
  const Json* winner = fastest_run(doc);
  if (!winner) return out;
  const Json* loser = nullptr;
  for (const Json* r : runs)
    if (r != winner && std::isfinite(throughput(*r)) && (!loser || throughput(*r) < throughput(*loser))) loser = r;
  if (loser && throughput(*loser) > 0) {
    out.push_back(capitalised(mode_label(*winner)) + " wins: " + ratio(throughput(*winner) / throughput(*loser)) +
                  " the throughput of " + mode_label(*loser) + " (" + rate(throughput(*winner)) + " against " +
                  rate(throughput(*loser)) + "; " + seconds(num(*winner, "stepTimeSeconds")) + " against " +
                  seconds(num(*loser, "stepTimeSeconds")) + " per step).");
  } else {
    out.push_back("One mode ran: " + mode_label(*winner) + ", " + rate(throughput(*winner)) + ", " +
                  seconds(num(*winner, "stepTimeSeconds")) + " per step.");
  }
  if (const std::string shares = where_time_goes(*winner); !shares.empty())
    out.push_back("Its IPU time is " + shares + ".");
  if (loser) {
    const auto [cause, share] = largest_idle(*loser);
    if (share >= kMention)
      out.push_back(capitalised(mode_label(*loser)) + " loses " + format_percent(share) + " of its IPU time to " + cause +
                    ".");
  }
  if (const std::string b = bottleneck_sentence(*winner); !b.empty()) out.push_back(b);
  bool any_memory = false;
  for (const Json* r : runs) {
    if (fits_in_memory(*r) >= 0) any_memory = true;
    if (const std::string m = memory_sentence(*r, mode_label(*r)); !m.empty()) out.push_back(m);
  }
  if (any_memory && std::all_of(runs.begin(), runs.end(), [](const Json* r) { return fits_in_memory(*r) != 0; }))
    out.push_back("Every mode fits in memory.");
  return out;
}

std::vector<std::string> summary_findings(const std::vector<std::pair<std::string, const Json*>>& docs) {
  std::vector<std::string> out;
  std::vector<std::pair<double, std::string>> speedups;
  std::vector<std::string> not_fitting;
  for (const auto& [name, doc] : docs) {
    if (const double s = speedup_of(*doc); std::isfinite(s)) speedups.push_back({s, name});
    for (const Json* r : ordered_runs(*doc))
      if (fits_in_memory(*r) == 0) {
        not_fitting.push_back(name + " (" + mode_label(*r) + ")");
      }
  }
  if (!speedups.empty()) {
    const auto wins = std::count_if(speedups.begin(), speedups.end(), [](const auto& s) { return s.first > 1; });
    const auto [lo, hi] = std::minmax_element(speedups.begin(), speedups.end());
    std::string text = "Pipelining is faster than sharding in " + std::to_string(wins) + " of " +
                       std::to_string(speedups.size()) + " run input" + (speedups.size() == 1 ? "" : "s");
    if (speedups.size() == 1) text += ": " + ratio(hi->first) + " (" + hi->second + ")";
    else text += "; the speed-up ranges from " + ratio(lo->first) + " (" + lo->second + ") to " + ratio(hi->first) +
                 " (" + hi->second + ")";
    out.push_back(text + ".");
  }
  if (!not_fitting.empty()) {
    std::string list;
    for (const auto& n : not_fitting) list += (list.empty() ? "" : ", ") + n;
    out.push_back("Not fitting in memory: " + list + ".");
  }
  return out;
}

namespace {

// The sweep's points by outcome: ran and fit, ran out of memory, failed.
struct PointsByOutcome {
  std::vector<const SweepPoint*> fitting, oom, failed;
};

PointsByOutcome points_by_outcome(const Input& sweep) {
  PointsByOutcome by;
  for (const SweepPoint& p : sweep.points) {
    if (!p.ok) by.failed.push_back(&p);
    else {
      bool fits = true;
      for (const Json* r : ordered_runs(p.report)) fits = fits && fits_in_memory(*r) != 0;
      (fits ? by.fitting : by.oom).push_back(&p);
    }
  }
  return by;
}

const Json* best_run_of(const SweepPoint* p) { return fastest_run(p->report); }

// "Fastest that fits: ...", against the next best and the slowest of `ranked` (fastest first).
std::string fastest_that_fits(const std::vector<const SweepPoint*>& ranked) {
  const SweepPoint* top = ranked.front();
  const Json& top_run = *best_run_of(top);
  std::string best = "Fastest that fits: " + point_name(*top) + ", " + mode_label(top_run) + ", " +
                     rate(throughput(top_run));
  if (ranked.size() > 1) {
    const Json& next = *best_run_of(ranked[1]);
    const Json& last = *best_run_of(ranked.back());
    best += ": " + ratio(throughput(top_run) / throughput(next)) + " the next best (" + point_name(*ranked[1]) + ", " +
            rate(throughput(next)) + ")";
    if (ranked.size() > 2)
      best += " and " + ratio(throughput(top_run) / throughput(last)) + " the slowest (" + point_name(*ranked.back()) +
              ", " + rate(throughput(last)) + ")";
  }
  return best + ".";
}

} // namespace

std::vector<std::string> sweep_findings(const Input& sweep) {
  std::vector<std::string> out;
  const PointsByOutcome by = points_by_outcome(sweep);
  std::string counts = std::to_string(sweep.points.size()) + " points: " + std::to_string(by.fitting.size()) +
                       " ran and fit in memory";
  if (!by.oom.empty()) counts += ", " + std::to_string(by.oom.size()) + " out of memory (" + id_list(by.oom) + ")";
  if (!by.failed.empty())
    counts += ", " + std::to_string(by.failed.size()) + " failed (" + id_list(by.failed) + ")";
  out.push_back(counts + ".");

  // Each point by its fastest mode.
  std::vector<const SweepPoint*> ranked;
  for (const SweepPoint* p : by.fitting)
    if (best_run_of(p)) ranked.push_back(p);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const SweepPoint* a, const SweepPoint* b) {
    return throughput(*best_run_of(a)) > throughput(*best_run_of(b));
  });
  if (ranked.empty()) {
    out.push_back("No point both ran and fits in memory, so none can be recommended.");
    return out;
  }
  out.push_back(fastest_that_fits(ranked));
  const Json& top_run = *best_run_of(ranked.front());
  if (const std::string shares = where_time_goes(top_run); !shares.empty())
    out.push_back("Its IPU time is " + shares + ".");
  std::size_t pipelined_wins = 0, both = 0;
  for (const SweepPoint* p : by.fitting)
    if (const double s = speedup_of(p->report); std::isfinite(s)) {
      ++both;
      pipelined_wins += s > 1 ? 1 : 0;
    }
  if (both > 0)
    out.push_back("Pipelining beats sharding at " + std::to_string(pipelined_wins) + " of " + std::to_string(both) +
                  " points that fit.");
  std::vector<const SweepPoint*> faster_oom;
  for (const SweepPoint* p : by.oom)
    if (const Json* r = best_run_of(p); r && throughput(*r) > throughput(top_run)) faster_oom.push_back(p);
  if (!faster_oom.empty())
    out.push_back("Faster but out of memory, so not possible as configured: " + id_list(faster_oom) + ".");
  return out;
}

std::vector<std::string> trace_findings(const std::string& process, const std::vector<TrackTime>& tracks,
                                        double span_s) {
  std::vector<std::string> out;
  if (!(span_s > 0)) return out;
  std::map<std::string, double> total;
  const TrackTime* busiest = nullptr;
  const TrackTime* quietest = nullptr;
  std::size_t ipus = 0;
  auto compute = [](const TrackTime& t) {
    auto it = t.seconds.find("compute");
    return it == t.seconds.end() ? 0.0 : it->second;
  };
  for (const TrackTime& t : tracks) {
    if (t.name.rfind("IPU", 0) != 0) continue;
    ++ipus;
    for (const auto& [category, s] : t.seconds) total[category] += s;
    if (!busiest || compute(t) > compute(*busiest)) busiest = &t;
    if (!quietest || compute(t) < compute(*quietest)) quietest = &t;
  }
  if (ipus == 0) return out;
  std::vector<std::pair<double, std::string>> parts;
  for (const auto& [category, s] : total) parts.push_back({s / (span_s * static_cast<double>(ipus)), category});
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text;
  for (const auto& [share, category] : parts)
    if (share >= kMention) text += (text.empty() ? "" : ", ") + format_percent(share) + " " + category;
  if (!text.empty())
    out.push_back("In " + process + ", the " + std::to_string(ipus) + " IPU track" + (ipus == 1 ? "" : "s") +
                  " spend their " + format_seconds(span_s) + " as " + text + " (the rest without an event).");
  if (busiest && quietest && busiest != quietest)
    out.push_back(busiest->name + " computes most (" + format_percent(compute(*busiest) / span_s) + " of the step), " +
                  quietest->name + " least (" + format_percent(compute(*quietest) / span_s) + ").");
  return out;
}

} // namespace ipusim::report
