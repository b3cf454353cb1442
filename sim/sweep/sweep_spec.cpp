#include "sim/sweep/sweep_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/scenario_loader.hpp"

namespace ipusim::sweep {

namespace {

constexpr std::size_t kMaxRangeValues = 100000;

void check_path_syntax(const std::string& path, const std::string& file, const std::string& pointer) {
  const auto bad = [&](const std::string& why) {
    throw InputError(file, pointer, "sweep.bad-path", "bad path \"" + path + "\": " + why);
  };
  if (path.empty()) bad("empty");
  if (path.find('=') != std::string::npos) bad("a path cannot contain '='");
  if (path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
    bad("empty segment (paths are dotted: execution.batchesPerStep, config.links.0.latencySeconds)");
  if (static_cast<std::size_t>(std::count(path.begin(), path.end(), '.')) >= static_cast<std::size_t>(kMaxJsonDepth))
    bad("more than " + std::to_string(kMaxJsonDepth) + " segments; no field is that deep");
}

// Rounds to 15 significant digits so that 0.1 + 2 * 0.1 is the 0.3 the user wrote.
double tidy(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", v);
  return std::stod(text);
}

std::vector<Json> range_values(ObjectReader& axis, const std::string& file) {
  ObjectReader r = axis.object("range");
  const Json& raw_from = r.required_value("from");
  const Json& raw_to = r.required_value("to");
  const Json& raw_step = r.required_value("step");
  const double from = r.required_number("from");
  const double to = r.required_number("to");
  const double step = r.required_number("step");
  r.finish();
  if (from > to)
    throw InputError(file, r.pointer(), "sweep.bad-range",
                     "empty range: from " + json_excerpt(raw_from) + " is past to " + json_excerpt(raw_to));
  // Inclusive of `to` up to rounding: 0.1 to 0.5 step 0.1 has five values.
  const double span = (to - from) / step;
  if (span >= static_cast<double>(kMaxRangeValues))
    throw InputError(file, r.pointer(), "sweep.bad-range",
                     "the range has more than " + std::to_string(kMaxRangeValues) + " values");
  const auto count = static_cast<std::size_t>(std::floor(span + 1e-9)) + 1;
  const auto int64 = [](const Json& v) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX);
  };
  const bool integers = int64(raw_from) && int64(raw_to) && int64(raw_step);
  std::vector<Json> values;
  for (std::size_t i = 0; i < count; ++i) {
    std::int64_t offset = 0, value = 0;
    if (integers && !__builtin_mul_overflow(static_cast<std::int64_t>(i), raw_step.get<std::int64_t>(), &offset) &&
        !__builtin_add_overflow(raw_from.get<std::int64_t>(), offset, &value))
      values.emplace_back(value);
    else
      values.emplace_back(tidy(from + static_cast<double>(i) * step));
  }
  return values;
}

// {"path": ..., "values": [...]} or {"path": ..., "range": {...}}: one path's values.
std::vector<Json> single_axis(ObjectReader& r, const std::string& file, std::string& path) {
  path = r.required_string("path");
  check_path_syntax(path, file, r.pointer_of("path"));
  const bool has_values = r.has("values"), has_range = r.has("range");
  if (has_values == has_range)
    throw InputError(file, r.pointer(), "sweep.bad-axis",
                     has_values ? "give \"values\" or \"range\", not both" : "an axis needs \"values\" or \"range\"");
  std::vector<Json> values;
  if (has_range) {
    values = range_values(r, file);
  } else {
    const Json& v = r.required_value("values");
    if (!v.is_array())
      throw InputError(file, r.pointer_of("values"), "json.type", "expected an array, found " + json_type_name(v));
    if (v.empty()) throw InputError(file, r.pointer_of("values"), "sweep.empty-values", "an axis needs at least one value");
    values.assign(v.begin(), v.end());
  }
  r.finish();
  return values;
}

Axis parse_axis(const Json& json, const std::string& file, const std::string& pointer) {
  ObjectReader r(json, file, pointer, Format::Sweep);
  Axis axis;
  axis.pointer = pointer;
  if (r.has("zip")) {
    const Json& zip = r.required_value("zip");
    const std::string zip_pointer = r.pointer_of("zip");
    if (!zip.is_array()) throw InputError(file, zip_pointer, "json.type", "expected an array, found " + json_type_name(zip));
    if (zip.empty()) throw InputError(file, zip_pointer, "sweep.bad-axis", "a zip needs at least one member");
    std::vector<std::vector<Json>> columns;
    for (std::size_t k = 0; k < zip.size(); ++k) {
      const std::string member = pointer_child(zip_pointer, k);
      ObjectReader m(zip[k], file, member, Format::Sweep);
      std::string path;
      columns.push_back(single_axis(m, file, path));
      if (columns.back().size() != columns.front().size())
        throw InputError(file, member, "sweep.zip-length",
                         "zipped axes move together and need equal lengths: " + std::to_string(columns.back().size()) +
                             " values here, " + std::to_string(columns.front().size()) + " in " +
                             pointer_child(zip_pointer, std::size_t{0}));
      axis.paths.push_back(path);
      axis.path_pointers.push_back(pointer_child(member, "path"));
    }
    r.finish();
    for (std::size_t i = 0; i < columns.front().size(); ++i) {
      std::vector<Json> step;
      for (const auto& column : columns) step.push_back(column[i]);
      axis.steps.push_back(std::move(step));
    }
  } else {
    std::string path;
    for (Json& v : single_axis(r, file, path)) axis.steps.push_back({std::move(v)});
    axis.paths.push_back(path);
    axis.path_pointers.push_back(pointer_child(pointer, "path"));
  }
  // A repeated value would make two identical points sharing one id (and one file).
  std::set<std::string> seen;
  for (std::size_t i = 0; i < axis.steps.size(); ++i)
    if (!seen.insert(Json(axis.steps[i]).dump()).second)
      throw InputError(file, pointer, "sweep.duplicate-value",
                       "value " + std::to_string(i) + " (" +
                           (axis.steps[i].size() == 1 ? axis.steps[i][0].dump() : Json(axis.steps[i]).dump()) +
                           ") repeats an earlier one");
  return axis;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

} // namespace

std::vector<std::string> Spec::axis_paths() const {
  std::vector<std::string> out;
  for (const Axis& a : axes) out.insert(out.end(), a.paths.begin(), a.paths.end());
  return out;
}

Spec parse_sweep(const Json& document, const std::string& file) {
  ObjectReader root(document, file, "", Format::Sweep);
  Spec spec;
  spec.file = file;
  spec.document = document;
  spec.name = root.optional_string("name", std::filesystem::path(file).stem().string());
  if (!valid_name(spec.name))
    throw root.error(root.has("name") ? "name" : "", "sweep.bad-name",
                     "the sweep name \"" + spec.name +
                         "\" names its output folder: use letters, digits, '.', '_' and '-' only");
  spec.description = root.optional_string("description", "");
  spec.scenario = root.required_string("scenario");
  std::filesystem::path scenario(spec.scenario);
  if (scenario.is_relative()) scenario = std::filesystem::path(file).parent_path() / scenario;
  spec.scenario_path = scenario.lexically_normal().string();
  spec.modes = root.optional_string("modes", "");
  if (root.has("modes") && !modes_named(spec.modes))
    throw root.error("modes", "sweep.bad-modes",
                     "unknown modes \"" + spec.modes + "\" (expected both, sharded, pipelined or phased)");

  std::set<std::string> seen;
  if (const Json* set = root.maybe_value("set")) {
    if (!set->is_object())
      throw root.error("set", "json.type", "expected an object of path: value, found " + json_type_name(*set));
    for (auto it = set->begin(); it != set->end(); ++it) {
      const std::string pointer = pointer_child(root.pointer_of("set"), it.key());
      check_path_syntax(it.key(), file, pointer);
      seen.insert(it.key());
      spec.set.push_back({it.key(), it.value()});
    }
  }
  if (const Json* axes = root.maybe_value("axes")) {
    if (!axes->is_array()) throw root.error("axes", "json.type", "expected an array, found " + json_type_name(*axes));
    for (std::size_t i = 0; i < axes->size(); ++i) {
      Axis axis = parse_axis((*axes)[i], file, pointer_child(root.pointer_of("axes"), i));
      for (std::size_t k = 0; k < axis.paths.size(); ++k)
        if (!seen.insert(axis.paths[k]).second)
          throw InputError(file, axis.path_pointers[k], "sweep.duplicate-path",
                           "\"" + axis.paths[k] + "\" is already set by \"set\" or an earlier axis");
      spec.axes.push_back(std::move(axis));
    }
  }
  root.finish();
  double total = 1;
  for (const Axis& a : spec.axes) total *= static_cast<double>(a.steps.size());
  if (total > static_cast<double>(kMaxPoints))
    throw root.error("axes", "sweep.too-many-points",
                     "the axes make " + Json(total).dump() + " points; at most " + std::to_string(kMaxPoints));
  return spec;
}

Spec load_sweep(const std::string& file, const CommandLine& command_line) {
  const Json document = read_json_file(file);
  Spec spec = parse_sweep(document, file);
  if (command_line.empty()) return spec;
  Json merged = document;
  for (const Override& o : command_line.set) {
    for (const Axis& axis : spec.axes)
      for (std::size_t k = 0; k < axis.paths.size(); ++k)
        if (axis.paths[k] == o.path)
          throw InputError("--set", o.path, "sweep.duplicate-path",
                           "\"" + o.path + "\" is an axis of the sweep (" + file + " at " + axis.path_pointers[k] +
                               "); a fixed value would replace its values: drop the --set or the axis");
    merged["set"][o.path] = o.value;
  }
  if (!command_line.modes.empty()) merged["modes"] = command_line.modes;
  spec = parse_sweep(merged, file);
  spec.command_line_set = command_line.set;
  return spec;
}

std::pair<std::string, std::string> first_difference(const Spec& stored, const Spec& now) {
  const auto quoted = [](const std::string& modes) { return modes.empty() ? std::string("the scenario's") : "\"" + modes + "\""; };
  if (stored.modes != now.modes)
    return {"/modes", "the sweep in this folder ran with modes " + quoted(stored.modes) + ", this one with " +
                          quoted(now.modes) + " (--mode, or the sweep file's \"modes\")"};
  std::map<std::string, Json> before, after;
  for (const Override& o : stored.set) before[o.path] = o.value;
  for (const Override& o : now.set) after[o.path] = o.value;
  for (auto b = before.begin(), a = after.begin(); b != before.end() || a != after.end();) {
    const bool only_before = a == after.end() || (b != before.end() && b->first < a->first);
    const bool only_after = b == before.end() || (a != after.end() && a->first < b->first);
    const std::string path = only_after ? a->first : b->first;
    const std::string pointer = pointer_child("/set", path);
    if (only_before)
      return {pointer, "the sweep in this folder ran with " + path + "=" + b->second.dump() + ", this one without it"};
    if (only_after)
      return {"/set", "this sweep sets " + path + "=" + a->second.dump() + " (--set, or the sweep file's \"set\"), "
                      "the sweep in this folder did not"};
    if (a->second != b->second)
      return {pointer, "the sweep in this folder ran with " + path + "=" + b->second.dump() + ", this one with " +
                           path + "=" + a->second.dump() + " (--set, or the sweep file's \"set\")"};
    ++a;
    ++b;
  }
  return {"", ""};
}

std::size_t point_count(const Spec& spec) {
  std::size_t n = 1;
  for (const Axis& a : spec.axes) n *= a.steps.size();
  return n;
}

std::string fnv1a64_hex(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // FNV-1a's last bytes barely reach the high bits; murmur3's finalizer spreads them,
  // so ids differing in one value do not share a long prefix.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string point_identity(const Spec& spec, const std::vector<Override>& axes) {
  std::string text = "ipusim sweep point v1\nscenario=" + spec.scenario + "\nmodes=" + spec.modes + "\n";
  for (const auto& o : spec.set) text += o.path + "=" + o.value.dump() + "\n";
  for (const auto& o : axes) text += o.path + "=" + o.value.dump() + "\n";
  return text;
}

std::vector<Point> expand_points(const Spec& spec) {
  const std::size_t total = point_count(spec);
  std::vector<Point> points;
  points.reserve(total);
  for (std::size_t index = 0; index < total; ++index) {
    Point p;
    p.index = index;
    // Mixed radix, last axis fastest: peel the digits off from the last axis.
    std::vector<std::size_t> digit(spec.axes.size());
    std::size_t rest = index;
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      digit[a] = rest % spec.axes[a].steps.size();
      rest /= spec.axes[a].steps.size();
    }
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
      for (std::size_t k = 0; k < spec.axes[a].paths.size(); ++k)
        p.axes.push_back({spec.axes[a].paths[k], spec.axes[a].steps[digit[a]][k]});
    p.id = fnv1a64_hex(point_identity(spec, p.axes));
    points.push_back(std::move(p));
  }
  return points;
}

std::string definition_hash(const std::vector<Point>& points) {
  std::string text = "ipusim sweep v1\n";
  for (const Point& p : points) text += p.id + "\n";
  return fnv1a64_hex(text);
}

std::vector<std::string> run_arguments(const Spec& spec, const Point& point) {
  std::vector<std::string> args = {"run", spec.scenario_path, "--json"};
  if (!spec.modes.empty()) {
    args.push_back("--mode");
    args.push_back(spec.modes);
  }
  for (const auto* list : {&spec.set, &point.axes})
    for (const Override& o : *list) {
      args.push_back("--set");
      args.push_back(o.path + "=" + o.value.dump());
    }
  return args;
}

void check_paths(const Spec& spec) {
  const auto probe = [&](const std::vector<Override>& overrides) -> std::optional<InputError> {
    try {
      load_scenario(spec.scenario_path, overrides);
    } catch (const InputError& e) {
      return e;
    }
    return std::nullopt;
  };
  // Failures about where a value goes, not about the value.
  const auto about_path = [](const InputError& e) {
    return e.rule() == "json.unknown-key" || e.rule().rfind("override.", 0) == 0;
  };
  std::vector<Override> file_set;  // the sweep file's own: a failure there is the file's
  for (const Override& o : spec.set)
    if (std::none_of(spec.command_line_set.begin(), spec.command_line_set.end(),
                     [&](const Override& c) { return c.path == o.path; }))
      file_set.push_back(o);
  if (auto e = probe(file_set); e && about_path(*e))
    throw InputError(spec.file, "/set", "sweep.bad-path", std::string("the fixed overrides do not apply: ") + e->what());
  if (auto e = probe(spec.set); e && about_path(*e)) throw *e;  // names the --set, as `ipusim run` does
  for (const Axis& axis : spec.axes)
    for (std::size_t k = 0; k < axis.paths.size(); ++k) {
      std::vector<Override> overrides = spec.set;
      overrides.push_back({axis.paths[k], axis.steps.front()[k]});
      if (auto e = probe(overrides); e && about_path(*e))
        throw InputError(spec.file, axis.path_pointers[k], "sweep.bad-path",
                         "\"" + axis.paths[k] + "\" does not apply to the scenario: " + e->what());
    }
}

} // namespace ipusim::sweep
