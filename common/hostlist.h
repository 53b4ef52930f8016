// Slurm hostlist expressions: "node[01-04]", "gpu[1,3-5]", "r[1-2]n[01-02]",
// comma-separated at the top level ("node[01-02],login1").
// Zero padding follows the lower bound's width ("[08-10]" -> 08, 09, 10).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

// Upper bound on the hosts one expression may expand to; guards against
// typos such as "node[1-99999999]" exhausting memory.
inline constexpr size_t kMaxHostlistExpansion = 1 << 20;

// Expands to host names in written order (duplicates kept, as Slurm does).
StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view expression);

// The inverse, for names in the given order: runs of names that differ only
// in a trailing number of one width become "prefix[a-b,c]"; the result
// expands back to exactly `hosts`.
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace gpulaunch
