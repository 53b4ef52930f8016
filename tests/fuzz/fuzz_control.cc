// libFuzzer: what crosses process boundaries into gpulaunch and its shim: the
// control protocol's lines, the runtime's step metrics records and the slot
// table (GPULAUNCH_SLOT_TABLE).
#include <cstdint>
#include <string>

#include "common/step_metrics.h"
#include "launcher/base/control_protocol.h"
#include "launcher/base/slot_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto m = gpulaunch::ParseControlLine(text); m) {
    // What is accepted formats to a line that reads back as the same kind.
    const std::string line = gpulaunch::FormatControlLine(*m);
    auto back = gpulaunch::ParseControlLine(line.substr(0, line.size() - 1));
    if (!back || back->kind != m->kind || back->rank != m->rank) __builtin_trap();
  }
  if (auto m = gpulaunch::ParseStepMetricsJson(text, "fuzz"); m.ok()) {
    // An accepted record writes back to one line that reads back.
    const std::string line = gpulaunch::StepMetricsJson(*m);
    if (line.find('\n') != std::string::npos || !gpulaunch::ParseStepMetricsJson(line, "again").ok()) __builtin_trap();
  }
  (void)gpulaunch::DecodeSlotTable(text);
  // An accepted row (the control server's answer) encodes back to itself.
  if (auto row = gpulaunch::DecodeSlotRow(text, 0); row.ok()) {
    auto again = gpulaunch::DecodeSlotRow(gpulaunch::EncodeSlotRow(*row), 0);
    if (!again.ok() || gpulaunch::EncodeSlotRow(*again) != gpulaunch::EncodeSlotRow(*row)) __builtin_trap();
  }
  return 0;
}
