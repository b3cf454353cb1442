#pragma once
// PopART's and PopTorch's names for ipusim's keys. Where the meaning is the same the name
// is an alias, read as ipusim's key; where it is not, an unknown-key error says what to
// write instead. Any other unknown key or value gets the closest known one ("did you
// mean"). docs/formats.md, "PopART and PopTorch names", lists the table.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/io/field_ranges.hpp"

namespace ipusim {

// The known word closest to `word` (case-insensitive edit distance, at most a third of
// its length and at least 2 allowed), or nothing.
std::optional<std::string> closest_word(const std::string& word, const std::vector<std::string>& known);
// " (did you mean \"x\"?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

// For an unknown key of the object at `pointer`: what PopART/PopTorch users mean by it, or "".
std::string popart_key_hint(Format format, const std::string& pointer, const std::string& key);

// Renames aliases in the object at `pointer` to ipusim's keys; both given is
// json.alias-twice. `renamed` receives ipusim's key -> the alias written.
nlohmann::json resolve_key_aliases(nlohmann::json object, Format format, const std::string& file,
                                   const std::string& pointer, std::map<std::string, std::string>& renamed);

} // namespace ipusim
