// The CPU LocalReducer: each rank sends its LeafSum nodes, over each other
// local rank's share of the elements, to that rank (one message a pair), and
// evaluates the host's pure nodes over its own share from what it holds.
#include <cstring>

#include "runtime/local_reducer.h"
#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt {
namespace {

constexpr int kTagLocal = 0x6711;

class CpuLocalReducer : public LocalReducer {
 public:
  std::string Name() const override { return "cpu-pairwise"; }
  // One instance serves one rank at a time: it keeps its buffers between calls.
  Status Reduce(const LocalStep& step, const LeafSum<float>& mine, float* out, ReduceTraffic& traffic) override {
    return ReduceT(step, mine, out, traffic, scratch_.For<float>());
  }
  Status Reduce(const LocalStep& step, const LeafSum<double>& mine, double* out, ReduceTraffic& traffic) override {
    return ReduceT(step, mine, out, traffic, scratch_.For<double>());
  }

 private:
  template <typename T>
  static Status ReduceT(const LocalStep& step, const LeafSum<T>& mine, T* out, ReduceTraffic& traffic,
                        ReduceScratch::Of<T>& scratch) {
    Communicator& comm = *step.comm;
    const int n = comm.size(), p = static_cast<int>(step.local.size());
    int j = 0;
    while (j < p && step.local[static_cast<size_t>(j)] != comm.rank()) ++j;
    if (j == p) return InvalidArgument("LocalStep: this rank is not among its host's ranks");
    const size_t count = mine.count();
    auto share_of = [&](int i) { return ElementRange(count, i, p); };
    const auto [lo, hi] = share_of(j);
    const size_t len = hi - lo;
    CountingSender sender(comm, step.host_of, traffic);

    const std::vector<TreeNode> my_nodes = mine.nodes();
    size_t packed = 0;  // scratch.packs in use, alive until FlushSends
    for (int s = 1; s < p; ++s) {
      const int i = (j + s) % p;
      const auto [to_lo, to_hi] = share_of(i);
      const size_t to_len = to_hi - to_lo;
      if (to_len == 0 || my_nodes.empty()) continue;
      const int dst = step.local[static_cast<size_t>(i)];
      if (my_nodes.size() == 1) {  // contiguous already: no copy
        GL_RETURN_IF_ERROR(sender.Post(dst, kTagLocal, mine.values(0) + to_lo, to_len * sizeof(T)));
        continue;
      }
      T* pack = scratch.Pack(packed++, my_nodes.size() * to_len);
      for (size_t q = 0; q < my_nodes.size(); ++q) {
        std::memcpy(pack + q * to_len, mine.values(q) + to_lo, to_len * sizeof(T));
      }
      GL_RETURN_IF_ERROR(sender.Post(dst, kTagLocal, pack, my_nodes.size() * to_len * sizeof(T)));
    }
    std::vector<NodeValues<T>> parts;
    for (size_t q = 0; q < my_nodes.size(); ++q) parts.push_back({my_nodes[q], mine.values(q) + lo});
    if (scratch.received.size() < static_cast<size_t>(p)) scratch.received.resize(static_cast<size_t>(p));
    for (int s = 1; s < p && len > 0; ++s) {
      const int i = (j - s + p) % p;
      const int src = step.local[static_cast<size_t>(i)];
      const auto [first, end] = LeafRange(src, n, step.leaves);
      const std::vector<TreeNode> nodes = MaximalNodes(step.leaves, first, end);
      if (nodes.empty()) continue;
      std::vector<T>& buffer = scratch.received[static_cast<size_t>(i)];
      buffer.resize(nodes.size() * len);
      GL_RETURN_IF_ERROR(comm.Recv(src, kTagLocal, buffer.data(), buffer.size() * sizeof(T)));
      for (size_t q = 0; q < nodes.size(); ++q) parts.push_back({nodes[q], buffer.data() + q * len});
    }
    for (size_t q = 0; q < step.host_nodes.size() && len > 0; ++q) {
      EvaluateTree(step.host_nodes[q], parts, len, out + q * len);
    }
    return comm.FlushSends();
  }

  ReduceScratch scratch_;
};

}  // namespace

std::unique_ptr<LocalReducer> MakeCpuLocalReducer() { return std::make_unique<CpuLocalReducer>(); }

}  // namespace gpulaunch::rt
