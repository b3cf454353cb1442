#pragma once
// Strict, location-aware reading of JSON objects. Every value is fetched through an
// ObjectReader that remembers the file and JSON pointer; finish() rejects any key
// the loader did not ask for, so a typo in a config is an error, not a silent default.
// Every number is checked against its field's physical range (field_ranges.hpp).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/io/field_ranges.hpp"
#include "sim/io/input_error.hpp"

namespace ipusim {

using Json = nlohmann::json;

// Deepest nesting of objects and arrays a document may have (the formats need 6); deeper
// is json.too-deep, before any recursive copy or print could exhaust the stack.
constexpr int kMaxJsonDepth = 64;

// Parses a whole file; malformed JSON becomes an InputError with line, column and the
// pointer of the value being read (json.syntax, json.too-deep, json.number-overflow,
// json.duplicate-key). File problems are file.* errors located at the file itself.
Json read_json_file(const std::string& path);
// The same for a file named inside another document: file errors name `named_in` at `pointer`.
Json read_json_file(const std::string& path, const std::string& named_in, const std::string& pointer);
// From now on, read_json_file parses each path once and hands out copies of that document
// (a sweep: its points, forked from the process, then read no file). Files edited after
// the first read are not seen again. Only from a single-threaded process.
void remember_parsed_files();
// read_json_file's document with the file's identity (what an "extends" chain compares).
struct ParsedFile {
  Json document;
  std::uint64_t device = 0, inode = 0;
};
ParsedFile read_parsed_file(const std::string& path, const std::string& named_in, const std::string& pointer);
Json parse_json_text(const std::string& text, const std::string& origin);
// The same, offering each element as the parser finishes it to `keep` (nlohmann's
// parser-callback arguments): an element for which it returns false is left out of the
// document, so a large array can be consumed one element at a time.
using ParseFilter = std::function<bool(int depth, Json::parse_event_t event, Json& parsed)>;
Json parse_json_text(const std::string& text, const std::string& origin, const ParseFilter& keep);

std::string json_type_name(const Json& value);
// A value for a message: compact, at most ~60 characters, invalid UTF-8 replaced.
std::string json_excerpt(const Json& value);
std::string pointer_child(const std::string& pointer, const std::string& key);
std::string pointer_child(const std::string& pointer, std::size_t index);

class ObjectReader {
public:
  ObjectReader(const Json& object, std::string file, std::string pointer, Format format);

  bool has(const std::string& key) const;
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  Format format() const { return format_; }
  std::string pointer_of(const std::string& key) const { return pointer_child(pointer_, key); }

  std::string required_string(const std::string& key);
  std::string optional_string(const std::string& key, const std::string& fallback);
  // Numbers: checked against the field's range (a field without one is a logic_error).
  std::int64_t required_int(const std::string& key);
  std::int64_t optional_int(const std::string& key, std::int64_t fallback);
  std::optional<std::int64_t> maybe_int(const std::string& key);
  double required_number(const std::string& key);
  double optional_number(const std::string& key, double fallback);
  std::optional<double> maybe_number(const std::string& key);
  bool optional_bool(const std::string& key, bool fallback);
  std::vector<std::string> string_list(const std::string& key, bool required);
  std::vector<std::int64_t> int_list(const std::string& key, bool required);

  // Raw access for nested objects and arrays; marks the key as used.
  const Json& required_value(const std::string& key);
  const Json* maybe_value(const std::string& key);
  ObjectReader object(const std::string& key);

  InputError error(const std::string& key, const std::string& rule, const std::string& message) const;
  // Rejects keys never asked for, naming each with its location and the closest key
  // asked for ("did you mean ...", aliases.hpp for PopART's and PopTorch's names).
  void finish() const;

private:
  double checked(const std::string& pointer, double value, const Json& written) const;

  const Json& object_;
  std::string file_;
  std::string pointer_;
  Format format_;
  std::set<std::string> used_;
  std::set<std::string> asked_;  // every key looked up, present or not: the keys this object may have
};

} // namespace ipusim
