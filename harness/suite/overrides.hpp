#pragma once
// `--set` applied to a loaded suite's workloads (internal to suite/; one
// argument is parsed by parse_override, loader.hpp): settings (repeats,
// warmup, timeout, kill_grace, log_limit) or parameters, which become
// matrix axes.

#include <vector>

#include "harness/model/suite.hpp"
#include "harness/suite/loader.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

Status apply_overrides(std::vector<model::Workload>& ws, const std::vector<Override>& overrides);

}  // namespace perfgate::suite
