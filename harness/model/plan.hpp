#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/model/params.hpp"

namespace perfgate::model {

// One configuration: a workload with every parameter fixed.
struct Case {
  std::size_t workload_index = 0;
  std::string workload;
  Params params;
  std::string params_json;  // canonical, see params_json()
  std::string label;        // "workload bucket_mb=25 graph_mode=eager"
};

struct PlannedTrial {
  std::size_t case_index = 0;
  int repeat = 0;  // 0-based repeat of its case
  int seq = 0;     // 0-based position in run order
};

// The expanded matrix and the order trials run in. Trials of different cases
// are interleaved (one block per repeat, each block shuffled with `seed`), so
// slow drift of the machine spreads over every configuration instead of
// biasing whichever ran last.
struct Plan {
  std::vector<Case> cases;
  std::vector<PlannedTrial> trials;
  std::uint64_t seed = 0;
  std::string order = "interleaved";
};

}  // namespace perfgate::model
