#pragma once
// `--set path=value` and sweep axes address a field by one dotted path. Paths starting
// with "model." or "config." reach into the files the scenario names; the rest address
// the scenario itself. Array elements are addressed by index ("config.links.0.latencySeconds").
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ipusim {

struct Override {
  std::string path;       // dotted, as the user wrote it
  nlohmann::json value;   // parsed as JSON when it is valid JSON, else taken as a string
  bool operator==(const Override&) const = default;
};

// Parses "a.b.c=value"; throws InputError(origin = "--set") on a malformed argument.
Override parse_override(const std::string& argument);
// Each of several --set arguments, in order.
std::vector<Override> parse_overrides(const std::vector<std::string>& arguments);

// Sets the field at `path` (dotted, relative to `document`), creating object keys as needed.
void apply_override(nlohmann::json& document, const std::string& path, const nlohmann::json& value,
                    const std::string& full_path);

} // namespace ipusim
