// `gpulaunch check --storage PATH`: what the three probe phases on every host
// (launcher/storage_probe.h) add up to. Every host must see the same PATH:
// each host's file, read by every other host, must hold exactly the bytes
// its writer wrote. Hosts that see each other's files form groups; the
// largest group is the shared view, and every host outside it (or inside it
// but missing a file) fails, named with what it does not see. A host that
// could not write, or did not answer within the budget, fails with that
// reason. Throughput and metadata latency are reported per host with the
// spread across hosts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/check/storage_probe.h"

namespace gpulaunch {

struct StorageHostVerdict {
  std::string host;
  bool ok = false;
  std::string reason;     // why not
  StorageWriteResult write;
  int sees = 0, of = 0;   // hosts whose file it read back correctly, of how many wrote one
};

struct StorageCheckReport {
  std::string path;
  uint64_t bytes = 0;
  std::vector<StorageHostVerdict> hosts;  // in the order given
  bool ok = false;
};

// `writes` and `reads` by host; a host missing from `reads` did not answer
// the read phase.
StorageCheckReport AnalyzeStorage(const std::string& path, uint64_t bytes, const std::vector<std::string>& hosts,
                                  const std::map<std::string, StorageWriteResult>& writes,
                                  const std::map<std::string, StorageReadResult>& reads);

std::string RenderStorageTable(const StorageCheckReport& report);
std::string StorageReportJson(const StorageCheckReport& report);

}  // namespace gpulaunch
