#pragma once
#include <cstdint>
#include <vector>

#include "harness/model/plan.hpp"
#include "harness/model/suite.hpp"

namespace perfgate::suite {

// Orders repeats x cases. "interleaved": one block per repeat holding every
// case, each block shuffled by a generator seeded with `seed`; "sequential":
// all repeats of a case back to back, cases in suite order. The same seed
// gives the same order on every machine (the shuffle does not depend on the
// standard library's distributions).
model::Plan make_plan(const model::Suite& suite, std::vector<model::Case> cases, std::uint64_t seed);

// A seed from the clock and process id, for runs that do not fix one.
std::uint64_t fresh_seed();

}  // namespace perfgate::suite
