// Whole reads and writes on file descriptors, retried on EINTR and short
// transfers: the loops every pipe, file and socket user otherwise repeats.
// They make system calls only (no allocation, no stdio), so a vfork child may
// call them before it execs.
#pragma once

#include <cstddef>

namespace gpulaunch {

// Writes all n bytes with write(2); false on an error or a closed end.
bool WriteAll(int fd, const void* data, size_t n);
// The same on a socket with send(2) and MSG_NOSIGNAL: a peer that went away
// is an error, never a SIGPIPE. On a non-blocking socket whose buffer is
// full it waits up to writable_wait_ms for room each time (0: fails at once).
bool SendAll(int fd, const void* data, size_t n, int writable_wait_ms = 0);
// Reads exactly n bytes, waiting at most timeout_ms for each chunk (poll(2));
// false on an error, end of file or a timeout.
bool ReadExact(int fd, void* data, size_t n, int timeout_ms);

}  // namespace gpulaunch
