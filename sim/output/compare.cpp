#include "sim/output/compare.hpp"

#include <algorithm>
#include <set>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "sim/io/input_error.hpp"
#include "sim/base/units.hpp"

namespace ipusim {

using Json = nlohmann::json;

namespace {

[[noreturn]] void not_a_run(const std::string& file, const std::string& pointer, const std::string& what) {
  throw InputError(file, pointer, "compare.not-a-run",
                   what + "; compare reads the documents `ipusim run --json` writes");
}

std::string label(std::size_t i) { return std::string(1, static_cast<char>('A' + i % 26)) + (i >= 26 ? std::to_string(i / 26) : ""); }

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// A number at a JSON pointer of a run, if the document has it.
std::optional<double> number(const Json& run, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!run.contains(p) || !run.at(p).is_number()) return std::nullopt;
  return run.at(p).get<double>();
}

enum class Kind { Seconds, Rate, TokenRate, Share, Count, Money };

struct Figure {
  const char* name;
  const char* pointer;
  Kind kind;
};

// Every figure of a run in the order of `ipusim run`'s table.
constexpr Figure kFigures[] = {
    {"step time", "/stepTimeSeconds", Kind::Seconds},
    {"throughput", "/throughputSamplesPerSecond", Kind::Rate},
    {"throughput (tokens)", "/llm/tokensPerSecond", Kind::TokenRate},
    {"model FLOPs utilisation", "/llm/modelFlopsUtilization", Kind::Share},
    {"cost per 1M tokens", "/llm/costPerMillionTokens", Kind::Money},
    {"samples per step", "/samplesPerStep", Kind::Count},
    {"latency mean", "/latencySeconds/mean", Kind::Seconds},
    {"latency max", "/latencySeconds/max", Kind::Seconds},
    {"IPU time computing", "/timeShares/compute", Kind::Share},
    {"IPU time idle (bubble)", "/bubbleFraction", Kind::Share},
    {"  fill and flush", "/timeShares/idleFillFlush", Kind::Share},
    {"  imbalance", "/timeShares/idleImbalance", Kind::Share},
    {"  waiting on copies", "/timeShares/idleCopyWait", Kind::Share},
    {"  waiting on updates", "/timeShares/idleUpdateWait", Kind::Share},
    {"  waiting for its turn", "/timeShares/idleTurnWait", Kind::Share},
    {"IPU time in copies", "/timeShares/exchange", Kind::Share},
    {"IPU time in syncs", "/timeShares/sync", Kind::Share},
    {"IPU time in host I/O", "/timeShares/hostIo", Kind::Share},
    {"IPU time in Streaming Mem", "/timeShares/streamingMemory", Kind::Share},
    {"gradient all-reduce", "/allreduceSeconds", Kind::Seconds},
};

std::string value_text(double v, Kind kind) {
  switch (kind) {
  case Kind::Seconds: return format_seconds(v);
  case Kind::Rate: return format_rate(v, "samples/s");
  case Kind::TokenRate: return format_rate(v, "tokens/s");
  case Kind::Share: return format_percent(v);
  case Kind::Count: return format_fixed(v, 0);
  case Kind::Money: return format_fixed(v, 2);
  }
  return "";
}

std::string delta_text(double base, double v, Kind kind) {
  const double d = v - base;
  const std::string sign = d > 0 ? "+" : (d < 0 ? "-" : "");
  switch (kind) {
  case Kind::Seconds: return sign + format_seconds(std::fabs(d));
  case Kind::Rate: return sign + format_rate(std::fabs(d), "samples/s");
  case Kind::TokenRate: return sign + format_rate(std::fabs(d), "tokens/s");
  case Kind::Share: return sign + format_fixed(100 * std::fabs(d), 1) + " pts";
  case Kind::Count: return sign + format_fixed(std::fabs(d), 0);
  case Kind::Money: return sign + format_fixed(std::fabs(d), 2);
  }
  return "";
}

std::string ratio_text(double base, double v) {
  if (base == 0) return v == 0 ? "1.00x" : "-";
  return format_fixed(v / base, 2) + "x";
}

// The first run of each mode of a document, looked up in log time: a document of 40,000
// runs is compared in linear time, not in 40,000 scans of its runs.
class RunsByMode {
public:
  // `only`: the document's one run stands for any mode.
  RunsByMode(const Json& doc, bool only) {
    for (const Json& r : doc.at("runs")) runs_.emplace(r.at("mode").get<std::string>(), &r);
    if (only) only_ = &doc.at("runs")[0];
  }
  const Json* operator()(const std::string& mode) const {
    if (only_) return only_;
    const auto it = runs_.find(mode);
    return it == runs_.end() ? nullptr : it->second;
  }

private:
  std::map<std::string, const Json*> runs_;
  const Json* only_ = nullptr;
};

// "IPU 1, stage 5"; in a replicated or placed run (some physical IPU is not the virtual IPU
// of its number) "IPU 4 (replica 0, vIPU 1), stage 7", as the run's table names it.
std::string bottleneck_text(const Json& run) {
  const auto integer = [&](const char* pointer) {
    const Json::json_pointer p(pointer);
    return run.contains(p) && run.at(p).is_number_integer() ? std::optional<int>(run.at(p).get<int>()) : std::nullopt;
  };
  const auto ipu = integer("/bottleneck/ipu"), stage = integer("/bottleneck/stage");
  if (!ipu || !stage) return "-";
  std::string text = "IPU " + std::to_string(*ipu);
  const auto replica = integer("/bottleneck/replica"), virtual_ipu = integer("/bottleneck/virtualIpu");
  const auto field = [](const Json& m, const char* key) {
    return m.is_object() && m.contains(key) && m.at(key).is_number_integer() ? std::optional<int>(m.at(key).get<int>())
                                                                              : std::nullopt;
  };
  bool placed = false;
  if (run.contains("ipus") && run.at("ipus").is_array())
    for (const Json& m : run.at("ipus")) {
      const auto id = field(m, "id"), r = field(m, "replica"), v = field(m, "virtualIpu");
      placed = placed || (id && r && v && (*r != 0 || *v != *id));
    }
  if (placed && replica && virtual_ipu)
    text += " (replica " + std::to_string(*replica) + ", vIPU " + std::to_string(*virtual_ipu) + ")";
  return text + ", stage " + std::to_string(*stage);
}

std::string fits_text(const Json& run) {
  const Json::json_pointer fits("/memory/fits");
  if (!run.contains(fits) || !run.at(fits).is_boolean()) return "-";
  return run.at(fits).get<bool>() ? "yes" : "no";
}

// Ops per virtual IPU in the forward stages of a document's plan: how the model is split.
Json split_of(const Json& doc) {
  const Json::json_pointer stages("/plan/stages");
  if (!doc.contains(stages) || !doc.at(stages).is_array()) return Json();
  std::map<std::int64_t, std::size_t> ops;
  for (const Json& s : doc.at(stages)) {
    if (!s.is_object() || (s.contains("pass") && s.at("pass") == "backward") || !s.contains("virtualIpu") ||
        !s.at("virtualIpu").is_number_integer() || !s.contains("ops") || !s.at("ops").is_array())
      continue;
    ops[s.at("virtualIpu").get<std::int64_t>()] += s.at("ops").size();
  }
  Json out = Json::array();
  for (const auto& [ipu, n] : ops) out.push_back(n);
  return out;
}

std::string dumped(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Every recorded setting that differs from the first document's: "gradientAccumulation 16 ->
// 64", the model's content ("modelHash"), the split of its ops over the IPUs, the --set flags.
std::vector<std::string> setting_differences(const Json& base, const Json& other) {
  std::vector<std::string> out;
  for (const char* key : {"model", "modelFile", "modelHash", "modelDtype", "config", "configFile", "configHash",
                          "overrides", "ipusimVersion"})
    if (base.value(key, Json()) != other.value(key, Json()))
      out.push_back(std::string(key) + " " + dumped(base.value(key, Json())) + " -> " + dumped(other.value(key, Json())));
  if (const Json a = split_of(base), b = split_of(other); a != b)
    out.push_back("split (ops per virtual IPU) " + dumped(a) + " -> " + dumped(b));
  const Json a = base.value("execution", Json::object()), b = other.value("execution", Json::object());
  if (!a.is_object() || !b.is_object()) return out;
  // Keys indexed once: documents with many keys compare in n log n, not n^2.
  std::map<std::string, const Json*> in_a, in_b;
  std::vector<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) in_a.emplace(it.key(), &it.value()), keys.push_back(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) {
    in_b.emplace(it.key(), &it.value());
    if (!in_a.count(it.key())) keys.push_back(it.key());
  }
  const Json none;
  for (const std::string& k : keys) {
    const Json& va = in_a.count(k) ? *in_a[k] : none;
    const Json& vb = in_b.count(k) ? *in_b[k] : none;
    if (va != vb) out.push_back(k + " " + dumped(va) + " -> " + dumped(vb));
  }
  return out;
}

struct Part {
  const char* name;
  const char* pointer;
};

// Where the IPU time goes, in IPU-seconds per step: share x IPUs x step time.
constexpr Part kParts[] = {
    {"computing", "/timeShares/compute"},
    {"host I/O", "/timeShares/hostIo"},
    {"copies", "/timeShares/exchange"},
    {"syncs", "/timeShares/sync"},
    {"Streaming Memory", "/timeShares/streamingMemory"},
    {"fill and flush", "/timeShares/idleFillFlush"},
    {"imbalance", "/timeShares/idleImbalance"},
    {"waiting on copies", "/timeShares/idleCopyWait"},
    {"waiting on updates", "/timeShares/idleUpdateWait"},
    {"waiting for turns", "/timeShares/idleTurnWait"},
};

std::optional<double> ipu_seconds(const Json& run, const char* pointer) {
  const auto share = number(run, pointer);
  const auto step = number(run, "/stepTimeSeconds");
  if (!share || !step || !run.contains("ipus") || !run.at("ipus").is_array()) return std::nullopt;
  return *share * *step * static_cast<double>(run.at("ipus").size());
}

void explain(std::ostringstream& out, const std::string& mode, const Json& base, const Json& other,
             const std::string& name) {
  const double a = base.at("stepTimeSeconds").get<double>(), b = other.at("stepTimeSeconds").get<double>();
  out << name << ", " << mode << ": ";
  if (a == b) out << "the same step time (" << format_seconds(a) << ")";
  else
    out << "the step is " << format_fixed(b > a ? b / a : a / b, 2) << "x " << (b > a ? "longer" : "shorter") << " ("
        << format_seconds(a) << " -> " << format_seconds(b) << ")";
  const auto ta = number(base, "/throughputSamplesPerSecond"), tb = number(other, "/throughputSamplesPerSecond");
  if (ta && tb && *ta > 0) out << ", throughput x" << format_fixed(*tb / *ta, 2);
  std::vector<std::pair<double, const char*>> changes;
  for (const Part& p : kParts) {
    const auto sa = ipu_seconds(base, p.pointer), sb = ipu_seconds(other, p.pointer);
    if (sa && sb && *sb != *sa) changes.emplace_back(*sb - *sa, p.name);
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& x, const auto& y) { return std::fabs(x.first) > std::fabs(y.first); });
  const char* separator = ". IPU time (summed over IPUs) changed most in ";
  std::size_t shown = 0;
  for (const auto& [delta, part] : changes) {
    if (shown == 3) break;
    out << separator << part << " " << (delta > 0 ? "+" : "-") << format_seconds(std::fabs(delta));
    separator = ", ";
    ++shown;
  }
  const std::string ba = bottleneck_text(base), bb = bottleneck_text(other);
  if (ba != bb) out << "; the bottleneck moves from " << ba << " to " << bb;
  if (fits_text(base) != fits_text(other))
    out << "; " << (fits_text(other) == "yes" ? "it now fits in memory" : "it no longer fits in memory");
  out << ".\n";
}

} // namespace

void check_run_document(const Json& doc, const std::string& file) {
  if (!doc.is_object()) not_a_run(file, "/", "expected a JSON object");
  if (!doc.contains("runs") || !doc.at("runs").is_array() || doc.at("runs").empty())
    not_a_run(file, "/runs", "expected a non-empty array of runs");
  for (std::size_t i = 0; i < doc.at("runs").size(); ++i) {
    const Json& run = doc.at("runs")[i];
    const std::string at = "/runs/" + std::to_string(i);
    if (!run.is_object() || !run.contains("mode") || !run.at("mode").is_string())
      not_a_run(file, at, "expected a run with a \"mode\"");
    if (!run.contains("stepTimeSeconds") || !run.at("stepTimeSeconds").is_number() || !(run.at("stepTimeSeconds").get<double>() > 0))
      not_a_run(file, at + "/stepTimeSeconds", "expected a positive step time");
  }
}

std::vector<RunDocument> split_by_schedule(const RunDocument& in) {
  const Json& runs = in.document.at("runs");
  std::size_t pipelined = 0;
  for (const Json& r : runs) pipelined += r.value("mode", "") == "pipelined" ? 1 : 0;
  if (pipelined < 2) return {in};
  // The document without its runs, copied once per schedule (not the runs: a document of
  // 10,000 runs would otherwise be copied 10,000 times); the first run of each schedule.
  Json skeleton = Json::object();
  for (const auto& [key, value] : in.document.items())
    if (key != "runs" && key != "schedules" && key != "schedulesRefused" && key != "schedulePlans") skeleton[key] = value;
  Json others = Json::array();
  for (const Json& other : runs)
    if (other.value("mode", "") != "pipelined") others.push_back(other);
  std::vector<RunDocument> out;
  std::set<std::string> seen;
  for (const Json& r : runs) {
    if (r.value("mode", "") != "pipelined") continue;
    const std::string schedule = r.contains("schedule") && r.at("schedule").is_string() ? r.at("schedule").get<std::string>() : "?";
    if (!seen.insert(schedule).second) continue;
    Json doc = skeleton;
    Json only = others;
    only.push_back(r);
    doc["runs"] = std::move(only);
    if (doc.contains("execution") && doc.at("execution").is_object()) doc["execution"]["schedule"] = schedule;
    if (const Json plans = in.document.value("schedulePlans", Json::object()); plans.is_object() && plans.contains(schedule))
      doc["plan"] = plans.at(schedule);
    out.push_back({in.file + " [" + schedule + "]", std::move(doc)});
  }
  return out;
}

namespace {

// Who A, B, ... are, and in which settings each differs from A.
void write_inputs(std::ostream& out, const std::vector<RunDocument>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i)
    out << label(i) << ": " << runs[i].file << " (scenario " << runs[i].document.value("scenario", Json("?")).dump()
        << ")\n";
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const auto diffs = setting_differences(runs[0].document, runs[i].document);
    out << label(i) << " differs from A in: ";
    if (diffs.empty()) out << "nothing recorded (same model, config and execution)";
    for (std::size_t k = 0; k < diffs.size(); ++k) out << (k ? "; " : "") << diffs[k];
    out << "\n";
  }
}

// Modes in the order of the first document; a mode some document lacks shows "-". Documents
// of one run each (`--mode phased` against `--mode pipelined`) line up run against run,
// whatever their modes, under their modes' names joined.
std::vector<std::string> compared_modes(const std::vector<RunDocument>& runs, bool one_each) {
  std::vector<std::string> modes;  // each once: a document of 10,000 runs has two modes, not 10,000 sections
  for (const Json& r : runs[0].document.at("runs")) {
    const std::string mode = r.at("mode").get<std::string>();
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  }
  if (one_each)
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const std::string mode = runs[i].document.at("runs")[0].at("mode").get<std::string>();
      if (modes.front().find(mode) == std::string::npos) modes.front() += " / " + mode;
    }
  return modes;
}

// One mode's table: each figure's value per run, and each run against A.
void write_mode_table(std::ostream& out, const std::string& mode, const std::vector<const Json*>& columns) {
  const std::size_t label_width = 27;
  // Wide enough for the bottleneck's name ("IPU 4 (replica 0, vIPU 1), stage 7" when placed).
  std::size_t column = 17;
  for (const Json* run : columns)
    if (run) column = std::max(column, bottleneck_text(*run).size() + 1);
  out << "\n" << pad(mode, label_width);
  for (std::size_t i = 0; i < columns.size(); ++i) out << pad(label(i), column);
  for (std::size_t i = 1; i < columns.size(); ++i) out << pad(label(i) + "-A", column) << pad(label(i) + "/A", 8);
  out << "\n";
  for (const Figure& f : kFigures) {
    std::vector<std::optional<double>> values;
    bool any = false;
    for (const Json* run : columns) {
      values.push_back(run ? number(*run, f.pointer) : std::nullopt);
      any = any || (values.back() && *values.back() != 0);
    }
    if (!any) continue;  // a figure no run has (or all zero): no row
    out << pad(f.name, label_width);
    for (const auto& v : values) out << pad(v ? value_text(*v, f.kind) : "-", column);
    for (std::size_t i = 1; i < values.size(); ++i) {
      const bool both = values[0] && values[i];
      out << pad(both ? delta_text(*values[0], *values[i], f.kind) : "-", column)
          << pad(both && f.kind != Kind::Share ? ratio_text(*values[0], *values[i]) : "", 8);
    }
    out << "\n";
  }
  out << pad("bottleneck", label_width);
  for (const Json* run : columns) out << pad(run ? bottleneck_text(*run) : "-", column);
  out << "\n" << pad("fits in memory", label_width);
  for (const Json* run : columns) out << pad(run ? fits_text(*run) : "-", column);
  out << "\n";
}

} // namespace

std::string render_comparison(const std::vector<RunDocument>& runs) {
  std::ostringstream out;
  write_inputs(out, runs);
  const bool one_each = std::all_of(runs.begin(), runs.end(),
                                    [](const RunDocument& r) { return r.document.at("runs").size() == 1; });
  const std::vector<std::string> modes = compared_modes(runs, one_each);
  std::vector<RunsByMode> by_mode;
  for (const RunDocument& r : runs) by_mode.emplace_back(r.document, one_each);
  for (const std::string& mode : modes) {
    std::vector<const Json*> columns;
    for (const RunsByMode& r : by_mode) columns.push_back(r(mode));
    write_mode_table(out, mode, columns);
  }
  out << "\nWhat changed:\n";
  for (std::size_t i = 1; i < runs.size(); ++i)
    for (const std::string& mode : modes) {
      const Json* base = by_mode[0](mode);
      const Json* other = by_mode[i](mode);
      if (base && other) explain(out, mode, *base, *other, label(i) + " against A");
    }
  return out.str();
}

} // namespace ipusim
