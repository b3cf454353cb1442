#pragma once
// The sections of a report, one per input: a run document (run_section.cpp), a sweep
// (sweep_section.cpp) and a trace (trace_section.cpp). Each opens with its findings,
// then its figures and tables.
#include <cstddef>
#include <string>
#include <vector>

#include "sim/report/page.hpp"
#include "sim/report/report.hpp"

namespace ipusim::report {

void run_section(Builder& b, const Input& in, std::size_t number, const std::string& id);
void sweep_section(Builder& b, const Input& in, std::size_t number, const std::string& id);
// `inputs`: every input, to find the run document a trace's process came from.
void trace_section(Builder& b, const Input& in, std::size_t number, const std::string& id,
                   const std::vector<Input>& inputs);

// The caption lines under a run's figures: scenario, model, config, execution, source.
std::vector<std::string> run_caption(const nlohmann::json& doc, const std::string& source);
// A run input's name in tables: its scenario, else its path.
std::string summary_row_name(const Input& in);

} // namespace ipusim::report
