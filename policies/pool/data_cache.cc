#include "policies/pool/data_cache.h"

#include <algorithm>

namespace gpulaunch::pool {

DataCache::DataCache(int hosts, int datasets, double capacity_gb)
    : capacity_gb_(capacity_gb),
      lru_(static_cast<size_t>(hosts)),
      used_gb_(static_cast<size_t>(hosts), 0.0),
      holders_(static_cast<size_t>(std::max(0, datasets))) {}

void DataCache::Evict(int host, int dataset) {
  std::vector<int>& h = holders_[static_cast<size_t>(dataset)];
  h.erase(std::remove(h.begin(), h.end(), host), h.end());
}

bool DataCache::Use(int dataset, double gb, const std::vector<int>& hosts) {
  if (dataset < 0 || dataset >= static_cast<int>(holders_.size())) return false;
  bool missed = false;
  for (int host : hosts) {
    std::list<Entry>& lru = lru_[static_cast<size_t>(host)];
    auto it = std::find_if(lru.begin(), lru.end(), [&](const Entry& e) { return e.dataset == dataset; });
    if (it != lru.end()) {
      ++hits_;
      lru.splice(lru.begin(), lru, it);
      continue;
    }
    ++misses_;
    missed = true;
    if (gb > capacity_gb_) continue;  // copied for this run, too big to keep
    double& used = used_gb_[static_cast<size_t>(host)];
    while (used + gb > capacity_gb_ && !lru.empty()) {
      used -= lru.back().gb;
      Evict(host, lru.back().dataset);
      lru.pop_back();
    }
    lru.push_front(Entry{dataset, gb});
    used += gb;
    holders_[static_cast<size_t>(dataset)].push_back(host);
  }
  return missed;
}

}  // namespace gpulaunch::pool
