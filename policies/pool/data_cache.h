// Each host's local cache of input datasets, least recently used out first:
// the simulator's model of data locality. A job that starts on a host whose
// cache lacks its dataset first copies it there from shared storage at the
// host's bandwidth (hosts copy at once, so a gang waits for its slowest
// copy, which is one dataset's size over one host's bandwidth), then the
// dataset is that host's most recent; a hit only refreshes it.
#pragma once

#include <list>
#include <vector>

namespace gpulaunch::pool {

struct DataLocality {
  double cache_gb = 0;         // per host; 0: no caches, no staging (the model is off)
  double bandwidth_gb_s = 1.25;  // per host from shared storage (10 Gb/s)
  bool prefer = true;          // the policy prefers hosts that hold a job's dataset
};

class DataCache {
 public:
  DataCache(int hosts, int datasets, double capacity_gb);

  // A job of `dataset` (`gb` in size) starts on `hosts`: counts a hit or a
  // miss per host, and fills the misses. Returns whether any host missed.
  bool Use(int dataset, double gb, const std::vector<int>& hosts);
  // By dataset: the hosts holding it now (Scheduler::SetDataCaches).
  const std::vector<std::vector<int>>& holders() const { return holders_; }
  long hits() const { return hits_; }
  long misses() const { return misses_; }

 private:
  struct Entry {
    int dataset;
    double gb;
  };
  void Evict(int host, int dataset);
  double capacity_gb_;
  std::vector<std::list<Entry>> lru_;  // by host: most recent first
  std::vector<double> used_gb_;        // by host
  std::vector<std::vector<int>> holders_;
  long hits_ = 0, misses_ = 0;
};

}  // namespace gpulaunch::pool
