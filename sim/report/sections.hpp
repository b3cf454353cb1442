#pragma once
// The sections of a report, one per input: a run document (run_section.cpp), a sweep
// (sweep_section.cpp), a trace (trace_section.cpp) and a generation (generation_section.cpp). Each opens with its findings,
// then its figures and tables.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/report/page.hpp"
#include "sim/report/report.hpp"
#include "sim/report/svg_chart.hpp"

namespace ipusim::report {

void run_section(Builder& b, const Input& in, std::size_t number, const std::string& id);
void sweep_section(Builder& b, const Input& in, std::size_t number, const std::string& id);
void generation_section(Builder& b, const Input& in, std::size_t number, const std::string& id);
// `inputs`: every input, to find the run document a trace's process came from.
void trace_section(Builder& b, const Input& in, std::size_t number, const std::string& id,
                   const std::vector<Input>& inputs);

// The caption lines under a run's figures: scenario, model, config, execution, source.
std::vector<std::string> run_caption(const nlohmann::json& doc, const std::string& source);
// A run input's name in tables: its scenario, else its path.
std::string summary_row_name(const Input& in);

// How many pipeline schedules the pipelined runs among `runs` were simulated under.
std::size_t distinct_schedules(const std::vector<const nlohmann::json*>& runs);
// Bubble (y) against the stash on the virtual IPU holding the most (x), one series per
// schedule (hollow: does not fit), with a dashed line at the stash that fits that IPU's
// SRAM beside the rest of its memory (schedule_chart.cpp); none with fewer than two schedules.
std::optional<chart::LineChart> schedule_memory_chart(const std::string& name,
                                                      const std::vector<const nlohmann::json*>& runs);

} // namespace ipusim::report
