#pragma once
// Adjusted p-values for a family of tests (one gate). Both return values in
// the input order, capped at 1, equal to R's p.adjust(p, "BH") / "holm".
// As R does with NA, NaN entries stay NaN and do not count in the family size.

#include <span>
#include <vector>

namespace perfgate::stats {

// Benjamini-Hochberg step-up: controls the false-discovery rate.
std::vector<double> benjamini_hochberg(std::span<const double> p);
// Holm step-down: controls the family-wise error rate (stricter).
std::vector<double> holm(std::span<const double> p);

}  // namespace perfgate::stats
