#pragma once
// Reports of `perfgate history`: a table of series and their change points, or JSON.

#include <string>
#include <vector>

#include "harness/analysis/history.hpp"

namespace perfgate::report {

struct HistoryReport {
  std::string suite;
  int runs = 0;
  std::vector<std::string> warnings;
  const std::vector<analysis::HistorySeries>* series = nullptr;
  double significance = 0.01;
  std::uint64_t seed = 1;
};

std::string history_table(const HistoryReport& r);
std::string history_json(const HistoryReport& r);

}  // namespace perfgate::report
