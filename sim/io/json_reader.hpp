#pragma once
// Strict, location-aware reading of JSON objects. Every value is fetched through an
// ObjectReader that remembers the file and JSON pointer; finish() rejects any key
// the loader did not ask for, so a typo in a config is an error, not a silent default.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/io/input_error.hpp"

namespace ipusim {

using Json = nlohmann::json;

// Parses a whole file; malformed JSON becomes an InputError with line and column.
Json read_json_file(const std::string& path);
Json parse_json_text(const std::string& text, const std::string& origin);

std::string json_type_name(const Json& value);
std::string pointer_child(const std::string& pointer, const std::string& key);
std::string pointer_child(const std::string& pointer, std::size_t index);

class ObjectReader {
public:
  ObjectReader(const Json& object, std::string file, std::string pointer);

  bool has(const std::string& key) const;
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  std::string pointer_of(const std::string& key) const { return pointer_child(pointer_, key); }

  std::string required_string(const std::string& key);
  std::string optional_string(const std::string& key, const std::string& fallback);
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
  // Rejects keys never asked for, naming each with its location.
  void finish() const;

private:
  const Json& object_;
  std::string file_;
  std::string pointer_;
  std::set<std::string> used_;
};

// Value checks shared by the loaders; `what` names the field in the message.
double require_positive(const ObjectReader& reader, const std::string& key, double value);
double require_non_negative(const ObjectReader& reader, const std::string& key, double value);

} // namespace ipusim
