// libFuzzer: layout strings (`tp=2,pp=2,dp=2,order=tp-pp-dp`) against a world
// size taken from the first byte; an accepted layout covers exactly the world.
#include <cstdint>
#include <string_view>

#include "common/parallel_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int world = 1 + data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (auto layout = gpulaunch::ParseLayout(text, world); layout.ok()) {
    if (layout->extent[0] * layout->extent[1] * layout->extent[2] != world) __builtin_trap();
    if (!gpulaunch::ParseLayout(layout->ToString(), world).ok()) __builtin_trap();  // what it prints reads back
  }
  return 0;
}
