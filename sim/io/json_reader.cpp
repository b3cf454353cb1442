#include "sim/io/json_reader.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ipusim {

namespace {

// Tracks where the parser is (a JSON pointer) so a key given twice in one object can be
// reported; nlohmann keeps the last value silently, which would make a typo'd duplicate
// a silently wrong number.
class DuplicateKeyCheck {
public:
  explicit DuplicateKeyCheck(std::string origin) : origin_(std::move(origin)) {}

  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
    case Json::parse_event_t::object_start: frames_.push_back({false, 0, {}, {}}); break;
    case Json::parse_event_t::array_start: frames_.push_back({true, 0, {}, {}}); break;
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

  std::string pointer() const {
    std::string out;
    for (const Frame& f : frames_) out = f.array ? pointer_child(out, f.index) : pointer_child(out, f.key);
    return out;
  }

  std::string origin_;
  std::vector<Frame> frames_;
};

} // namespace

Json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return Json::parse(text, DuplicateKeyCheck(origin));
  } catch (const Json::parse_error& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ...";
    // keep the part from "parse error".
    std::string what = e.what();
    const auto start = what.find("] ");
    throw InputError(origin, "", "json.syntax",
                     "malformed JSON: " + (what.rfind("[json.exception", 0) == 0 && start != std::string::npos
                                               ? what.substr(start + 2)
                                               : what));
  }
}

Json read_json_file(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw InputError(path, "", "file.unreadable", "is a directory, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "file.unreadable", "cannot open the file for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path);
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

std::string pointer_child(const std::string& pointer, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
  }
  return pointer + "/" + escaped;
}

std::string pointer_child(const std::string& pointer, std::size_t index) {
  return pointer + "/" + std::to_string(index);
}

ObjectReader::ObjectReader(const Json& object, std::string file, std::string pointer)
    : object_(object), file_(std::move(file)), pointer_(std::move(pointer)) {
  if (!object_.is_object())
    throw InputError(file_, pointer_.empty() ? "/" : pointer_, "json.type",
                     "expected an object, found " + json_type_name(object_));
}

bool ObjectReader::has(const std::string& key) const { return object_.contains(key); }

InputError ObjectReader::error(const std::string& key, const std::string& rule, const std::string& message) const {
  return InputError(file_, key.empty() ? pointer_ : pointer_of(key), rule, message);
}

const Json& ObjectReader::required_value(const std::string& key) {
  auto it = object_.find(key);
  if (it == object_.end()) throw InputError(file_, pointer_.empty() ? "/" : pointer_, "json.missing-key",
                                            "missing required key \"" + key + "\"");
  used_.insert(key);
  return *it;
}

const Json* ObjectReader::maybe_value(const std::string& key) {
  auto it = object_.find(key);
  if (it == object_.end()) return nullptr;
  used_.insert(key);
  return &*it;
}

ObjectReader ObjectReader::object(const std::string& key) {
  return ObjectReader(required_value(key), file_, pointer_of(key));
}

namespace {
[[noreturn]] void wrong_type(const ObjectReader& reader, const std::string& key, const char* expected,
                             const Json& value) {
  throw reader.error(key, "json.type", std::string("expected ") + expected + ", found " + json_type_name(value) +
                                           " " + value.dump());
}

std::int64_t as_int(const ObjectReader& reader, const std::string& key, const Json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<std::int64_t>(d);
  }
  wrong_type(reader, key, "an integer", value);
}

double as_number(const ObjectReader& reader, const std::string& key, const Json& value) {
  if (!value.is_number()) wrong_type(reader, key, "a number", value);
  const double d = value.get<double>();
  if (!std::isfinite(d)) throw reader.error(key, "json.type", "expected a finite number");
  return d;
}
} // namespace

std::string ObjectReader::required_string(const std::string& key) {
  const Json& v = required_value(key);
  if (!v.is_string()) wrong_type(*this, key, "a string", v);
  return v.get<std::string>();
}

std::string ObjectReader::optional_string(const std::string& key, const std::string& fallback) {
  return has(key) ? required_string(key) : fallback;
}

std::int64_t ObjectReader::required_int(const std::string& key) { return as_int(*this, key, required_value(key)); }

std::int64_t ObjectReader::optional_int(const std::string& key, std::int64_t fallback) {
  return has(key) ? required_int(key) : fallback;
}

std::optional<std::int64_t> ObjectReader::maybe_int(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return required_int(key);
}

double ObjectReader::required_number(const std::string& key) { return as_number(*this, key, required_value(key)); }

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
  if (!v.is_boolean()) wrong_type(*this, key, "true or false", v);
  return v.get<bool>();
}

std::vector<std::string> ObjectReader::string_list(const std::string& key, bool required) {
  std::vector<std::string> out;
  if (!required && !has(key)) return out;
  const Json& v = required_value(key);
  if (!v.is_array()) wrong_type(*this, key, "an array of strings", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw InputError(file_, pointer_child(pointer_of(key), i), "json.type",
                       "expected a string, found " + json_type_name(v[i]) + " " + v[i].dump());
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::vector<std::int64_t> ObjectReader::int_list(const std::string& key, bool required) {
  std::vector<std::int64_t> out;
  if (!required && !has(key)) return out;
  const Json& v = required_value(key);
  if (!v.is_array()) wrong_type(*this, key, "an array of integers", v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer())
      throw InputError(file_, pointer_child(pointer_of(key), i), "json.type",
                       "expected an integer, found " + json_type_name(v[i]) + " " + v[i].dump());
    out.push_back(v[i].get<std::int64_t>());
  }
  return out;
}

void ObjectReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!used_.count(it.key()))
      throw InputError(file_, pointer_of(it.key()), "json.unknown-key", "unknown key \"" + it.key() + "\"");
  }
}

double require_positive(const ObjectReader& reader, const std::string& key, double value) {
  if (!(value > 0)) throw reader.error(key, "value.not-positive", "must be greater than zero, got " + Json(value).dump());
  return value;
}

double require_non_negative(const ObjectReader& reader, const std::string& key, double value) {
  if (value < 0) throw reader.error(key, "value.negative", "must not be negative, got " + Json(value).dump());
  return value;
}

} // namespace ipusim
