// Small statistics shared by reports (run report, simulator, linkcheck).
#pragma once

#include <vector>

namespace gpulaunch {

// The q-quantile (0 < q <= 1) by nearest rank: the smallest sample with at
// least q of the samples at or below it; 0 for no samples.
double Quantile(std::vector<double> samples, double q);

}  // namespace gpulaunch
