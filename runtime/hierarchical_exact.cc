// The exact (L3) elementwise allreduce across hosts: superaccumulators are
// merged inside each host first, so each host sends its elements' merged
// accumulators once, not every rank's. Merging is exact and order-free, so
// any grouping gives the same bits; what the hierarchy changes is bytes
// (552 a superaccumulator).
#include <algorithm>

#include "runtime/hierarchical_reduce.h"

namespace gpulaunch::rt {
namespace {

constexpr int kTagExactLocal = 0x6721;
constexpr int kTagExactCross = 0x6722;
constexpr size_t kWords = Superaccumulator::kWireWords;

// Elements [lo, hi) of `accs` (indexed from `base`) as wire words.
std::vector<int64_t> Wire(const std::vector<Superaccumulator>& accs, size_t base, size_t lo, size_t hi) {
  std::vector<int64_t> wire((hi - lo) * kWords);
  for (size_t i = lo; i < hi; ++i) accs[i - base].ToWire(wire.data() + (i - lo) * kWords);
  return wire;
}

}  // namespace

template <typename T>
Status HierarchicalExactAllreduce(Communicator& comm, const RankHierarchy& hierarchy,
                                  const std::vector<Superaccumulator>& mine, T* out, ReduceTraffic& traffic) {
  const std::vector<int>& host_of = hierarchy.host_of();
  const int n = comm.size(), me = comm.rank();
  const size_t count = mine.size();
  std::vector<int> local;
  for (int r = 0; r < n; ++r) {
    if (host_of[static_cast<size_t>(r)] == host_of[static_cast<size_t>(me)]) local.push_back(r);
  }
  const int p = static_cast<int>(local.size());
  const int j = static_cast<int>(std::find(local.begin(), local.end(), me) - local.begin());
  CountingSender sender(comm, host_of, traffic, &hierarchy.switch_of());

  // A: inside the host, local rank j merges every local rank's elements of its share.
  const auto [lo, hi] = ElementRange(count, j, p);
  std::vector<Superaccumulator> merged(mine.begin() + static_cast<long>(lo), mine.begin() + static_cast<long>(hi));
  std::vector<std::vector<int64_t>> packs;
  for (int s = 1; s < p; ++s) {
    const auto [to_lo, to_hi] = ElementRange(count, (j + s) % p, p);
    packs.push_back(Wire(mine, 0, to_lo, to_hi));
    GL_RETURN_IF_ERROR(sender.Post(local[static_cast<size_t>((j + s) % p)], kTagExactLocal, packs.back().data(),
                                   packs.back().size() * sizeof(int64_t)));
  }
  std::vector<int64_t> incoming;
  for (int s = 1; s < p && hi > lo; ++s) {
    incoming.resize((hi - lo) * kWords);
    GL_RETURN_IF_ERROR(comm.Recv(local[static_cast<size_t>((j - s + p) % p)], kTagExactLocal, incoming.data(),
                                 incoming.size() * sizeof(int64_t)));
    for (size_t i = 0; i < merged.size(); ++i) merged[i].Merge(Superaccumulator::FromWire(incoming.data() + i * kWords));
  }
  GL_RETURN_IF_ERROR(comm.FlushSends());
  packs.clear();

  // B: rank t finishes ElementRange(count, t, n); each rank sends it the part
  // of its host's merged share that falls there.
  const auto [f_lo, f_hi] = ElementRange(count, me, n);
  for (int s = 1; s < n; ++s) {
    const int dst = (me + s) % n;
    const auto [d_lo, d_hi] = ElementRange(count, dst, n);
    const size_t a = std::max(lo, d_lo), b = std::min(hi, d_hi);
    if (a >= b) continue;
    packs.push_back(Wire(merged, lo, a, b));
    GL_RETURN_IF_ERROR(
        sender.Post(dst, kTagExactCross, packs.back().data(), packs.back().size() * sizeof(int64_t)));
  }
  std::vector<Superaccumulator> total(f_hi - f_lo);
  if (const size_t a = std::max(lo, f_lo), b = std::min(hi, f_hi); a < b) {
    for (size_t i = a; i < b; ++i) total[i - f_lo].Merge(merged[i - lo]);
  }
  for (int s = 1; s < n && f_hi > f_lo; ++s) {
    const int src = (me - s + n) % n;
    int src_p = 0, src_j = 0;
    for (int r = 0; r < n; ++r) {
      if (host_of[static_cast<size_t>(r)] != host_of[static_cast<size_t>(src)]) continue;
      if (r == src) src_j = src_p;
      ++src_p;
    }
    const auto [s_lo, s_hi] = ElementRange(count, src_j, src_p);
    const size_t a = std::max(s_lo, f_lo), b = std::min(s_hi, f_hi);
    if (a >= b) continue;
    incoming.resize((b - a) * kWords);
    GL_RETURN_IF_ERROR(comm.Recv(src, kTagExactCross, incoming.data(), incoming.size() * sizeof(int64_t)));
    for (size_t i = a; i < b; ++i) total[i - f_lo].Merge(Superaccumulator::FromWire(incoming.data() + (i - a) * kWords));
  }
  GL_RETURN_IF_ERROR(comm.FlushSends());
  for (size_t i = 0; i < total.size(); ++i) {
    out[f_lo + i] = std::is_same_v<T, float> ? total[i].RoundToFloat() : static_cast<T>(total[i].RoundToDouble());
  }
  // C: the rounded values, as the tree reductions spread theirs.
  return HierarchicalAllgatherRanges(comm, hierarchy, out, count, traffic);
}

template Status HierarchicalExactAllreduce(Communicator&, const RankHierarchy&,
                                           const std::vector<Superaccumulator>&, float*, ReduceTraffic&);
template Status HierarchicalExactAllreduce(Communicator&, const RankHierarchy&,
                                           const std::vector<Superaccumulator>&, double*, ReduceTraffic&);

}  // namespace gpulaunch::rt
