#include "sim/output/csv.hpp"

#include <map>
#include <vector>

namespace ipusim {

using Json = nlohmann::json;

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

// Columns in the order they first appear, with each run's cells.
class Table {
public:
  void set(std::size_t row, const std::string& column, const Json& value) {
    auto [it, fresh] = index_.try_emplace(column, columns_.size());
    if (fresh) columns_.push_back(column);
    if (rows_.size() <= row) rows_.resize(row + 1);
    rows_[row][it->second] = value.is_string() ? csv_field(value.get<std::string>()) : csv_field(value.dump());
  }
  std::string text() const {
    std::string out;
    for (std::size_t c = 0; c < columns_.size(); ++c) out += (c ? "," : "") + csv_field(columns_[c]);
    out += "\n";
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        if (c) out += ",";
        if (const auto cell = row.find(c); cell != row.end()) out += cell->second;
      }
      out += "\n";
    }
    return out;
  }

private:
  std::vector<std::string> columns_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::map<std::size_t, std::string>> rows_;
};

// Arrays whose elements are named by a key of theirs, and what names a column of one.
struct ArrayColumns {
  const char* path;
  const char* key;
  const char* prefix;
};
constexpr ArrayColumns kArrays[] = {{"ipus", "id", "ipu"}, {"memory.ipus", "virtualIpu", "memory.vipu"}, {"links", "name", "links."}};

void flatten(Table& table, std::size_t row, const std::string& path, const Json& value) {
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) flatten(table, row, path.empty() ? key : path + "." + key, item);
    return;
  }
  if (!value.is_array()) {
    table.set(row, path, value);
    return;
  }
  for (const ArrayColumns& a : kArrays) {
    if (path != a.path) continue;
    for (const Json& element : value) {
      if (!element.is_object() || !element.contains(a.key)) continue;
      const Json& name = element.at(a.key);
      const std::string prefix = a.prefix + (name.is_string() ? name.get<std::string>() : name.dump());
      for (const auto& [key, item] : element.items())
        if (key != a.key) flatten(table, row, prefix + "." + key, item);
    }
  }
  // Other arrays (names, memory categories, stashes) stay in the JSON.
}

} // namespace

std::string render_run_csv(const Json& report) {
  Table table;
  std::size_t row = 0;
  for (const Json& run : report.at("runs")) {
    table.set(row, "scenario", report.at("scenario"));
    table.set(row, "mode", run.at("mode"));
    table.set(row, "schedule", run.at("schedule"));
    flatten(table, row, "", run);
    ++row;
  }
  return table.text();
}

} // namespace ipusim
