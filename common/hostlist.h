// Slurm hostlist expressions: "node[01-04]", "gpu[1,3-5]", "r[1-2]n[01-02]",
// separated by commas or white space at the top level ("node[01-02],login1").
// Read as Slurm 22.05 reads them (tests/data/oracles/ holds what scontrol
// printed): zero padding follows the lower bound's width ("[08-10]" -> 08,
// 09, 10), empty items are skipped, several bracket groups expand in Slurm's
// order. What Slurm refuses is refused; what Slurm would keep as an odd name
// (a ';' or '@' in it) is refused too, with a message that says so.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

// The most hosts one range ("[1-65536]"), one expression, one hostfile or one
// --host list may name: Slurm's own limit for one range (scontrol refuses
// "n[1-65537]": "Too many hosts in range"). Slurm expands a longer product
// ("a[1-300]b[1-300]"); gpulaunch refuses it and says so, so that memory and
// time stay bounded by what a job can use, never by what a typo promises.
inline constexpr size_t kMaxHostlistExpansion = 65536;

// Expands to host names in written order (duplicates kept, as Slurm does).
// A name beginning with '-' is refused: every host list (hostfiles, --host,
// Slurm's node lists, topology.conf) comes through here, and such a name
// would reach mpirun and ssh as an option.
StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view expression);

// The inverse, for names in the given order: runs of names that differ only
// in a trailing number of one width become "prefix[a-b,c]"; the result
// expands back to exactly `hosts`.
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace gpulaunch
