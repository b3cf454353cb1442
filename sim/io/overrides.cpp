#include "sim/io/overrides.hpp"

#include <algorithm>

#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"

namespace ipusim {

Override parse_override(const std::string& argument) {
  const auto eq = argument.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set", argument, "override.syntax", "expected path=value, got \"" + argument + "\"");
  Override o;
  o.path = argument.substr(0, eq);
  const std::string text = argument.substr(eq + 1);
  // Values end up in JSON documents, which hold UTF-8 only.
  if (!is_valid_utf8(argument))
    throw InputError("--set", o.path, "override.syntax", "the argument is not valid UTF-8 text");
  try {
    o.value = parse_json_text(text, "--set");
  } catch (const InputError& e) {
    if (e.rule() != "json.syntax") throw InputError("--set", o.path, e.rule(), e.message());
    o.value = text;  // not JSON: a plain string
  }
  return o;
}

std::vector<Override> parse_overrides(const std::vector<std::string>& arguments) {
  std::vector<Override> out;
  for (const auto& s : arguments) out.push_back(parse_override(s));
  return out;
}

void apply_override(nlohmann::json& document, const std::string& path, const nlohmann::json& value,
                    const std::string& full_path) {
  nlohmann::json* node = &document;
  std::size_t begin = 0;
  if (static_cast<std::size_t>(std::count(path.begin(), path.end(), '.')) >= static_cast<std::size_t>(kMaxJsonDepth))
    throw InputError("--set", full_path, "override.bad-path",
                     "the path has more than " + std::to_string(kMaxJsonDepth) + " segments; no field is that deep");
  while (true) {
    const auto dot = path.find('.', begin);
    const std::string part = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (part.empty()) throw InputError("--set", full_path, "override.syntax", "empty segment in the path");
    nlohmann::json* next = nullptr;
    if (node->is_array()) {
      std::size_t index = 0;
      try {
        std::size_t used = 0;
        index = std::stoul(part, &used);
        if (used != part.size()) throw std::invalid_argument(part);
      } catch (const std::exception&) {
        throw InputError("--set", full_path, "override.bad-path", "\"" + part + "\" must index an array");
      }
      if (index >= node->size())
        throw InputError("--set", full_path, "override.bad-path",
                         "index " + part + " is past the end of an array of " + std::to_string(node->size()));
      next = &(*node)[index];
    } else if (node->is_object() || node->is_null()) {
      next = &(*node)[part];
    } else {
      throw InputError("--set", full_path, "override.bad-path",
                       "\"" + part + "\" reaches into a value that is neither an object nor an array");
    }
    if (dot == std::string::npos) {
      *next = value;
      return;
    }
    node = next;
    begin = dot + 1;
  }
}

} // namespace ipusim
