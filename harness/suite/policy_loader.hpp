#pragma once
// Gate policy YAML (configs/gate.yaml) -> model::GatePolicy. See docs/statistics.md.

#include <string>

#include "harness/model/verdict.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

Expected<model::GatePolicy> load_gate_policy(const std::string& path);
Expected<model::GatePolicy> load_gate_policy_text(const std::string& text, const std::string& display_path);

}  // namespace perfgate::suite
