#pragma once
// Reports of `perfgate soak` / `perfgate soak-report`: per trial, the trend
// of every analysed metric and the findings with their evidence.

#include <string>

#include "harness/analysis/soak.hpp"

namespace perfgate::report {

std::string soak_table(const analysis::SoakReport& r);
std::string soak_markdown(const analysis::SoakReport& r);
std::string soak_json(const analysis::SoakReport& r);

// One progress line of a running soak trial; soak_eta_s: until the whole
// soak (every trial, side by side on the slots) should end.
std::string soak_progress_line(const std::string& label, double duration_s, double t_s, long long steps,
                               const std::string& primary, double window_value, double throughput,
                               double drift_pct_per_h, const std::vector<std::pair<std::string, double>>& sampled,
                               double soak_eta_s);

}  // namespace perfgate::report
