#pragma once
// Every field of a config and of a scenario, declared once (as Ramulator 2.0 declares an
// implementation's parameters): its JSON pointer, type, whether it is required, its default,
// its physical range when it is a number, its unit and what it means. The default is read
// from the struct the loader fills (its member initialisers), so the loader and this table
// cannot disagree; the range is the one the reader checks (field_ranges() takes the config
// and scenario lines from here); `ipusim describe` prints the table and docs/formats.md's
// field tables are its output (tests hold the page to it, and hold the table to what the
// loaders read).
#include <optional>
#include <string>
#include <vector>

#include "sim/io/field_ranges.hpp"

namespace ipusim {

// A number's physical range: as FieldRange, without the pointer it belongs to.
struct NumberRange {
  double min, max;
  Lower lower;
  const char* unit;  // "Hz", "B/s", "s", "" for counts
  const char* rule;  // nullptr: value.not-positive / value.negative / value.too-small / value.too-large
  const char* why;   // what the bounds stand for
};

struct Parameter {
  Format format;
  std::string pointer;       // "/execution/microBatchSize"; "*" stands for any one segment
  std::string type;          // "integer", "number", "boolean", "string", "object", or the values allowed
  bool required = false;
  std::string default_text;  // as the docs write it; empty when required or when absence means "none"
  std::string meaning;
  std::optional<NumberRange> range;  // numbers only
};

// The sections a table is printed for, in the docs' order: "" (the top level), "/ipu", ...
struct ParameterSection {
  Format format;
  std::string pointer;
  std::string title;  // what the docs' heading calls it
};

const std::vector<Parameter>& parameters();
const std::vector<ParameterSection>& parameter_sections();

// The row declared for a field at `pointer` (real indices and names), or nullptr.
const Parameter* find_parameter(Format format, const std::string& pointer);

// One section's fields as a Markdown table (key relative to the section, type with its range
// and unit, required, default, meaning), as docs/formats.md shows it.
std::string parameters_markdown(const ParameterSection& section);
// Every section: a "## config /ipu" heading and its table, config first.
std::string all_parameters_markdown();

} // namespace ipusim
