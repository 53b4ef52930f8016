#include "policies/pool/gpu_pool.h"

#include <bit>
#include <sstream>

#include "common/strings.h"

namespace gpulaunch::pool {
namespace {

uint64_t AllOf(int gpus) { return gpus >= 64 ? ~uint64_t{0} : (uint64_t{1} << gpus) - 1; }

}  // namespace

int Allocation::gpus() const {
  int n = 0;
  for (const HostShare& s : shares) n += std::popcount(s.gpus);
  return n;
}

GpuPool::GpuPool(std::vector<PoolHost> hosts) : hosts_(std::move(hosts)) {
  held_.assign(hosts_.size(), 0);
  shares_.assign(hosts_.size(), 0);
  usable_.assign(hosts_.size(), true);
  for (const PoolHost& h : hosts_) free_count_.push_back(h.gpus);
  for (const PoolHost& h : hosts_) {
    leaves_ = std::max(leaves_, h.leaf + 1);
    total_ += h.gpus;
  }
  free_total_ = total_;
}

namespace {

// One group "leaf:2 node:8 gpu:8 [mem:80] [link:100]", its leaves numbered
// from `first_leaf`.
Status AddGroup(const ClusterSpec& spec, const ClusterGroupSpec& group, int first_leaf, std::vector<PoolHost>& hosts) {
  for (const auto& [key, value] : group.given) {
    if (value < 1) {
      return InvalidArgument("cluster spec '" + spec.text + "': " + key + ":" + std::to_string(value) +
                             " must be at least 1 (e.g. \"leaf:2 node:8 gpu:8\")");
    }
  }
  if (!group.Has("node")) {
    return InvalidArgument("cluster spec '" + spec.text + "' needs node:N (hosts per leaf switch) in each group");
  }
  const int leaves = group.Get("leaf", 1), nodes = group.Get("node", 0), gpus = group.Get("gpu", 8);
  const int mem = group.Get("mem", 80), link = group.Get("link", 100);
  const int cpus = group.Has("core") ? group.Get("core", 0) * group.Get("numa", 1) : 0;
  if (gpus > 64) return InvalidArgument("cluster spec '" + spec.text + "': at most 64 GPUs per host");
  if (static_cast<int64_t>(leaves) * nodes + static_cast<int64_t>(hosts.size()) > 100000) {
    return InvalidArgument("cluster spec '" + spec.text + "': too many hosts");
  }
  if (!hosts.empty() && hosts.front().gpus != gpus) {
    return InvalidArgument("cluster spec '" + spec.text + "': every group needs the same gpu:N (gangs take whole hosts)");
  }
  for (int l = 0; l < leaves; ++l) {
    for (int n = 0; n < nodes; ++n) {
      hosts.push_back(PoolHost{"s" + std::to_string(first_leaf + l) + "n" + std::to_string(n), first_leaf + l, gpus,
                               static_cast<double>(mem), static_cast<double>(link), cpus});
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<GpuPool> GpuPool::FromSpec(const ClusterSpec& spec) {
  GL_RETURN_IF_ERROR(OnlyKeys(spec, {"leaf", "node", "gpu", "mem", "link", "core", "numa"}, "gpulaunch sim"));
  std::vector<PoolHost> hosts;
  for (const ClusterGroupSpec& group : spec.groups) {
    const int first_leaf = hosts.empty() ? 0 : hosts.back().leaf + 1;
    GL_RETURN_IF_ERROR(AddGroup(spec, group, first_leaf, hosts));
  }
  return GpuPool(std::move(hosts));
}

StatusOr<GpuPool> GpuPool::FromSpec(const std::string& text) {
  GL_ASSIGN_OR_RETURN(ClusterSpec spec, ParseClusterSpec(text));
  return FromSpec(spec);
}

uint64_t GpuPool::free_mask(int host) const {
  const size_t h = static_cast<size_t>(host);
  return AllOf(hosts_[h].gpus) & ~held_[h];
}

Status GpuPool::Take(const Allocation& a) {
  for (const HostShare& s : a.shares) {
    if (s.host < 0 || s.host >= static_cast<int>(hosts_.size()) || (s.gpus & ~AllOf(hosts_[s.host].gpus)) != 0) {
      return Internal("allocation names GPUs that do not exist (host " + std::to_string(s.host) + ")");
    }
    if ((held_[static_cast<size_t>(s.host)] & s.gpus) != 0) {
      return Internal("GPUs " + std::to_string(held_[static_cast<size_t>(s.host)] & s.gpus) + " of " +
                      hosts_[static_cast<size_t>(s.host)].name + " are already held: a GPU would be assigned twice");
    }
  }
  for (const HostShare& s : a.shares) {
    held_[static_cast<size_t>(s.host)] |= s.gpus;
    free_count_[static_cast<size_t>(s.host)] -= std::popcount(s.gpus);
    ++shares_[static_cast<size_t>(s.host)];
  }
  free_total_ -= a.gpus();
  return Status::Ok();
}

Status GpuPool::Give(const Allocation& a) {
  for (const HostShare& s : a.shares) {
    if (s.host < 0 || s.host >= static_cast<int>(hosts_.size()) ||
        (held_[static_cast<size_t>(s.host)] & s.gpus) != s.gpus) {
      return Internal("giving back GPUs that are not held (host " + std::to_string(s.host) + ")");
    }
  }
  for (const HostShare& s : a.shares) {
    held_[static_cast<size_t>(s.host)] &= ~s.gpus;
    free_count_[static_cast<size_t>(s.host)] += std::popcount(s.gpus);
    --shares_[static_cast<size_t>(s.host)];
  }
  free_total_ += a.gpus();
  return Status::Ok();
}

uint64_t LowestFree(uint64_t free_mask, int count) {
  uint64_t out = 0;
  for (int i = 0; i < 64 && count > 0; ++i) {
    if (free_mask & (uint64_t{1} << i)) {
      out |= uint64_t{1} << i;
      --count;
    }
  }
  return out;
}

}  // namespace gpulaunch::pool
