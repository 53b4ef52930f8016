// The conformance suite every Communicator implementation must pass. Call it
// on every rank of a communicator; it uses GoogleTest assertions.
#pragma once

#include "runtime/communicator.h"

namespace gpulaunch::rt::testing {

void RunCommunicatorConformance(Communicator& comm);

}  // namespace gpulaunch::rt::testing
