#pragma once
// Reports of `perfgate sweep` (and the short form printed at the end of a
// run of several configurations): the ranked table with intervals, the best
// configuration and whether it is really better, and the two-axis table.

#include <string>

#include "harness/analysis/sweep.hpp"

namespace perfgate::report {

std::string sweep_table(const analysis::SweepResult& r);
std::string sweep_markdown(const analysis::SweepResult& r);
std::string sweep_json(const analysis::SweepResult& r);
std::string sweep_csv(const analysis::SweepResult& r);
// Three lines for the end of `perfgate run`: the best, its lead, the ties.
std::string sweep_short(const analysis::SweepResult& r);

// RFC 4180 field: quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& s);

}  // namespace perfgate::report
