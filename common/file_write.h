// Writing a whole file so that a reader never sees half of it: the bytes go
// to a temporary name beside the target, which is then renamed over it (an
// atomic replace on one filesystem). On failure nothing is left behind.
#pragma once

#include <string>

#include "common/status.h"

namespace gpulaunch {

Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace gpulaunch
