// Whole reads and writes on file descriptors, retried on EINTR and short
// transfers: the loops every pipe, file and socket user otherwise repeats.
#pragma once

#include <cstddef>

namespace gpulaunch {

// Writes all n bytes with write(2); false on an error or a closed end.
bool WriteAll(int fd, const void* data, size_t n);
// The same on a socket with send(2) and MSG_NOSIGNAL: a peer that went away
// is an error, never a SIGPIPE.
bool SendAll(int fd, const void* data, size_t n);
// Reads exactly n bytes, waiting at most timeout_ms for each chunk (poll(2));
// false on an error, end of file or a timeout.
bool ReadExact(int fd, void* data, size_t n, int timeout_ms);

}  // namespace gpulaunch
