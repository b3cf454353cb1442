#pragma once
// The physical range of every number an input file may hold, one line per field.
// ObjectReader checks each number it reads against this table, so a field without a
// line cannot be read (std::logic_error: an internal fault caught by the tests), and
// docs/formats.md shows the same lines ("Physical ranges"), generated from this table by
// field_ranges_markdown() (`ipusim list --ranges`; a test holds the page to it). To add a
// config or scenario field: its row in parameters() (sim/io/parameters.cpp); a model or sweep
// number: a line in field_ranges.cpp. Then paste the new table.
#include <optional>
#include <string>
#include <vector>

namespace ipusim {

enum class Format { Model, Config, Scenario, Sweep };
std::string format_name(Format format);

// How a range starts: [min, ..., (min, ..., or "0, or [min, ...": zero allowed, but no
// positive value below min (a latency of 5e-324 s makes SimGrid's solver abort).
enum class Lower { Closed, Open, ZeroOrClosed };

struct FieldRange {
  Format format;
  const char* pointer;  // JSON pointer of the field; "*" stands for any one segment (an index or a name)
  double min, max;      // max inclusive; min as `lower` says
  Lower lower;
  const char* unit;     // for messages and docs: "Hz", "B/s", "s", "" for counts
  const char* rule;     // nullptr: value.not-positive / value.negative / value.too-small / value.too-large
  const char* why;      // what the bounds stand for
};

const std::vector<FieldRange>& field_ranges();

// Whether `pointer` (real indices and names) is an instance of `pattern`, where "*" stands for any one segment.
bool pointer_pattern_matches(const std::string& pattern, const std::string& pointer);

// The line for a field at `pointer` (with real indices and names), or nullptr.
const FieldRange* find_field_range(Format format, const std::string& pointer);

// "[1, 1e5]", "0 or [1e-12, 1]", "(0, 1e300]", "[1, 2^31-1]": the range as the docs write it.
std::string range_text(const FieldRange& range);
// The whole table as docs/formats.md shows it ("Physical ranges") and `ipusim list --ranges`
// prints it: a Markdown row per line of field_ranges(), in its order.
std::string field_ranges_markdown();

// Whether `value` lies inside `range`.
bool in_field_range(const FieldRange& range, double value);

// Throws InputError(file, pointer, rule) when `value` lies outside `range`; `written` is
// the value as the file wrote it, for the message.
void check_field_range(const FieldRange& range, double value, const std::string& written, const std::string& file,
                       const std::string& pointer);

} // namespace ipusim
