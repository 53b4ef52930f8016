// The LocalReducer contract (runtime/local_reducer.h), as one suite that
// every implementation runs: the CPU one here; a CUDA or NCCL one, where a
// GPU exists, calls the same function with its own factory.
#pragma once

#include <functional>
#include <memory>

#include "runtime/local_reducer.h"

namespace gpulaunch::rt::testing {

// Runs the suite with fresh reducers from `make` (one per rank and case),
// over in-process ranks. Reports failures through GoogleTest.
void RunLocalReducerConformance(const std::function<std::unique_ptr<LocalReducer>()>& make);

}  // namespace gpulaunch::rt::testing
