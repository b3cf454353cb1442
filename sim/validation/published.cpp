#include "sim/validation/published.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/base/units.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

namespace {

// A published figure is a throughput: positive and finite (the list is not one of the
// formats of field_ranges.hpp, so its one number is checked here).
double published_figure(ObjectReader& r) {
  const Json& value = r.required_value("published");
  if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
    throw r.error("published", "value.not-positive",
                  "got " + json_excerpt(value) + "; a published throughput is a positive number");
  return value.get<double>();
}

} // namespace

PublishedList load_published_list(const std::string& path) {
  const Json doc = read_json_file(path);
  if (!doc.is_object()) throw InputError(path, "", "json.type", "a published-results list is a JSON object");
  ObjectReader root(doc, path, "", Format::Scenario);
  PublishedList list;
  list.file = path;
  list.description = root.optional_string("description", "");
  root.optional_string("name", "");
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::map<std::string, bool> ids;
  const Json& entries = root.required_value("entries");
  if (!entries.is_array() || entries.empty())
    throw root.error("entries", "json.type", "\"entries\" is a non-empty array of published results");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "/entries/" + std::to_string(i);
    if (!entries[i].is_object()) throw InputError(path, where, "json.type", "an entry is an object");
    ObjectReader r(entries[i], path, where, Format::Scenario);
    PublishedResult e;
    e.id = r.required_string("id");
    if (!ids.emplace(e.id, true).second)
      throw r.error("id", "validation.duplicate-id", "the id \"" + e.id + "\" is used twice; ids name entries");
    e.workload = r.required_string("workload");
    e.system = r.required_string("system");
    e.framework = r.required_string("framework");
    e.sdk = r.required_string("sdk");
    e.published = published_figure(r);
    e.unit = r.required_string("unit");
    e.source = r.required_string("source");
    e.configuration = r.required_string("configuration");
    std::filesystem::path scenario(r.required_string("scenario"));
    if (scenario.is_relative()) scenario = folder / scenario;
    e.scenario = scenario.lexically_normal().string();
    if (!std::filesystem::exists(e.scenario))
      throw r.error("scenario", "file.missing", "the scenario \"" + e.scenario + "\" does not exist");
    r.finish();
    list.entries.push_back(e);
  }
  if (const Json* ratios = root.maybe_value("ratios")) {
    if (!ratios->is_array()) throw root.error("ratios", "json.type", "\"ratios\" is an array");
    for (std::size_t i = 0; i < ratios->size(); ++i) {
      const std::string where = "/ratios/" + std::to_string(i);
      if (!(*ratios)[i].is_object()) throw InputError(path, where, "json.type", "a ratio is an object");
      ObjectReader r((*ratios)[i], path, where, Format::Scenario);
      PublishedRatio q;
      q.id = r.required_string("id");
      q.numerator = r.required_string("numerator");
      q.denominator = r.required_string("denominator");
      for (const char* key : {"numerator", "denominator"}) {
        const std::string& name = std::string(key) == "numerator" ? q.numerator : q.denominator;
        if (!ids.count(name))
          throw r.error(key, "validation.unknown-entry", "no entry has the id \"" + name + "\"");
      }
      r.finish();
      list.ratios.push_back(q);
    }
  }
  root.finish();
  return list;
}

namespace {

// ipusim's split of `sc`'s step (`m`, its run) from a run at twice the micro-batches per step.
StepSplit split_step(const Scenario& sc, const RunMetrics& m, const std::vector<Override>& overrides,
                     const PublishedResult& e, const SimulateOptions& options) {
  std::vector<Override> doubled = overrides;
  if (sc.execution.training)
    doubled.push_back({"execution.gradientAccumulation", 2 * sc.execution.gradient_accumulation});
  else
    doubled.push_back({"execution.batchesPerStep", 2 * sc.execution.batches_per_step});
  const Scenario twice = load_scenario(e.scenario, doubled);
  const Simulation run_twice = simulate(twice, {twice.execution.modes.back()}, options);
  const RunMetrics& m2 = run_twice.runs.back().metrics;
  StepSplit s;
  s.micro_batches = static_cast<double>(m.micro_batches);
  s.per_micro_batch_s = (m2.step_time_s - m.step_time_s) / static_cast<double>(m2.micro_batches - m.micro_batches);
  s.per_step_s = m.step_time_s - s.micro_batches * s.per_micro_batch_s;
  s.published_step_s = m.step_time_s * m.throughput_sequences_per_s / e.published;
  s.implied_per_micro_batch_s = (s.published_step_s - s.per_step_s) / s.micro_batches;
  return s;
}

} // namespace

std::vector<const PublishedResult*> selected_entries(const PublishedList& list, const std::vector<std::string>& only) {
  for (const std::string& id : only)
    if (std::none_of(list.entries.begin(), list.entries.end(), [&](const PublishedResult& e) { return e.id == id; }))
      throw InputError("--only", "", "validation.unknown-entry",
                       "no entry \"" + id + "\" in " + list.file + "; use one of the ids `ipusim validation` lists");
  std::vector<const PublishedResult*> entries;
  for (const PublishedResult& e : list.entries)
    if (only.empty() || std::find(only.begin(), only.end(), e.id) != only.end()) entries.push_back(&e);
  return entries;
}

ValidationRow evaluate_entry(const PublishedResult& e, const std::vector<Override>& overrides, bool decompose,
                             const SimulateOptions& options) {
  ValidationRow row;
  row.entry = &e;
  try {
    const Scenario sc = load_scenario(e.scenario, overrides);
    // A scenario of both modes is validated by its pipelined run.
    const Simulation sim = simulate(sc, {sc.execution.modes.back()}, options);
    const RunMetrics& m = sim.runs.back().metrics;
    row.predicted = m.throughput_sequences_per_s;
    row.step_time_s = m.step_time_s;
    row.fits = m.memory.fits;
    row.error = (row.predicted - e.published) / e.published;
    if (decompose) row.split = split_step(sc, m, overrides, e, options);
  } catch (const InputError& error) {
    row.failure = std::string("bad input: ") + error.what();
    row.bad_input = true;
  } catch (const std::exception& error) {
    row.failure = error.what();
  }
  return row;
}

ValidationReport run_validation(const PublishedList& list, const std::vector<std::string>& only,
                                const std::vector<Override>& overrides, bool decompose) {
  std::vector<ValidationRow> rows;
  for (const PublishedResult* e : selected_entries(list, only)) rows.push_back(evaluate_entry(*e, overrides, decompose));
  return summarise_validation(list, only, std::move(rows));
}

ValidationReport summarise_validation(const PublishedList& list, const std::vector<std::string>& only,
                                      std::vector<ValidationRow> rows) {
  ValidationReport report;
  report.rows = std::move(rows);
  for (const ValidationRow& row : report.rows)
    if (row.failure.empty()) ++report.simulated;
  double sum = 0;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const ValidationRow& row = report.rows[i];
    if (!row.failure.empty()) continue;
    sum += std::fabs(row.error);
    if (report.worst < 0 || std::fabs(row.error) > std::fabs(report.rows[static_cast<std::size_t>(report.worst)].error))
      report.worst = static_cast<int>(i);
  }
  if (report.simulated > 0) report.mean_absolute_error = sum / report.simulated;
  const auto selected = [&](const std::string& id) {
    return only.empty() || std::find(only.begin(), only.end(), id) != only.end();
  };
  for (const PublishedRatio& q : list.ratios) {
    if (!selected(q.numerator) || !selected(q.denominator)) continue;
    RatioRow rr;
    rr.ratio = &q;
    const ValidationRow *num = nullptr, *den = nullptr;
    for (const ValidationRow& row : report.rows) {
      if (row.entry->id == q.numerator && row.failure.empty()) num = &row;
      if (row.entry->id == q.denominator && row.failure.empty()) den = &row;
    }
    if (num && den) {
      rr.available = true;
      rr.published = num->entry->published / den->entry->published;
      rr.predicted = num->predicted / den->predicted;
      rr.error = (rr.predicted - rr.published) / rr.published;
    }
    report.ratios.push_back(rr);
  }
  return report;
}

namespace {

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string signed_percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + format_fixed(100 * fraction, 1) + " %";
}

std::string whole(double value) { return format_fixed(value, 0); }

} // namespace

namespace {

std::string signed_seconds(double s) { return (s < 0 ? "-" : "+") + format_seconds(std::fabs(s)); }

// The split of every entry that has one, as Markdown.
void split_markdown(std::ostringstream& out, const ValidationReport& report) {
  if (std::none_of(report.rows.begin(), report.rows.end(), [](const ValidationRow& r) { return r.split.has_value(); }))
    return;
  out << "\n| entry | micro-batches per step | ipusim per micro-batch | ipusim per step | share per micro-batch "
         "| published step | published - ipusim | implied per micro-batch | implied / ipusim |\n";
  out << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ValidationRow& row : report.rows) {
    if (!row.split) continue;
    const StepSplit& s = *row.split;
    out << "| " << row.entry->id << " | " << whole(s.micro_batches) << " | " << format_seconds(s.per_micro_batch_s)
        << " | " << format_seconds(s.per_step_s) << " | "
        << format_fixed(100 * s.micro_batches * s.per_micro_batch_s / row.step_time_s, 1) << " % | "
        << format_seconds(s.published_step_s) << " | " << signed_seconds(s.published_step_s - row.step_time_s) << " | "
        << format_seconds(s.implied_per_micro_batch_s) << " | "
        << format_fixed(s.implied_per_micro_batch_s / s.per_micro_batch_s, 3) << "x |\n";
  }
}

} // namespace

std::string render_validation_table(const PublishedList& list, const ValidationReport& report) {
  std::ostringstream out;
  out << "Published throughput against ipusim (" << list.file << ")\n\n";
  out << pad("entry", 40) << pad("system", 12) << pad("published", 12) << pad("predicted", 12) << "error\n";
  for (const ValidationRow& row : report.rows) {
    out << pad(row.entry->id, 40) << pad(row.entry->system, 12) << pad(whole(row.entry->published), 12);
    if (!row.failure.empty()) {
      out << "failed: " << row.failure << "\n";
      continue;
    }
    out << pad(whole(row.predicted), 12) << signed_percent(row.error) << (row.fits ? "" : "  (does not fit)") << "\n";
  }
  if (!report.ratios.empty()) {
    out << "\n" << pad("scaling", 40) << pad("", 12) << pad("published", 12) << pad("predicted", 12) << "error\n";
    for (const RatioRow& r : report.ratios) {
      out << pad(r.ratio->id, 52);
      if (!r.available) {
        out << "- (an entry was not simulated)\n";
        continue;
      }
      out << pad(format_fixed(r.published, 3) + "x", 12) << pad(format_fixed(r.predicted, 3) + "x", 12)
          << signed_percent(r.error) << "\n";
    }
  }
  split_markdown(out, report);
  out << "\n" << report.simulated << " of " << report.rows.size() << " entries simulated; mean absolute error "
      << format_fixed(100 * report.mean_absolute_error, 1) << " %";
  if (const ValidationRow* worst = report.worst_row())
    out << ", worst " << signed_percent(worst->error) << " (" << worst->entry->id << ")";
  out << "\n";
  return out.str();
}


std::string render_validation_markdown(const PublishedList& list, const ValidationReport& report) {
  std::ostringstream out;
  out << "| entry | workload | system | framework, SDK | published | predicted | error |\n";
  out << "| --- | --- | --- | --- | ---: | ---: | ---: |\n";
  for (const ValidationRow& row : report.rows) {
    const PublishedResult& e = *row.entry;
    out << "| " << e.id << " | " << e.workload << " | " << e.system << " | " << e.framework << ", " << e.sdk << " | "
        << whole(e.published) << " " << e.unit << " | ";
    if (!row.failure.empty()) out << "failed | |\n";
    else out << whole(row.predicted) << " | " << signed_percent(row.error) << (row.fits ? "" : " (OOM)") << " |\n";
  }
  if (!report.ratios.empty()) {
    out << "\n| scaling | published | predicted | error |\n| --- | ---: | ---: | ---: |\n";
    for (const RatioRow& r : report.ratios)
      if (r.available)
        out << "| " << r.ratio->id << " | " << format_fixed(r.published, 3) << "x | " << format_fixed(r.predicted, 3)
            << "x | " << signed_percent(r.error) << " |\n";
  }
  out << "\nMean absolute error " << format_fixed(100 * report.mean_absolute_error, 1) << " % over "
      << report.simulated << " entries";
  if (const ValidationRow* worst = report.worst_row())
    out << "; worst " << signed_percent(worst->error) << " (" << worst->entry->id << ")";
  out << ". Produced by `build/ipusim validation " << list.file << " --markdown`.\n";
  split_markdown(out, report);
  return out.str();
}

std::string render_validation_json(const PublishedList& list, const ValidationReport& report) {
  Json rows = Json::array();
  for (const ValidationRow& row : report.rows) {
    const PublishedResult& e = *row.entry;
    Json r = {{"id", e.id}, {"workload", e.workload}, {"system", e.system}, {"framework", e.framework},
              {"sdk", e.sdk}, {"published", e.published}, {"unit", e.unit}, {"source", e.source},
              {"configuration", e.configuration}, {"scenario", e.scenario}};
    if (row.failure.empty()) {
      r["predicted"] = row.predicted;
      r["error"] = row.error;
      r["stepTimeSeconds"] = row.step_time_s;
      r["fits"] = row.fits;
      if (row.split)
        r["split"] = {{"microBatches", row.split->micro_batches},
                      {"perMicroBatchSeconds", row.split->per_micro_batch_s},
                      {"perStepSeconds", row.split->per_step_s},
                      {"publishedStepSeconds", row.split->published_step_s},
                      {"impliedPerMicroBatchSeconds", row.split->implied_per_micro_batch_s}};
    } else {
      r["failure"] = row.failure;
    }
    rows.push_back(r);
  }
  Json ratios = Json::array();
  for (const RatioRow& r : report.ratios) {
    Json q = {{"id", r.ratio->id}, {"numerator", r.ratio->numerator}, {"denominator", r.ratio->denominator}};
    if (r.available) {
      q["published"] = r.published;
      q["predicted"] = r.predicted;
      q["error"] = r.error;
    }
    ratios.push_back(q);
  }
  Json doc = {{"list", list.file}, {"entries", rows}, {"ratios", ratios}, {"simulated", report.simulated},
              {"meanAbsoluteError", report.mean_absolute_error}};
  if (const ValidationRow* worst = report.worst_row()) doc["worst"] = {{"id", worst->entry->id}, {"error", worst->error}};
  return doc.dump(2) + "\n";
}

} // namespace ipusim
