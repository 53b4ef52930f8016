// The stacks of every thread of a running process, for the summary of a job
// that stalled: eu-stack (elfutils) where installed, else gdb in batch mode.
// The process is stopped only while the tool reads it. Needs ptrace rights:
// the shim is the job process's parent and the job process names the shim
// as its tracer (PR_SET_PTRACER), so Yama's ptrace_scope=1 allows it.
#pragma once

#include <string>

namespace gpulaunch {

// The tool's output, or a line saying why there is none.
std::string DumpStacks(int pid, int timeout_ms);

}  // namespace gpulaunch
