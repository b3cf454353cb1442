#pragma once
// The findings that open each section of a report: sentences computed from the data
// (which mode, split or point wins and by how much, why, from the attribution of the
// step time in the run documents, and which points do not fit in memory).
#include <map>
#include <string>
#include <vector>

#include "sim/report/report.hpp"
#include "sim/report/run_fields.hpp"

namespace ipusim::report {

// One run document: the faster mode and by how much, where its IPU time goes, the
// slower mode's largest loss, the bottleneck and the most idle IPU, memory.
std::vector<std::string> run_findings(const Json& doc);

// Several run documents (named): where pipelining wins and where it does not, the
// largest and smallest speed-up, and which runs do not fit in memory.
std::vector<std::string> summary_findings(const std::vector<std::pair<std::string, const Json*>>& docs);

// A sweep: how many points ran, failed or do not fit; the fastest point that fits,
// by how much it beats the next and the slowest, why; faster points that do not fit.
std::vector<std::string> sweep_findings(const Input& sweep);

// One process of a trace: per track, seconds per category; `span_s` the step shown.
struct TrackTime {
  std::string name;
  std::map<std::string, double> seconds;  // category -> seconds
};
std::vector<std::string> trace_findings(const std::string& process, const std::vector<TrackTime>& tracks,
                                        double span_s);

} // namespace ipusim::report
