#pragma once
// Matrix expansion: each workload's axes crossed, `exclude` entries dropped,
// `include` entries added, `--only` filters applied.

#include <functional>
#include <string>
#include <vector>

#include "harness/model/plan.hpp"
#include "harness/model/suite.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

// Every configuration of every workload, in suite order, axes varying last-fastest.
std::vector<model::Case> expand(const model::Suite& suite);

// The parameters of the same configurations, in the same order, before
// they become cases (no identity, label or de-duplication): for checks that
// need only which parameters each has. `visit` returns false to stop.
void for_each_params(const model::Suite& suite,
                     const std::function<bool(std::size_t workload_index, const model::Params& params)>& visit);

// `--only KEY=V1,V2`: keep cases whose KEY is one of the values. KEY may be a
// parameter ("graph_mode", "dataloader.num_workers") or "workload".
struct CaseFilter {
  std::string key;
  std::vector<std::string> values;
};
Expected<CaseFilter> parse_filter(const std::string& text);
// Keeps cases matching every filter; an error if a filter names a key no case has.
Expected<std::vector<model::Case>> filter_cases(std::vector<model::Case> cases, const std::vector<CaseFilter>& filters);

}  // namespace perfgate::suite
