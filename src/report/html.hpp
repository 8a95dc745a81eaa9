// report.html: one self-contained page from the analysis of a run.
#pragma once

#include <string>
#include <vector>

#include "r3/report/analysis.hpp"
#include "r3/report/results.hpp"
#include "r3/run_database.hpp"

namespace r3::report {

std::string render_html(const run::RunRecord& record, const std::vector<KernelResult>& results,
                        const ResultsFiles& files);

std::string format_seconds(double seconds);  // "170.5 us", "1.23 ms", "2.5 s"

}  // namespace r3::report
