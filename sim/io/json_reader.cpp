#include "sim/io/json_reader.hpp"

#include <cmath>
#include <map>
#include <memory>

#include "sim/io/aliases.hpp"
#include "sim/io/input_file.hpp"

namespace ipusim {

namespace {

// Follows the parser (a JSON pointer to the value being read) so that a key given twice
// in one object, a document nested too deep, a number too large for a double and a
// syntax error can all be reported where they are. nlohmann keeps the last of two equal
// keys silently, which would make a typo'd duplicate a silently wrong number.
class ParseTracker {
public:
  explicit ParseTracker(std::string origin) : origin_(std::move(origin)) {}

  bool on_event(Json::parse_event_t event, Json& parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
        throw InputError(origin_, pointer(), "json.too-deep",
                         "objects and arrays nest more than " + std::to_string(kMaxJsonDepth) +
                             " deep here; no ipusim format needs more than a few levels");
      frames_.push_back({event == Json::parse_event_t::array_start, 0, {}, {}});
      break;
    case Json::parse_event_t::key: {
      Frame& f = frames_.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second)
        throw InputError(origin_, pointer(), "json.duplicate-key",
                         "key \"" + f.key + "\" appears twice in the same object; give it once");
      break;
    }
    case Json::parse_event_t::object_end:
    case Json::parse_event_t::array_end:
      frames_.pop_back();
      element_done();
      break;
    case Json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

  // The value being read: the current key of the innermost object, or the next index of the innermost array.
  std::string pointer() const {
    std::string out;
    for (const Frame& f : frames_) out = f.array ? pointer_child(out, f.index) : pointer_child(out, f.key);
    return out.empty() ? "/" : out;
  }

private:
  struct Frame {
    bool array;
    std::size_t index;  // arrays: elements finished so far
    std::string key;    // objects: the key being read
    std::set<std::string> keys;
  };

  void element_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }

  std::string origin_;
  std::vector<Frame> frames_;
};

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ...";
// keep the part after the bracket.
std::string without_prefix(const std::string& what) {
  const auto start = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && start != std::string::npos ? what.substr(start + 2) : what;
}

} // namespace

Json parse_json_text(const std::string& text, const std::string& origin) {
  return parse_json_text(text, origin, [](int, Json::parse_event_t, Json&) { return true; });
}

Json parse_json_text(const std::string& text, const std::string& origin, const ParseFilter& keep) {
  ParseTracker tracker(origin);
  try {
    return Json::parse(text, [&tracker, &keep](int depth, Json::parse_event_t event, Json& parsed) {
      return tracker.on_event(event, parsed) && keep(depth, event, parsed);
    });
  } catch (const Json::parse_error& e) {
    throw InputError(origin, tracker.pointer(), "json.syntax", "malformed JSON: " + without_prefix(e.what()));
  } catch (const Json::out_of_range& e) {
    // The only range error the parser raises: a number beyond double (1e999).
    throw InputError(origin, tracker.pointer(), "json.number-overflow",
                     without_prefix(e.what()) + "; a number must fit a double (at most about 1.8e308)");
  }
}

Json read_json_file(const std::string& path) { return read_json_file(path, path, "/"); }

namespace {
std::unique_ptr<std::map<std::string, ParsedFile>> parsed_files;  // set by remember_parsed_files
} // namespace

void remember_parsed_files() {
  if (!parsed_files) parsed_files = std::make_unique<std::map<std::string, ParsedFile>>();
}

ParsedFile read_parsed_file(const std::string& path, const std::string& named_in, const std::string& pointer) {
  if (parsed_files) {
    const auto known = parsed_files->find(path);
    if (known != parsed_files->end()) return known->second;
  }
  InputFile file = read_input_file(path, named_in, pointer);
  ParsedFile parsed{parse_json_text(file.text, path), file.device, file.inode};
  if (parsed_files) parsed_files->emplace(path, parsed);
  return parsed;
}

Json read_json_file(const std::string& path, const std::string& named_in, const std::string& pointer) {
  return read_parsed_file(path, named_in, pointer).document;
}

std::string json_type_name(const Json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

std::string json_excerpt(const Json& value) {
  constexpr std::size_t kLimit = 60;
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kLimit) text = text.substr(0, kLimit) + "...";
  return text;
}

std::string pointer_child(const std::string& pointer, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
  }
  return (pointer == "/" ? "" : pointer) + "/" + escaped;
}

std::string pointer_child(const std::string& pointer, std::size_t index) {
  return (pointer == "/" ? "" : pointer) + "/" + std::to_string(index);
}

ObjectReader::ObjectReader(const Json& object, std::string file, std::string pointer, Format format)
    : object_(object), file_(std::move(file)), pointer_(std::move(pointer)), format_(format) {
  if (!object_.is_object())
    throw InputError(file_, pointer_, "json.type", "expected an object, found " + json_type_name(object_));
}

bool ObjectReader::has(const std::string& key) const { return object_.contains(key); }

InputError ObjectReader::error(const std::string& key, const std::string& rule, const std::string& message) const {
  return InputError(file_, key.empty() ? pointer_ : pointer_of(key), rule, message);
}

const Json& ObjectReader::required_value(const std::string& key) {
  asked_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end()) throw InputError(file_, pointer_, "json.missing-key", "missing required key \"" + key + "\"");
  used_.insert(key);
  return *it;
}

const Json* ObjectReader::maybe_value(const std::string& key) {
  asked_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end()) return nullptr;
  used_.insert(key);
  return &*it;
}

ObjectReader ObjectReader::object(const std::string& key) {
  return ObjectReader(required_value(key), file_, pointer_of(key), format_);
}

namespace {

[[noreturn]] void wrong_type(const std::string& file, const std::string& pointer, const char* expected,
                             const Json& value) {
  throw InputError(file, pointer, "json.type",
                   std::string("expected ") + expected + ", found " + json_type_name(value) + " " + json_excerpt(value));
}

std::int64_t as_int(const std::string& file, const std::string& pointer, const Json& value) {
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw InputError(file, pointer, "json.integer-range",
                     "the integer " + value.dump() + " is beyond the 64-bit range ipusim counts in");
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d)) throw InputError(file, pointer, "json.not-finite", "expected a finite integer");
    if (d == std::floor(d)) {
      // Beyond 2^53 a double no longer holds every integer: the value would not be the one written.
      if (std::fabs(d) > 9007199254740992.0)
        throw InputError(file, pointer, "json.integer-range",
                         "the integer " + value.dump() + " is written as a number beyond 2^53; write it as a JSON integer");
      return static_cast<std::int64_t>(d);
    }
  }
  wrong_type(file, pointer, "an integer", value);
}

double as_number(const std::string& file, const std::string& pointer, const Json& value) {
  if (!value.is_number()) wrong_type(file, pointer, "a number", value);
  const double d = value.get<double>();
  if (!std::isfinite(d)) throw InputError(file, pointer, "json.not-finite", "expected a finite number");
  return d;
}

} // namespace

double ObjectReader::checked(const std::string& pointer, double value, const Json& written) const {
  const FieldRange* range = find_field_range(format_, pointer);
  if (range == nullptr)
    throw std::logic_error("no physical range for the " + format_name(format_) + " field " + pointer +
                           " (add a line to field_ranges() in sim/io/field_ranges.cpp)");
  check_field_range(*range, value, json_excerpt(written), file_, pointer);
  return value;
}

std::string ObjectReader::required_string(const std::string& key) {
  const Json& v = required_value(key);
  if (!v.is_string()) wrong_type(file_, pointer_of(key), "a string", v);
  return v.get<std::string>();
}

std::string ObjectReader::optional_string(const std::string& key, const std::string& fallback) {
  return has(key) ? required_string(key) : fallback;
}

std::int64_t ObjectReader::required_int(const std::string& key) {
  const Json& raw = required_value(key);
  const std::int64_t v = as_int(file_, pointer_of(key), raw);
  checked(pointer_of(key), static_cast<double>(v), raw);
  return v;
}

std::int64_t ObjectReader::optional_int(const std::string& key, std::int64_t fallback) {
  return has(key) ? required_int(key) : fallback;
}

std::optional<std::int64_t> ObjectReader::maybe_int(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return required_int(key);
}

double ObjectReader::required_number(const std::string& key) {
  const Json& raw = required_value(key);
  return checked(pointer_of(key), as_number(file_, pointer_of(key), raw), raw);
}

double ObjectReader::optional_number(const std::string& key, double fallback) {
  return has(key) ? required_number(key) : fallback;
}

std::optional<double> ObjectReader::maybe_number(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return required_number(key);
}

bool ObjectReader::optional_bool(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const Json& v = required_value(key);
  if (!v.is_boolean()) wrong_type(file_, pointer_of(key), "true or false", v);
  return v.get<bool>();
}

std::vector<std::string> ObjectReader::string_list(const std::string& key, bool required) {
  std::vector<std::string> out;
  if (!required && !has(key)) return out;
  const Json& v = required_value(key);
  if (!v.is_array()) wrong_type(file_, pointer_of(key), "an array of strings", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) wrong_type(file_, pointer_child(pointer_of(key), i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::vector<std::int64_t> ObjectReader::int_list(const std::string& key, bool required) {
  std::vector<std::int64_t> out;
  if (!required && !has(key)) return out;
  const Json& v = required_value(key);
  if (!v.is_array()) wrong_type(file_, pointer_of(key), "an array of integers", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = pointer_child(pointer_of(key), i);
    if (!v[i].is_number_integer()) wrong_type(file_, at, "an integer", v[i]);
    out.push_back(as_int(file_, at, v[i]));
    checked(at, static_cast<double>(out.back()), v[i]);
  }
  return out;
}

void ObjectReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (used_.count(it.key())) continue;
    std::string message = "unknown key \"" + it.key() + "\"";
    const std::string hint = popart_key_hint(format_, pointer_, it.key());
    if (!hint.empty()) message += " (PopART/PopTorch option: " + hint + ")";
    else message += did_you_mean(it.key(), std::vector<std::string>(asked_.begin(), asked_.end()));
    throw InputError(file_, pointer_of(it.key()), "json.unknown-key", message);
  }
}

} // namespace ipusim
