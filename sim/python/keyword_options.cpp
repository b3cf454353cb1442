#include "sim/python/keyword_options.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <type_traits>
#include <vector>

#include "sim/io/input_error.hpp"

namespace ipusim::python {

namespace {

namespace py = pybind11;
using service::OptionRange;

// A keyword's flag: micro_batch -> --micro-batch.
std::string flag_of(std::string keyword) {
  for (char& c : keyword)
    if (c == '_') c = '-';
  return "--" + keyword;
}

// A number as the CLI's parser (CLI11 2.1) reads one: C's syntax (strtoll with base 0, so 0x10
// too; strtold), the whole text, and for an integer, one the type holds.
template <class T>
bool parse_number(const std::string& text, T& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  if constexpr (std::is_integral_v<T>) {
    const long long value = std::strtoll(text.c_str(), &end, 0);
    out = static_cast<T>(value);
    return end == text.c_str() + text.size() && static_cast<long long>(out) == value;
  } else {
    out = static_cast<T>(std::strtold(text.c_str(), &end));
    return end == text.c_str() + text.size();
  }
}

std::string joined(const std::vector<std::string>& texts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < texts.size(); ++i) out += (i > 0 ? separator : "") + texts[i];
  return out;
}

// A list flag's text cut as the CLI's parser cuts it: at commas, empty pieces dropped; "[a,b]" as
// a,b; a text without a comma (an empty one too) is one piece.
void add_pieces(std::string text, std::vector<std::string>& pieces) {
  const bool bracketed = !text.empty() && text.front() == '[' && text.back() == ']';
  if (bracketed) text = text.substr(1, text.size() - 2);
  if (!bracketed && text.find(',') == std::string::npos) {
    pieces.push_back(text);
    return;
  }
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::string piece = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (bracketed && !piece.empty()) add_pieces(piece, pieces);  // "[[2]]" is 2 too
    else if (!piece.empty()) pieces.push_back(piece);
    if (comma == std::string::npos) return;
    start = comma + 1;
  }
}

// One call's keywords, read as the CLI reads its flags. The CLI checks its flags in the order it
// defines them, so each call reads them in that order: the first bad one is the one it names.
class KeywordReader {
public:
  KeywordReader(std::string command, const py::dict& keywords) : command_(std::move(command)), keywords_(keywords) {}

  // A flag without a value: ipusim/__init__.py passes True only.
  void flag(const char* keyword, bool& field) {
    if (const py::object value = given(keyword)) field = value.cast<bool>();
  }

  // A repeatable flag whose values are taken whole, commas and all (--set).
  void each(const char* keyword, std::vector<std::string>& field) {
    if (const py::object value = given(keyword))
      for (const py::handle item : value) field.push_back(item.cast<std::string>());
  }

  // A value taken as text; `choices`, when given, the texts it may be.
  void text(const char* keyword, std::string& field, const std::vector<std::string>* choices = nullptr) {
    const std::optional<std::string> value = text_of(keyword);
    if (!value) return;
    if (choices != nullptr && std::find(choices->begin(), choices->end(), *value) == choices->end())
      refuse(keyword, *value + " not in {" + joined(*choices, ",") + "}");
    field = *value;
  }

  // A list flag's texts.
  void texts(const char* keyword, std::vector<std::string>& field) {
    if (const std::optional<std::vector<std::string>> pieces = pieces_of(keyword)) field = *pieces;
  }

  // A number checked against `range` (as an R: a batch size is checked as a real number).
  template <class T, class R>
  void number(const char* keyword, T& field, const OptionRange<R>& range) {
    const std::optional<std::string> value = text_of(keyword);
    if (!value) return;
    check_range(keyword, *value, range);
    field = convert<T>(keyword, std::vector<std::string>{*value});
  }

  // A list flag's numbers, each checked against `range` when there is one.
  template <class T>
  void numbers(const char* keyword, std::vector<T>& field, const std::optional<OptionRange<T>>& range) {
    const std::optional<std::vector<std::string>> pieces = pieces_of(keyword);
    if (!pieces) return;
    if (range)
      for (const std::string& piece : *pieces) check_range(keyword, piece, *range);
    std::vector<T> values;
    for (std::size_t i = 0; i < pieces->size(); ++i) values.push_back(convert<T>(keyword, *pieces, i));
    field = std::move(values);
  }

  // ipusim/__init__.py refuses a keyword of no flag before it calls; one that reached here anyway
  // is refused rather than ignored.
  void check_all_read() const {
    for (const auto& item : keywords_) {
      const std::string keyword = item.first.cast<std::string>();
      if (!read_.count(keyword))
        throw InputError(command_, "/" + keyword, "python.unknown-keyword",
                         command_ + " takes no keyword \"" + keyword + "\"");
    }
  }

private:
  py::object given(const char* keyword) {
    read_.insert(keyword);
    return keywords_.contains(keyword) ? py::object(keywords_[keyword]) : py::object();
  }

  // The flag's text: a str as it is, a number as Python writes it, a list's items joined by commas.
  std::optional<std::string> text_of(const char* keyword) {
    const py::object value = given(keyword);
    if (!value) return std::nullopt;
    const auto as_text = [](py::handle v) {
      return py::isinstance<py::str>(v) ? v.cast<std::string>() : py::str(v).cast<std::string>();
    };
    if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) return as_text(value);
    std::vector<std::string> items;
    for (const py::handle item : value) items.push_back(as_text(item));
    return joined(items, ",");
  }

  // A list flag's pieces; none (nullopt) when its text has none (",": as if not given).
  std::optional<std::vector<std::string>> pieces_of(const char* keyword) {
    const std::optional<std::string> text = text_of(keyword);
    if (!text) return std::nullopt;
    std::vector<std::string> pieces;
    add_pieces(*text, pieces);
    if (pieces.empty()) return std::nullopt;
    return pieces;
  }

  template <class R>
  void check_range(const char* keyword, const std::string& text, const OptionRange<R>& range) const {
    R value{};
    if (!parse_number(text, value) || value < range.min || value > range.max)
      refuse(keyword,
             "Value " + text + " not in range " + std::to_string(range.min) + " to " + std::to_string(range.max));
  }

  // Piece `i` of `pieces` as a T (an empty piece is 0); the message names them all.
  template <class T>
  T convert(const char* keyword, const std::vector<std::string>& pieces, std::size_t i = 0) const {
    T value{};
    if (!pieces[i].empty() && !parse_number(pieces[i], value))
      throw InputError(command_, std::string("/") + keyword, "cli.bad-value",
                       "Could not convert: " + flag_of(keyword) + " = " + joined(pieces, ","));
    return value;
  }

  [[noreturn]] void refuse(const char* keyword, const std::string& why) const {
    throw InputError(command_, std::string("/") + keyword, "cli.bad-value", flag_of(keyword) + ": " + why);
  }

  std::string command_;
  const py::dict& keywords_;
  std::set<std::string> read_;
};

} // namespace

// In the order sim/cli/plan_command.cpp defines the flags.
service::PlanOptions plan_options(const std::string& scenario, const py::dict& keywords, bool json) {
  service::PlanOptions o;
  o.scenario = scenario;
  o.json = json;
  KeywordReader k("plan", keywords);
  k.text("config", o.config);
  k.numbers("ipus", o.ipus, std::optional{service::kPipelineIpusRange});
  k.numbers("replicas", o.replicas, std::optional{service::kReplicasRange});
  k.text("global_batch", o.global_batch);
  k.numbers("micro_batch", o.micro_batches, std::optional{service::kMicroBatchRange});
  k.numbers("gradient_accumulation", o.gradient_accumulation, std::optional{service::kMicroBatchRange});
  k.texts("schedule", o.schedules);
  k.texts("recomputation", o.recomputation);
  k.texts("state", o.state);
  k.texts("rts", o.rts);
  k.texts("weight_update", o.weight_update);
  k.texts("heads_on", o.heads_on);
  k.numbers<double>("amp", o.amps, std::nullopt);
  k.text("layer_free_ipus", o.layer_free, &service::kYesNo);
  k.numbers("tensor_parallel", o.tensor_parallel, std::optional{service::kTensorParallelRange});
  k.text("att_ffn", o.att_ffn, &service::kYesNo);
  k.text("objective", o.objective, &service::kObjectives);
  k.number("top", o.top, service::kTopRange);
  k.number("front_within", o.front_within, service::kFrontWithinRange);
  k.number("time_limit", o.time_limit, service::kTimeLimitRange);
  k.each("set", o.sets);
  k.flag("explain_layers", o.explain_layers);
  k.flag("quiet", o.quiet);
  k.text("write", o.write);
  k.flag("force", o.force);
  k.check_all_read();
  return o;
}

// In the order sim/cli/validate_command.cpp defines the flags.
service::ValidateOptions validate_options(const std::string& path, const py::dict& keywords) {
  service::ValidateOptions o;
  o.path = path;
  KeywordReader k("validate", keywords);
  k.number("batch_size", o.batch_size, service::kBatchSizeRange);
  k.text("dtype", o.dtype, &service::kDtypes);
  k.each("set", o.sets);
  k.check_all_read();
  return o;
}

} // namespace ipusim::python
