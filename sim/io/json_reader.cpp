#include "sim/io/json_reader.hpp"

#include <cmath>
#include <map>
#include <memory>

#include "sim/io/aliases.hpp"
#include "sim/io/input_file.hpp"

namespace ipusim {

namespace {

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ...";
// keep the part after the bracket.
std::string without_prefix(const std::string& what) {
  const auto start = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && start != std::string::npos ? what.substr(start + 2) : what;
}

// Builds the document from nlohmann's SAX events, in time linear in the text: nlohmann's
// own callback parser rescans the parent after every finished child (quadratic in the
// number of siblings: a 2 MB model took minutes). It also follows the parser (a JSON
// pointer to the value being read) so that a key given twice in one object, a document
// nested too deep, a number too large for a double and a syntax error are all reported
// where they are. nlohmann keeps the last of two equal keys silently, which would make a
// typo'd duplicate a silently wrong number.
class DocumentBuilder {
public:
  DocumentBuilder(std::string origin, const ParseFilter* keep) : origin_(std::move(origin)), keep_(keep) {}

  Json take() { return std::move(root_); }

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool v) { return value(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return value(Json(v)); }
  bool string(Json::string_t& v) { return value(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return value(Json(Json::binary_t(std::move(v)))); }

  bool start_object(std::size_t) { return open(Json::object(), Json::parse_event_t::object_start); }
  bool start_array(std::size_t) { return open(Json::array(), Json::parse_event_t::array_start); }
  bool end_object() { return close(Json::parse_event_t::object_end); }
  bool end_array() { return close(Json::parse_event_t::array_end); }

  bool key(Json::string_t& key) {
    Frame& f = frames_.back();
    if (f.left_out.count(key) == 0) {
      // One lookup: the slot is made here, and a key already there is a duplicate.
      const auto made = f.node->get_ref<Json::object_t&>().emplace(std::move(key), Json());
      if (made.second) {
        f.key = &made.first->first;
        f.slot = &made.first->second;
        if (keep_) {
          Json k(*f.key);
          (*keep_)(depth(), Json::parse_event_t::key, k);
        }
        return true;
      }
      f.key = &made.first->first;
    } else {
      f.key = &*f.left_out.find(key);
    }
    throw InputError(origin_, pointer(), "json.duplicate-key",
                     "key \"" + *f.key + "\" appears twice in the same object; give it once");
  }

  template <class Exception> bool parse_error(std::size_t, const std::string&, const Exception& e) {
    // The only range error the parser raises (id 406): a number beyond double (1e999).
    if (e.id == 406)
      throw InputError(origin_, pointer(), "json.number-overflow",
                       without_prefix(e.what()) + "; a number must fit a double (at most about 1.8e308)");
    throw InputError(origin_, pointer(), "json.syntax", "malformed JSON: " + without_prefix(e.what()));
  }

  // The value being read: the current key of the innermost object, or the next index of the innermost array.
  std::string pointer() const {
    std::string out;
    for (const Frame& f : frames_)
      out = f.node->is_array() ? pointer_child(out, f.elements_done)
                                 : pointer_child(out, f.key ? *f.key : std::string());
    return out.empty() ? "/" : out;
  }

private:
  struct Frame {
    Json* node;
    const std::string* key = nullptr;   // objects: the key being read (in the object, or in left_out)
    Json* slot = nullptr;               // objects: its value's place
    std::set<std::string> left_out;     // objects: keys whose values the filter left out (still duplicates)
    std::size_t elements_done = 0;      // arrays: elements finished, left out or not (the next one's index)
  };

  int depth() const { return static_cast<int>(frames_.size()); }

  // Where the next value goes: the root, the current key's slot, or a new array element.
  Json& place(Json&& v) {
    if (frames_.empty()) return root_ = std::move(v);
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return f.node->back();
    }
    return *f.slot = std::move(v);
  }

  // The value just placed is finished: offered to the filter, and taken out again when it declines.
  bool finished(Json::parse_event_t event, Json& v) {
    if (!frames_.empty() && frames_.back().node->is_array()) ++frames_.back().elements_done;
    if (!keep_ || (*keep_)(depth(), event, v) || frames_.empty()) return true;
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->erase(f.node->size() - 1);
    } else {
      std::string key = *f.key;
      f.node->erase(key);
      f.key = &*f.left_out.insert(std::move(key)).first;
    }
    return true;
  }

  bool value(Json&& v) { return finished(Json::parse_event_t::value, place(std::move(v))); }

  bool open(Json&& empty, Json::parse_event_t event) {
    if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw InputError(origin_, pointer(), "json.too-deep",
                       "objects and arrays nest more than " + std::to_string(kMaxJsonDepth) +
                           " deep here; no ipusim format needs more than a few levels");
    if (keep_) {
      Json start;
      (*keep_)(depth(), event, start);
    }
    Json& node = place(std::move(empty));
    frames_.push_back({&node, nullptr, nullptr, {}, 0});
    return true;
  }

  bool close(Json::parse_event_t event) {
    Json& node = *frames_.back().node;
    frames_.pop_back();
    return finished(event, node);
  }

  std::string origin_;
  const ParseFilter* keep_;
  Json root_;
  std::vector<Frame> frames_;
};

} // namespace

namespace {
Json parse_with(const std::string& text, const std::string& origin, const ParseFilter* keep) {
  DocumentBuilder builder(origin, keep);
  Json::sax_parse(text, &builder);
  return builder.take();
}
} // namespace

Json parse_json_text(const std::string& text, const std::string& origin) { return parse_with(text, origin, nullptr); }

Json parse_json_text(const std::string& text, const std::string& origin, const ParseFilter& keep) {
  return parse_with(text, origin, &keep);
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
  if (!in_field_range(*range, value)) check_field_range(*range, value, json_excerpt(written), file_, pointer);
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
    if (!hint.empty()) message += " (PopART/PopTorch/PopXL/Megatron option: " + hint + ")";
    else message += did_you_mean(it.key(), std::vector<std::string>(asked_.begin(), asked_.end()));
    throw InputError(file_, pointer_of(it.key()), "json.unknown-key", message);
  }
}

} // namespace ipusim
