#include "runtime/hierarchical_reduce.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt {
namespace {

// 0x6711: step A, inside a host (cpu_local_reducer.cc)
constexpr int kTagCross = 0x6712;   // B: to each range's finisher, hosts' pure nodes
constexpr int kTagSpread = 0x6713;  // C: a finished range to one rank of each other host
constexpr int kTagShare = 0x6714;   // C: inside a host, the ranges each rank holds

struct Span {
  size_t lo = 0, hi = 0;
  size_t size() const { return hi > lo ? hi - lo : 0; }
};

Span Intersect(Span a, Span b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

Span Elements(size_t count, int index, int parts) {
  const auto [lo, hi] = ElementRange(count, index, parts);
  return {lo, hi};
}

// Ranks by host, in rank order, and each rank's index among its host's.
struct HostGroups {
  std::vector<std::vector<int>> members;
  std::vector<int> local_index;
  explicit HostGroups(const std::vector<int>& host_of) : local_index(host_of.size()) {
    for (size_t r = 0; r < host_of.size(); ++r) {
      if (static_cast<size_t>(host_of[r]) >= members.size()) members.resize(static_cast<size_t>(host_of[r]) + 1);
      local_index[r] = static_cast<int>(members[static_cast<size_t>(host_of[r])].size());
      members[static_cast<size_t>(host_of[r])].push_back(static_cast<int>(r));
    }
  }
  int hosts() const { return static_cast<int>(members.size()); }
  // Which rank of host `on` receives rank `from`'s finished range in step C.
  int Recipient(int from, int on) const {
    const auto& m = members[static_cast<size_t>(on)];
    return m[static_cast<size_t>(local_index[static_cast<size_t>(from)]) % m.size()];
  }
};

void CollectPure(const TreeNode& node, const std::vector<int>& leaf_host, std::vector<std::pair<TreeNode, int>>& out) {
  const int host = leaf_host[static_cast<size_t>(node.lo)];
  bool pure = true;
  for (int l = node.lo + 1; l < node.hi && pure; ++l) pure = leaf_host[static_cast<size_t>(l)] == host;
  if (pure) {
    out.push_back({node, host});
    return;
  }
  CollectPure(node.Left(), leaf_host, out);
  CollectPure(node.Right(), leaf_host, out);
}

}  // namespace

std::vector<int> HostIndices(const std::vector<std::string>& host_names) {
  std::map<std::string, int> index;
  std::vector<int> out;
  out.reserve(host_names.size());
  for (const std::string& h : host_names) out.push_back(index.emplace(h, static_cast<int>(index.size())).first->second);
  return out;
}

std::vector<std::pair<TreeNode, int>> HostPureNodes(int leaves, const std::vector<int>& host_of) {
  const int world = static_cast<int>(host_of.size());
  std::vector<int> leaf_host(static_cast<size_t>(leaves));
  for (int r = 0; r < world; ++r) {
    const auto [first, end] = LeafRange(r, world, leaves);
    for (int l = first; l < end; ++l) leaf_host[static_cast<size_t>(l)] = host_of[static_cast<size_t>(r)];
  }
  std::vector<std::pair<TreeNode, int>> out;
  CollectPure(TreeNode{0, leaves}, leaf_host, out);
  return out;
}

template <typename T>
Status HierarchicalReduceScatter(Communicator& comm, const std::vector<int>& host_of, const LeafSum<T>& mine, T* out,
                                 LocalReducer& local_reducer, ReduceScratch& scratch_of, ReduceTraffic& traffic) {
  ReduceScratch::Of<T>& scratch = scratch_of.For<T>();
  const int n = comm.size(), me = comm.rank();
  const size_t count = mine.count();
  const int leaves = mine.leaves();
  const HostGroups groups(host_of);
  const int host = host_of[static_cast<size_t>(me)];
  const std::vector<int>& local = groups.members[static_cast<size_t>(host)];
  const int p = static_cast<int>(local.size()), j = groups.local_index[static_cast<size_t>(me)];
  CountingSender sender(comm, host_of, traffic);

  // The pure nodes of each host, as indices into `pure`.
  const std::vector<std::pair<TreeNode, int>> pure = HostPureNodes(leaves, host_of);
  std::vector<std::vector<size_t>> pure_of_host(static_cast<size_t>(groups.hosts()));
  for (size_t k = 0; k < pure.size(); ++k) pure_of_host[static_cast<size_t>(pure[k].second)].push_back(k);
  const std::vector<size_t>& my_host_pure = pure_of_host[static_cast<size_t>(host)];

  // A: this host's pure nodes over this rank's local share of the elements.
  const Span share = Elements(count, j, p);
  LocalStep step;
  step.comm = &comm;
  step.host_of = host_of;
  step.local = local;
  step.leaves = leaves;
  for (size_t k : my_host_pure) step.host_nodes.push_back(pure[k].first);
  std::vector<T>& host_values = scratch.host_values;
  host_values.resize(my_host_pure.size() * share.size());
  GL_RETURN_IF_ERROR(local_reducer.Reduce(step, mine, host_values.data(), traffic));

  // B: each finisher gets every host's pure nodes over its range.
  const Span mine_final = Elements(count, me, n);
  const size_t flen = mine_final.size();
  std::vector<T>& assembled = scratch.assembled;
  assembled.resize(pure.size() * flen);
  auto place = [&](const std::vector<size_t>& host_pure, const T* from, Span piece) {
    for (size_t q = 0; q < host_pure.size(); ++q) {
      std::memcpy(assembled.data() + host_pure[q] * flen + (piece.lo - mine_final.lo), from + q * piece.size(),
                  piece.size() * sizeof(T));
    }
  };
  size_t packed = 0;
  for (int step = 1; step < n && !my_host_pure.empty(); ++step) {
    const int dst = (me + step) % n;
    const Span piece = Intersect(share, Elements(count, dst, n));
    if (piece.size() == 0) continue;
    const T* from = host_values.data() + (piece.lo - share.lo);
    if (my_host_pure.size() > 1) {  // one node is contiguous already: no copy
      T* pack = scratch.Pack(packed++, my_host_pure.size() * piece.size());
      for (size_t q = 0; q < my_host_pure.size(); ++q) {
        std::memcpy(pack + q * piece.size(), from + q * share.size(), piece.size() * sizeof(T));
      }
      from = pack;
    }
    GL_RETURN_IF_ERROR(sender.Post(dst, kTagCross, from, my_host_pure.size() * piece.size() * sizeof(T)));
  }
  if (const Span own = Intersect(share, mine_final); own.size() > 0) {
    for (size_t q = 0; q < my_host_pure.size(); ++q) {
      std::memcpy(assembled.data() + my_host_pure[q] * flen + (own.lo - mine_final.lo),
                  host_values.data() + q * share.size() + (own.lo - share.lo), own.size() * sizeof(T));
    }
  }
  if (scratch.received.empty()) scratch.received.resize(1);
  for (int step = 1; step < n && flen > 0; ++step) {
    const int src = (me - step + n) % n;
    const int src_host = host_of[static_cast<size_t>(src)];
    const std::vector<size_t>& host_pure = pure_of_host[static_cast<size_t>(src_host)];
    const int src_p = static_cast<int>(groups.members[static_cast<size_t>(src_host)].size());
    const Span piece = Intersect(Elements(count, groups.local_index[static_cast<size_t>(src)], src_p), mine_final);
    if (piece.size() == 0 || host_pure.empty()) continue;
    if (host_pure.size() == 1) {  // straight into place
      GL_RETURN_IF_ERROR(comm.Recv(src, kTagCross, assembled.data() + host_pure[0] * flen + (piece.lo - mine_final.lo),
                                   piece.size() * sizeof(T)));
      continue;
    }
    std::vector<T>& incoming_buffer = scratch.received[0];
    incoming_buffer.resize(host_pure.size() * piece.size());
    GL_RETURN_IF_ERROR(comm.Recv(src, kTagCross, incoming_buffer.data(), incoming_buffer.size() * sizeof(T)));
    place(host_pure, incoming_buffer.data(), piece);
  }
  std::vector<NodeValues<T>> roots;
  for (size_t k = 0; k < pure.size(); ++k) roots.push_back({pure[k].first, assembled.data() + k * flen});
  if (flen > 0) EvaluateTree(TreeNode{0, leaves}, roots, flen, out);
  return comm.FlushSends();
}

template <typename T>
Status HierarchicalAllgatherRanges(Communicator& comm, const std::vector<int>& host_of, T* out, size_t count,
                                   ReduceTraffic& traffic) {
  const int n = comm.size(), me = comm.rank();
  const HostGroups groups(host_of);
  const int host = host_of[static_cast<size_t>(me)], h = groups.hosts();
  const std::vector<int>& local = groups.members[static_cast<size_t>(host)];
  const int p = static_cast<int>(local.size()), j = groups.local_index[static_cast<size_t>(me)];
  CountingSender sender(comm, host_of, traffic);
  auto range = [&](int r) { return Elements(count, r, n); };

  // One copy of each finished range to every other host.
  const Span mine = range(me);
  for (int step = 1; step < h; ++step) {
    const int to_host = (host + step) % h;
    GL_RETURN_IF_ERROR(sender.Post(groups.Recipient(me, to_host), kTagSpread, out + mine.lo, mine.size() * sizeof(T)));
  }
  // What each rank of this host holds afterwards: its own range, then what
  // it received, in rank order (sender and receiver walk the same list).
  std::vector<std::vector<int>> held(static_cast<size_t>(p));
  for (int r = 0; r < n; ++r) {
    if (host_of[static_cast<size_t>(r)] == host) {
      held[static_cast<size_t>(groups.local_index[static_cast<size_t>(r)])].push_back(r);
    } else {
      const int at = groups.Recipient(r, host);
      held[static_cast<size_t>(groups.local_index[static_cast<size_t>(at)])].push_back(r);
    }
  }
  for (int r : held[static_cast<size_t>(j)]) {
    if (r == me || range(r).size() == 0) continue;
    GL_RETURN_IF_ERROR(comm.Recv(r, kTagSpread, out + range(r).lo, range(r).size() * sizeof(T)));
  }
  GL_RETURN_IF_ERROR(comm.FlushSends());

  // Inside the host, everyone's holdings to everyone.
  for (int step = 1; step < p; ++step) {
    const int dst = local[static_cast<size_t>((j + step) % p)];
    for (int r : held[static_cast<size_t>(j)]) {
      GL_RETURN_IF_ERROR(sender.Post(dst, kTagShare, out + range(r).lo, range(r).size() * sizeof(T)));
    }
  }
  for (int step = 1; step < p; ++step) {
    const int i = (j - step + p) % p;
    for (int r : held[static_cast<size_t>(i)]) {
      if (range(r).size() == 0) continue;
      GL_RETURN_IF_ERROR(comm.Recv(local[static_cast<size_t>(i)], kTagShare, out + range(r).lo,
                                   range(r).size() * sizeof(T)));
    }
  }
  return comm.FlushSends();
}

template Status HierarchicalReduceScatter(Communicator&, const std::vector<int>&, const LeafSum<float>&, float*,
                                          LocalReducer&, ReduceScratch&, ReduceTraffic&);
template Status HierarchicalReduceScatter(Communicator&, const std::vector<int>&, const LeafSum<double>&, double*,
                                          LocalReducer&, ReduceScratch&, ReduceTraffic&);
template Status HierarchicalAllgatherRanges(Communicator&, const std::vector<int>&, float*, size_t, ReduceTraffic&);
template Status HierarchicalAllgatherRanges(Communicator&, const std::vector<int>&, double*, size_t, ReduceTraffic&);

}  // namespace gpulaunch::rt
