// The per-host half of `gpulaunch check --storage PATH`, run on every host by
// gpulaunch-probe (`gpulaunch-probe storage write|read|clean ...`) through
// the engine. Three phases, each on every host at once, the next only after
// the last host finished the previous one:
//
//   write  each host writes PATH/.gpulaunch-storage-<token>/<host>.dat (its
//          own pseudo-random bytes, seeded by token and host name), fsyncs it,
//          drops it from the page cache and reads it back: write and read
//          throughput; then creates, stats and unlinks small files: the
//          median metadata latency of each.
//   read   each host reads every host's file and compares it with the bytes
//          that host must have written: ok, missing or different. A host
//          that sees another PATH (not mounted, a stale cache, another
//          export) is found here.
//   clean  each host removes its file; the directory goes with the last one.
//
// Results travel as one line on stdout (FormatStorageLine), parsed by
// gpulaunch (launcher/storage_check.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct StorageWriteResult {
  std::string host;
  std::string error;  // empty when the phase worked
  double write_mibs = 0, read_mibs = 0;
  double create_us = 0, stat_us = 0, unlink_us = 0;  // medians
};

struct StorageReadResult {
  std::string host;
  std::string error;
  std::map<std::string, std::string> seen;  // writer host -> "ok", "missing" or "different"
};

// The run's token (hex, 128 bits) reaches every host's probe in this
// variable, never in argv.
inline constexpr const char* kStorageTokenEnv = "GPULAUNCH_STORAGE_TOKEN";

std::string StorageScratchDir(const std::string& path, const std::string& token);

StorageWriteResult StorageWrite(const std::string& path, const std::string& token, const std::string& host,
                                uint64_t bytes, int metadata_files = 100);
StorageReadResult StorageRead(const std::string& path, const std::string& token, const std::string& host,
                              const std::vector<std::string>& writers, uint64_t bytes);
Status StorageClean(const std::string& path, const std::string& token, const std::string& host);

// One line each (no newline), and back.
std::string FormatStorageLine(const StorageWriteResult& r);
std::string FormatStorageLine(const StorageReadResult& r);
StatusOr<StorageWriteResult> ParseStorageWriteLine(const std::string& output);
StatusOr<StorageReadResult> ParseStorageReadLine(const std::string& output);

// gpulaunch-probe's `storage` mode: args after "storage". Prints the line;
// returns the process exit code (2 for usage errors).
int RunStorageProbe(const std::vector<std::string>& args);

}  // namespace gpulaunch
