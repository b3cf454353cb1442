#pragma once
// Published results to validate against: a list of Graphcore's published throughputs,
// each with the configuration it was measured in and the scenario that reproduces that
// configuration (scenarios/validation/published.json). `ipusim validation` simulates
// every entry and compares.
#include <optional>
#include <string>
#include <vector>

#include "sim/io/overrides.hpp"
#include "sim/simulate/simulation.hpp"

namespace ipusim {

struct PublishedResult {
  std::string id;
  std::string workload;       // "BERT-Large pre-training phase 1, SL128"
  std::string system;         // "Bow Pod16"
  std::string framework;      // "PopART"
  std::string sdk;            // "SDK 3.1"
  double published = 0;       // throughput
  std::string unit;           // "sequences/s", "images/s"
  std::string source;         // where the figure is published
  std::string configuration;  // the configuration it was measured in, and where that is given
  std::string scenario;       // path of the scenario, resolved against the list's folder
};

// The ratio of two entries' throughputs (a scaling check, POD64 over POD16).
struct PublishedRatio {
  std::string id;
  std::string numerator, denominator;  // entry ids
};

struct PublishedList {
  std::string file;
  std::string description;
  std::vector<PublishedResult> entries;
  std::vector<PublishedRatio> ratios;
};

PublishedList load_published_list(const std::string& path);

// A step split into what grows with the micro-batches and what does not (docs/validation.md,
// "Per micro-batch or per step"): ipusim's own split, from a second run at twice the
// micro-batches per step (step = per_step + micro_batches x per_micro_batch, exact for the
// engine's steady state), and the time per micro-batch the published figure implies if
// ipusim's per-step part is right.
struct StepSplit {
  double micro_batches = 0;              // per step and replica
  double per_micro_batch_s = 0;
  double per_step_s = 0;                 // fill, flush, update, collectives, the host's turn
  double published_step_s = 0;           // the step at the published throughput
  double implied_per_micro_batch_s = 0;  // (published step - per_step) / micro_batches
};

struct ValidationRow {
  const PublishedResult* entry = nullptr;
  double predicted = 0;       // throughput in the entry's unit (samples x sequencesPerSample per second)
  double error = 0;           // (predicted - published) / published
  double step_time_s = 0;
  bool fits = true;           // the configuration fits in memory as ipusim estimates it
  std::string failure;        // when the entry could not be simulated: why
  bool bad_input = false;     // the failure is the entry's scenario, not ipusim
  std::optional<StepSplit> split;  // with decompose
};

struct RatioRow {
  const PublishedRatio* ratio = nullptr;
  double published = 0, predicted = 0, error = 0;
  bool available = false;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<RatioRow> ratios;
  double mean_absolute_error = 0;
  int worst = -1;  // index into rows of the largest |error|
  int simulated = 0;

  const ValidationRow* worst_row() const {
    return worst < 0 ? nullptr : &rows[static_cast<std::size_t>(worst)];
  }
};

// `only`: entry ids to run (empty: all; an id not in the list is an InputError). Each entry's
// scenario is loaded with `overrides` applied (--set execution.costModel=tile compares models).
// `decompose`: also split each step (a second run per entry). selected_entries, then
// evaluate_entry for each, then summarise_validation.
ValidationReport run_validation(const PublishedList& list, const std::vector<std::string>& only,
                                const std::vector<Override>& overrides = {}, bool decompose = false);
// The entries `only` names, in the list's order (all when empty); an unknown id is an InputError.
std::vector<const PublishedResult*> selected_entries(const PublishedList& list, const std::vector<std::string>& only);
// One entry simulated (its failure, if any, in the row); `options` as for simulate.
ValidationRow evaluate_entry(const PublishedResult& entry, const std::vector<Override>& overrides, bool decompose,
                             const SimulateOptions& options = {});
// The report of the rows of selected_entries: the mean absolute error, the worst, the ratios.
ValidationReport summarise_validation(const PublishedList& list, const std::vector<std::string>& only,
                                      std::vector<ValidationRow> rows);

std::string render_validation_table(const PublishedList& list, const ValidationReport& report);
std::string render_validation_markdown(const PublishedList& list, const ValidationReport& report);
std::string render_validation_json(const PublishedList& list, const ValidationReport& report);

} // namespace ipusim
