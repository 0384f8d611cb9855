#pragma once
// `perfgate bisect` reports: a table for the terminal, Markdown for a CI
// summary (the failed nightly's page), JSON (runner::bisect_report_json).

#include <string>

#include "harness/runner/bisect.hpp"

namespace perfgate::report {

std::string bisect_table(const runner::BisectReport& r);
std::string bisect_markdown(const runner::BisectReport& r);

}  // namespace perfgate::report
