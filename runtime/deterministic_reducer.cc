#include "runtime/deterministic_reducer.h"

#include <algorithm>
#include <cstring>

#include "common/sha256.h"
#include "runtime/local_kernels.h"
#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt {
namespace {

constexpr int kTagReduceScatter = 0x6701;
constexpr int kTagAllgather = 0x6702;
constexpr int kTagGather = 0x6703;
constexpr int kTagExact = 0x6704;

template <typename T>
constexpr ElementType TypeOf() {
  return std::is_same_v<T, float> ? ElementType::kFloat32 : ElementType::kFloat64;
}

std::vector<TreeNode> NodesOf(int rank, int world, int leaves) {
  const auto [first, end] = LeafRange(rank, world, leaves);
  return MaximalNodes(leaves, first, end);
}

void CountSent(const RankHierarchy& h, int me, int dst, size_t bytes, ReduceTraffic& traffic) {
  traffic.Count(h.host_of(), me, dst, bytes, h.switch_of());
}

// Host and switch maps as the reducer uses them: dense, one host when none
// is given, switches only when they form a level of the hierarchy.
StatusOr<RankHierarchy> HierarchyOf(const ReduceConfig& c, int size) {
  if (!c.host_of_rank.empty() && c.host_of_rank.size() != static_cast<size_t>(size)) {
    return InvalidArgument("the reduction's host map names " + std::to_string(c.host_of_rank.size()) +
                           " ranks, the communicator has " + std::to_string(size) +
                           "; give one host per rank, in rank order");
  }
  if (c.host_of_rank.empty() && !c.switch_of_rank.empty()) {
    return InvalidArgument("the reduction names switches but no hosts; give both maps");
  }
  return RankHierarchy::Make(c.host_of_rank.empty() ? std::vector<int>(static_cast<size_t>(size), 0) : c.host_of_rank,
                             c.switch_of_rank, c.algorithm != ReduceAlgorithm::kHierarchicalHostsOnly);
}

// Each rank holds its own range of `out`; afterwards every rank holds all of
// it. Pairwise exchanges: bandwidth-optimal, n-1 steps.
template <typename T>
Status AllgatherRanges(Communicator& comm, T* out, size_t count, const RankHierarchy& host_of,
                       ReduceTraffic& traffic) {
  const int n = comm.size(), r = comm.rank();
  const auto [lo, hi] = ElementRange(count, r, n);
  for (int s = 1; s < n; ++s) {
    const int dst = (r + s) % n, src = (r - s + n) % n;
    const auto [slo, shi] = ElementRange(count, src, n);
    CountSent(host_of, r, dst, (hi - lo) * sizeof(T), traffic);
    GL_RETURN_IF_ERROR(comm.SendRecv(dst, out + lo, (hi - lo) * sizeof(T), src, out + slo, (shi - slo) * sizeof(T),
                                     kTagAllgather));
  }
  return Status::Ok();
}

// Reduce-scatter of the ranks' tree nodes: writes this rank's element range
// of the root's value to `out` (which has room for that range).
template <typename T>
Status ReduceScatterNodes(Communicator& comm, const LeafSum<T>& mine, T* out, const RankHierarchy& host_of,
                          ReduceScratch::Of<T>& scratch, ReduceTraffic& traffic) {
  const int n = comm.size(), r = comm.rank();
  const size_t count = mine.count();
  const int leaves = mine.leaves();
  const auto [my_lo, my_hi] = ElementRange(count, r, n);
  const size_t my_len = my_hi - my_lo;
  const std::vector<TreeNode> my_nodes = mine.nodes();

  std::vector<NodeValues<T>> contributions;
  for (size_t j = 0; j < my_nodes.size(); ++j) contributions.push_back({my_nodes[j], mine.values(j) + my_lo});
  // Kept between calls (fresh buffers fault their pages in every time).
  std::vector<std::vector<T>>& received = scratch.received;
  if (received.size() < static_cast<size_t>(n)) received.resize(static_cast<size_t>(n));
  for (int s = 1; s < n; ++s) {
    const int dst = (r + s) % n, src = (r - s + n) % n;
    const auto [dlo, dhi] = ElementRange(count, dst, n);
    const size_t dlen = dhi - dlo;
    const void* send = nullptr;
    if (my_nodes.size() == 1) {
      send = mine.values(0) + dlo;  // contiguous already: no copy
    } else if (!my_nodes.empty()) {
      T* packed = scratch.Pack(0, my_nodes.size() * dlen);  // SendRecv: done with it before the next step
      for (size_t j = 0; j < my_nodes.size(); ++j) {
        std::memcpy(packed + j * dlen, mine.values(j) + dlo, dlen * sizeof(T));
      }
      send = packed;
    }
    const std::vector<TreeNode> src_nodes = NodesOf(src, n, leaves);
    received[src].resize(src_nodes.size() * my_len);
    CountSent(host_of, r, dst, my_nodes.size() * dlen * sizeof(T), traffic);
    GL_RETURN_IF_ERROR(comm.SendRecv(dst, send, my_nodes.size() * dlen * sizeof(T), src, received[src].data(),
                                     received[src].size() * sizeof(T), kTagReduceScatter));
    for (size_t j = 0; j < src_nodes.size(); ++j) {
      contributions.push_back({src_nodes[j], received[src].data() + j * my_len});
    }
  }
  EvaluateTree(TreeNode{0, leaves}, contributions, my_len, out);
  return Status::Ok();
}

}  // namespace

ReduceAlgorithm ResolvedAlgorithm(const ReduceConfig& c) {
  if (c.algorithm != ReduceAlgorithm::kAuto) return c.algorithm;
  for (int h : c.host_of_rank) {
    if (h != c.host_of_rank.front()) return ReduceAlgorithm::kHierarchical;
  }
  return ReduceAlgorithm::kFlat;
}

std::string ReductionPlanText(const ReduceConfig& c) {
  std::string algo = "algo=tree-rs-ag";
  if (ResolvedAlgorithm(c) == ReduceAlgorithm::kHierarchical ||
      ResolvedAlgorithm(c) == ReduceAlgorithm::kHierarchicalHostsOnly) {
    // Which ranks share a host (a switch) decides who sends what: ranks
    // must agree on it.
    std::string map, switches;
    int hosts = 1;
    if (!c.host_of_rank.empty()) {
      auto h = HierarchyOf(c, static_cast<int>(c.host_of_rank.size()));
      if (!h.ok()) return "gpurt-reduce/v1 invalid: " + h.status().message();
      for (int host : h->host_of()) map += std::to_string(host) + ",";
      hosts = h->levels()[0].groups();
      if (h->has_switches()) {
        map += "/";
        for (int s : h->switch_of()) map += std::to_string(s) + ",";
        switches = " switches=" + std::to_string(h->levels()[1].groups());
      }
    }
    algo = "algo=hier-rs-ag hosts=" + std::to_string(hosts) + switches + " map=" + Sha256Hex(map).substr(0, 16);
  }
  return "gpurt-reduce/v1 " + algo + " leaves=" + std::to_string(c.leaves) +
         " dtype=" + (c.type == ElementType::kFloat32 ? "f32" : "f64") + " tree=balanced-ceil-left" +
         " kernel=elementwise-add";
}

ReduceConfig WithCommunicatorsPlacement(const Communicator& comm, const ReduceConfig& c) {
  if (!c.host_of_rank.empty() || c.algorithm == ReduceAlgorithm::kFlat || comm.placement().host_of_rank.empty()) {
    return c;
  }
  ReduceConfig placed = c;
  placed.host_of_rank = comm.placement().host_of_rank;
  if (placed.switch_of_rank.empty()) placed.switch_of_rank = comm.placement().switch_of_rank;
  return placed;
}

std::string ReductionFingerprint(const ReduceConfig& c) { return Sha256Hex(ReductionPlanText(c)).substr(0, 16); }

StatusOr<DeterministicReducer> DeterministicReducer::Create(Communicator& comm, const ReduceConfig& asked) {
  if (asked.leaves < 1) return InvalidArgument("a reduction needs at least one leaf");
  const ReduceConfig requested = WithCommunicatorsPlacement(comm, asked);
  GL_ASSIGN_OR_RETURN(RankHierarchy hierarchy, HierarchyOf(requested, comm.size()));
  ReduceConfig config = requested;
  config.algorithm = ResolvedAlgorithm(requested);
  config.host_of_rank = hierarchy.host_of();
  config.switch_of_rank = hierarchy.switch_of();
  if (!config.local_reducer) config.local_reducer = MakeCpuLocalReducer();
  const std::string mine = ReductionFingerprint(config);
  std::vector<char> all(static_cast<size_t>(comm.size()) * mine.size());
  GL_RETURN_IF_ERROR(comm.Allgather(mine.data(), mine.size(), all.data()));
  for (int r = 0; r < comm.size(); ++r) {
    const std::string theirs(all.data() + static_cast<size_t>(r) * mine.size(), mine.size());
    if (theirs != std::string(all.data(), mine.size())) {
      return FailedPrecondition("reduction plans differ: rank 0 has fingerprint " + std::string(all.data(), mine.size()) +
                                ", rank " + std::to_string(r) + " has " + theirs + " (this rank: " +
                                ReductionPlanText(config) + "); refusing to reduce");
    }
  }
  return DeterministicReducer(comm, std::move(config), std::move(hierarchy), mine);
}

template <typename T>
Status DeterministicReducer::CheckInput(const LeafSum<T>& mine) const {
  if (TypeOf<T>() != config_.type) return InvalidArgument("element type differs from the reducer's configuration");
  if (mine.leaves() != config_.leaves) {
    return InvalidArgument("LeafSum has " + std::to_string(mine.leaves()) + " leaves, the reducer " +
                           std::to_string(config_.leaves));
  }
  const auto [first, end] = LeafRange(comm_->rank(), comm_->size(), config_.leaves);
  if (mine.first_leaf() != first || mine.end_leaf() != end) {
    return InvalidArgument("rank " + std::to_string(comm_->rank()) + " must own leaves [" + std::to_string(first) +
                           "," + std::to_string(end) + "); build its LeafSum with LeafSum::ForRank");
  }
  if (!mine.Complete()) return FailedPrecondition("not every leaf of this rank was added");
  return Status::Ok();
}

template <typename T>
Status DeterministicReducer::ReduceScatterRange(const LeafSum<T>& mine, T* out) {
  if (config_.algorithm != ReduceAlgorithm::kFlat) {
    return HierarchicalReduceScatter(*comm_, hierarchy_, mine, out, *config_.local_reducer, scratch_,
                                     traffic_);
  }
  return ReduceScatterNodes(*comm_, mine, out, hierarchy_, scratch_.For<T>(), traffic_);
}

template <typename T>
Status DeterministicReducer::ReduceScatter(const LeafSum<T>& mine, T* out) {
  GL_RETURN_IF_ERROR(CheckInput(mine));
  return ReduceScatterRange(mine, out);
}

template <typename T>
Status DeterministicReducer::Allreduce(const LeafSum<T>& mine, T* out) {
  GL_RETURN_IF_ERROR(CheckInput(mine));
  const auto [lo, hi] = ElementRange(mine.count(), comm_->rank(), comm_->size());
  (void)hi;
  GL_RETURN_IF_ERROR(ReduceScatterRange(mine, out + lo));
  if (config_.algorithm != ReduceAlgorithm::kFlat) {
    return HierarchicalAllgatherRanges(*comm_, hierarchy_, out, mine.count(), traffic_);
  }
  return AllgatherRanges(*comm_, out, mine.count(), hierarchy_, traffic_);
}

template <typename T>
Status DeterministicReducer::Reduce(const LeafSum<T>& mine, T* out, int root) {
  GL_RETURN_IF_ERROR(CheckInput(mine));
  const int n = comm_->size(), r = comm_->rank();
  const size_t count = mine.count();
  const auto [lo, hi] = ElementRange(count, r, n);
  std::vector<T> part(hi - lo);
  GL_RETURN_IF_ERROR(ReduceScatterRange(mine, part.data()));
  if (r != root) {
    CountSent(hierarchy_, r, root, part.size() * sizeof(T), traffic_);
    return comm_->Send(root, kTagGather, part.data(), part.size() * sizeof(T));
  }
  std::memcpy(out + lo, part.data(), part.size() * sizeof(T));
  for (int src = 0; src < n; ++src) {
    if (src == root) continue;
    const auto [slo, shi] = ElementRange(count, src, n);
    GL_RETURN_IF_ERROR(comm_->Recv(src, kTagGather, out + slo, (shi - slo) * sizeof(T)));
  }
  return Status::Ok();
}

template <typename T>
Status Allgather(Communicator& comm, const T* in, size_t count, T* out) {
  return comm.Allgather(in, count * sizeof(T), out);
}

template <typename T>
Status Gather(Communicator& comm, const T* in, size_t count, T* out, int root) {
  if (comm.rank() != root) return comm.Send(root, kTagGather, in, count * sizeof(T));
  for (int src = 0; src < comm.size(); ++src) {
    T* dest = out + static_cast<size_t>(src) * count;
    if (src == root) std::memcpy(dest, in, count * sizeof(T));
    else GL_RETURN_IF_ERROR(comm.Recv(src, kTagGather, dest, count * sizeof(T)));
  }
  return Status::Ok();
}

StatusOr<double> ExactAllreduceSum(Communicator& comm, const Superaccumulator& mine,
                                   const std::vector<int>& host_of_rank, const std::vector<int>& switch_of_rank) {
  const ReduceConfig config = WithCommunicatorsPlacement(
      comm, ReduceConfig(1, ElementType::kFloat64, ReduceAlgorithm::kAuto, host_of_rank, switch_of_rank));
  if (config.host_of_rank.size() == static_cast<size_t>(comm.size()) &&
      ResolvedAlgorithm(config) == ReduceAlgorithm::kHierarchical) {
    double total = 0;
    GL_RETURN_IF_ERROR(ExactAllreduce(comm, std::vector<Superaccumulator>{mine}, &total, config.host_of_rank,
                                      config.switch_of_rank));
    return total;
  }
  constexpr size_t kWords = Superaccumulator::kWireWords;
  std::vector<int64_t> wire(kWords), all(kWords * static_cast<size_t>(comm.size()));
  mine.ToWire(wire.data());
  GL_RETURN_IF_ERROR(comm.Allgather(wire.data(), kWords * sizeof(int64_t), all.data()));
  Superaccumulator total;
  for (int r = 0; r < comm.size(); ++r) total.Merge(Superaccumulator::FromWire(all.data() + r * kWords));
  return total.RoundToDouble();
}

template <typename T>
Status ExactAllreduce(Communicator& comm, const std::vector<Superaccumulator>& mine, T* out,
                      const std::vector<int>& host_of_rank, const std::vector<int>& switch_of_rank) {
  const ReduceConfig config = WithCommunicatorsPlacement(
      comm, ReduceConfig(1, ElementType::kFloat64, ReduceAlgorithm::kAuto, host_of_rank, switch_of_rank));
  if (config.host_of_rank.size() == static_cast<size_t>(comm.size()) &&
      ResolvedAlgorithm(config) == ReduceAlgorithm::kHierarchical) {
    GL_ASSIGN_OR_RETURN(const RankHierarchy hierarchy, HierarchyOf(config, comm.size()));
    ReduceTraffic traffic;
    return HierarchicalExactAllreduce(comm, hierarchy, mine, out, traffic);
  }
  constexpr size_t kWords = Superaccumulator::kWireWords;
  const int n = comm.size(), r = comm.rank();
  const size_t count = mine.size();
  const auto [lo, hi] = ElementRange(count, r, n);
  std::vector<Superaccumulator> acc(mine.begin() + static_cast<long>(lo), mine.begin() + static_cast<long>(hi));
  std::vector<int64_t> send, recv((hi - lo) * kWords);
  for (int s = 1; s < n; ++s) {
    const int dst = (r + s) % n, src = (r - s + n) % n;
    const auto [dlo, dhi] = ElementRange(count, dst, n);
    send.resize((dhi - dlo) * kWords);
    for (size_t i = dlo; i < dhi; ++i) mine[i].ToWire(send.data() + (i - dlo) * kWords);
    GL_RETURN_IF_ERROR(comm.SendRecv(dst, send.data(), send.size() * sizeof(int64_t), src, recv.data(),
                                     recv.size() * sizeof(int64_t), kTagExact));
    for (size_t i = 0; i < acc.size(); ++i) acc[i].Merge(Superaccumulator::FromWire(recv.data() + i * kWords));
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    out[lo + i] = std::is_same_v<T, float> ? acc[i].RoundToFloat() : static_cast<T>(acc[i].RoundToDouble());
  }
  ReduceTraffic uncounted;
  GL_ASSIGN_OR_RETURN(const RankHierarchy one_host, RankHierarchy::Make(std::vector<int>(static_cast<size_t>(n), 0)));
  return AllgatherRanges(comm, out, count, one_host, uncounted);
}

template Status DeterministicReducer::Allreduce(const LeafSum<float>&, float*);
template Status DeterministicReducer::Allreduce(const LeafSum<double>&, double*);
template Status DeterministicReducer::Reduce(const LeafSum<float>&, float*, int);
template Status DeterministicReducer::Reduce(const LeafSum<double>&, double*, int);
template Status DeterministicReducer::ReduceScatter(const LeafSum<float>&, float*);
template Status DeterministicReducer::ReduceScatter(const LeafSum<double>&, double*);
template Status Allgather(Communicator&, const float*, size_t, float*);
template Status Allgather(Communicator&, const double*, size_t, double*);
template Status Gather(Communicator&, const float*, size_t, float*, int);
template Status Gather(Communicator&, const double*, size_t, double*, int);
template Status ExactAllreduce(Communicator&, const std::vector<Superaccumulator>&, float*, const std::vector<int>&,
                               const std::vector<int>&);
template Status ExactAllreduce(Communicator&, const std::vector<Superaccumulator>&, double*, const std::vector<int>&,
                               const std::vector<int>&);

}  // namespace gpulaunch::rt
