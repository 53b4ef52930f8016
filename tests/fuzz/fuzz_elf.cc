// libFuzzer: the ELF dynamic-section reader (launcher/base/elf_needs.h),
// which reads any program a user names, and the MPI names it yields.
// Invariant: whatever it returns came from the input's bytes.
#include <cstdint>
#include <string>
#include <string_view>

#include "launcher/base/elf_needs.h"
#include "launcher/engine/program_mpi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = gpulaunch::ParseElfDynamic(bytes);
  if (!parsed.ok()) return 0;
  if (!parsed->is_elf && !parsed->needed.empty()) __builtin_trap();
  for (const std::string& name : parsed->needed) {
    if (name.size() >= size || bytes.find(name) == std::string_view::npos) __builtin_trap();
    (void)gpulaunch::MpiFamilyOfLibrary(name);
  }
  return 0;
}
