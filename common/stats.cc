#include "common/stats.h"

#include <algorithm>
#include <cmath>

namespace gpulaunch {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t at = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, at == 0 ? 0 : at - 1)];
}

}  // namespace gpulaunch
