#pragma once
#include <cstdio>

#include "harness/sim/config.hpp"

namespace perfgate::sim {

// Runs the simulated job and writes the metric protocol to `out`. Returns the exit code.
int train(const Config& cfg, std::FILE* out, bool stdout_protocol);

}  // namespace perfgate::sim
