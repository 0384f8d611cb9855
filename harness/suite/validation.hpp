#pragma once
// Checks of a suite once its layers are merged (internal to suite/): every
// placeholder known and given a value in every configuration, metrics keys
// that fit the parser, exclude filters that name parameters, matrices of a
// size one can run.

#include <string>
#include <vector>

#include "harness/model/suite.hpp"
#include "harness/suite/yaml_helpers.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

// Every parameter name a workload knows: axes (with dict keys), fixed params, includes.
std::vector<std::string> known_params(const model::Workload& w);
// The placeholders its command and env use.
std::vector<std::string> placeholder_names(const model::Workload& w);
Status validate_placeholders(const yaml::Ctx& c, const model::Workload& w);
// What a parser needs and what only some parsers take, once the layers are merged.
Status validate_metrics(const model::Workload& w);
// Every parameter an exclude entry names exists.
Status validate_filters(const model::Workload& w);
// Every configuration must give every placeholder a value: a key that only
// some include entries set is missing from the others.
Status validate_cases(const model::Suite& suite);
// At most 100,000 configurations per workload.
Status validate_matrix_size(const model::Workload& w);

}  // namespace perfgate::suite
