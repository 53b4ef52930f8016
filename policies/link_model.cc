#include "policies/link_model.h"

#include <algorithm>
#include <limits>

#include "policies/path_type.h"

namespace gpulaunch {

namespace {

// What one side of a network link can send: its NIC's speed (else the
// host's fastest known, else the cluster's), capped by the GPU-to-NIC path.
double SideGbps(const ClusterTopology& c, const SlotRef& s) {
  const HostTopology& h = c.hosts[s.host].topology;
  const bool has_nic = s.nic >= 0 && static_cast<size_t>(s.nic) < h.nics.size();
  double gbps = has_nic && h.nics[s.nic].gbps > 0 ? h.nics[s.nic].gbps : h.NicGbps() > 0 ? h.NicGbps() : c.nic_gbps;
  if (has_nic && s.gpu >= 0 && static_cast<size_t>(s.gpu) < h.gpus.size()) {
    gbps = std::min(gbps, PathCost(GpuNicPath(h, h.gpus[s.gpu], h.nics[s.nic])).gbps);
  }
  return gbps;
}

}  // namespace

LinkCost PathCost(PathType path) {
  switch (path) {
    case PathType::kNvl: break;  // recorded per GPU pair
    case PathType::kPix: return {24.0, 2.0, "PCIe switch"};
    case PathType::kPxb: return {24.0, 2.5, "PCIe switches"};
    case PathType::kPhb: return {20.0, 3.0, "PCIe host bridge"};
    case PathType::kNode: return {16.0, 4.0, "same socket"};
    case PathType::kSys: return {10.0, 5.0, "across sockets"};
  }
  return {0.0, 2.0, "NVLink"};
}

const MeasuredLeaf* LinkLookup::LeafOf(int host) {
  if (c_.links.leaves.empty()) return nullptr;
  const auto [it, fresh] = leaf_.try_emplace(host, nullptr);
  if (fresh) it->second = c_.links.LeafOf(c_.hosts[host].name);
  return it->second;
}

const LinkLookup::PairFacts& LinkLookup::Pair(int a, int b) {
  const uint64_t key = (static_cast<uint64_t>(std::min(a, b)) << 32) | static_cast<uint32_t>(std::max(a, b));
  const auto [it, fresh] = pairs_.try_emplace(key);
  if (fresh) {
    const std::string& ha = c_.hosts[a].name;
    const std::string& hb = c_.hosts[b].name;
    it->second.measured = c_.links.Pair(ha, hb);
    it->second.switches = c_.network.empty() ? 1 : c_.network.SwitchesBetween(ha, hb);
  }
  return it->second;
}

const MeasuredLink* LinkLookup::MeasuredPair(int a, int b) { return Pair(a, b).measured; }

int LinkLookup::SwitchesBetween(int a, int b) { return Pair(a, b).switches; }

LinkCost CostBetween(const ClusterTopology& c, const SlotRef& a, const SlotRef& b) {
  LinkLookup links(c);
  return CostBetween(links, a, b);
}

LinkCost CostBetween(LinkLookup& links, const SlotRef& a, const SlotRef& b) {
  const ClusterTopology& c = links.cluster();
  if (a.host != b.host) {
    if (const MeasuredLink* m = links.MeasuredPair(a.host, b.host)) return {m->gbyte_per_s, m->latency_us, "measured"};
    int switches = links.SwitchesBetween(a.host, b.host);
    if (switches < 0) switches = 7;  // unknown or disconnected: assume far away
    const int levels_up = (switches - 1) / 2;
    // The slower side (each: its NIC, or the host's fastest, capped by its GPU's path to it).
    double gbps = std::min(SideGbps(c, a), SideGbps(c, b));
    for (int l = 0; l < levels_up; ++l) gbps /= 2;
    return {gbps, 3.0 + 1.0 * (switches - 1), levels_up == 0 ? "same leaf" : "across switches"};
  }
  const HostTopology& h = c.hosts[a.host].topology;
  if (a.gpu < 0 || b.gpu < 0) {
    const auto m = c.links.shared_memory.find(c.hosts[a.host].name);
    if (m != c.links.shared_memory.end()) return {m->second.gbyte_per_s, m->second.latency_us, "measured shared memory"};
    return {10.0, 0.5, "shared memory"};
  }
  if (a.gpu == b.gpu) return {std::numeric_limits<double>::infinity(), 0.0, "same GPU"};
  // Per path type (path_type.h); sources in docs/placement.md.
  const PathType path = GpuGpuPath(h, a.gpu, b.gpu);
  if (path == PathType::kNvl) return {h.GpuLinkGbps(a.gpu, b.gpu), 2.0, "NVLink"};
  return PathCost(path);
}

namespace {

// The measured leaves a flow from `a` to `b` crosses (nullptr, nullptr when
// it stays under one, or either host is under none).
std::pair<const MeasuredLeaf*, const MeasuredLeaf*> CrossedLeaves(LinkLookup& links, const SlotRef& a,
                                                                  const SlotRef& b) {
  if (a.host == b.host) return {nullptr, nullptr};
  const MeasuredLeaf* from = links.LeafOf(a.host);
  const MeasuredLeaf* to = from ? links.LeafOf(b.host) : nullptr;
  if (!from || !to || from == to) return {nullptr, nullptr};
  return {from, to};
}

}  // namespace

void AddFlow(LinkLookup& links, const SlotRef& from, const SlotRef& to, UplinkLoad& load) {
  const auto [up, down] = CrossedLeaves(links, from, to);
  if (!up) return;
  ++load.up[up];
  ++load.down[down];
}

void AddRingFlows(LinkLookup& links, const std::vector<SlotRef>& ring, UplinkLoad& load) {
  if (ring.size() < 2) return;
  for (size_t i = 0; i < ring.size(); ++i) AddFlow(links, ring[i], ring[(i + 1) % ring.size()], load);
}

LinkCost LoadedCost(LinkLookup& links, const SlotRef& a, const SlotRef& b, const UplinkLoad* load) {
  LinkCost l = CostBetween(links, a, b);
  if (!load) return l;
  const auto [up, down] = CrossedLeaves(links, a, b);
  if (!up) return l;
  auto share = [](const MeasuredLeaf* leaf, const std::map<const MeasuredLeaf*, int>& flows) {
    const auto it = flows.find(leaf);
    const int n = it == flows.end() ? 1 : std::max(1, it->second);
    return leaf->uplink_gbyte_per_s > 0 ? leaf->uplink_gbyte_per_s / n : std::numeric_limits<double>::infinity();
  };
  const double capped = std::min({l.gbps, share(up, load->up), share(down, load->down)});
  if (capped < l.gbps) {
    l.gbps = capped;
    l.cls = "shared uplink";
  }
  return l;
}

double RingAllreduceSeconds(LinkLookup& links, const std::vector<SlotRef>& ring, double bytes,
                            const UplinkLoad* load) {
  const size_t n = ring.size();
  if (n < 2) return 0;
  double min_gbps = std::numeric_limits<double>::infinity(), max_lat = 0;
  for (size_t i = 0; i < n; ++i) {
    const LinkCost l = LoadedCost(links, ring[i], ring[(i + 1) % n], load);
    min_gbps = std::min(min_gbps, l.gbps);
    max_lat = std::max(max_lat, l.latency_us);
  }
  const double steps = 2.0 * static_cast<double>(n - 1);
  return steps / static_cast<double>(n) * bytes / (min_gbps * 1e9) + steps * max_lat * 1e-6;
}

double PointToPointSeconds(LinkLookup& links, const SlotRef& a, const SlotRef& b, double bytes,
                           const UplinkLoad* load) {
  const LinkCost l = LoadedCost(links, a, b, load);
  if (l.latency_us == 0) return 0;
  return bytes / (l.gbps * 1e9) + l.latency_us * 1e-6;
}

}  // namespace gpulaunch
