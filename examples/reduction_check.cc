// reduction_check: is a distributed sum bitwise reproducible?
//
//   gpulaunch -n K build/bin/reduction_check --elements E --seed S [options]
//
// Every rank builds its share of L logical leaves (think micro-batches) of
// seeded data spread over a huge exponent range, with exact cancellation
// between leaf pairs, subnormals and signed zeros, and reduces them. Rank 0
// prints one line `sha256 <hex>` of the result's bytes. With the default
// deterministic mode the hash is the same for every K; `--mode mpi` does the
// same with plain MPI_Allreduce over per-rank sums to show the difference;
// `--mode exact` reduces exactly (correctly rounded).
//
// Options:
//   --elements E     vector length (default 100000)
//   --seed S         data seed (default 1)
//   --leaves L       logical leaves (default 64)
//   --dtype f32|f64  element type (default f64)
//   --mode det|mpi|exact
//   --permute P      reorder ranks (MPI_Comm_split with keys from seed P), as if
//                    they ran on other hosts
//   --offset O       keep data and result O elements into their buffers
//   --split K        reduce elements [0,K) and [K,E) as two separate tensors
//   --algorithm auto|flat
//                    det mode: the reducer's default (auto: it climbs the
//                    ranks' hosts and switches, which libgpurt knows), or flat
// Diagnostics (plan fingerprint, ranks, identity of every rank's bits) go to
// stderr; the exit status is 1 when ranks disagree.
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "runtime/deterministic_reducer.h"
#include "runtime/gpurt.h"
#include "runtime/mpi_communicator.h"

using namespace gpulaunch;
using namespace gpulaunch::rt;

namespace {

struct Options {
  size_t elements = 100000;
  uint64_t seed = 1;
  int leaves = 64;
  bool f32 = false;
  std::string mode = "det";
  int permute = -1;
  size_t offset = 0;
  size_t split = 0;
  ReduceAlgorithm algorithm = ReduceAlgorithm::kAuto;
};

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Value of element i in leaf l: a pure function of (seed, leaf, element).
double Value(const Options& o, int leaf, size_t i) {
  const int max_exp = o.f32 ? 120 : 1000;
  const int min_exp = o.f32 ? -149 : -1074;
  const uint64_t pair_hash = Mix(o.seed ^ Mix(static_cast<uint64_t>(leaf / 2) * 0x100000001b3ULL + i));
  const uint64_t h = Mix(o.seed ^ Mix(static_cast<uint64_t>(leaf) * 0x100000001b3ULL + i));
  switch (h % 16) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2:  // subnormal
      return std::ldexp(static_cast<double>(h >> 40), min_exp) * ((h >> 8) & 1 ? -1 : 1);
    case 3: case 4: case 5: {  // leaf pairs (2k, 2k+1) cancel exactly
      const double mag = std::ldexp(1.0 + static_cast<double>(pair_hash >> 11) * 0x1p-53,
                                    static_cast<int>(pair_hash % (2 * max_exp)) - max_exp);
      return leaf % 2 ? -mag : mag;
    }
    default: {
      const double mag = std::ldexp(1.0 + static_cast<double>(h >> 11) * 0x1p-53,
                                    static_cast<int>((h >> 3) % (2 * max_exp)) - max_exp);
      return (h >> 9) & 1 ? -mag : mag;
    }
  }
}

template <typename T>
void FillLeaf(const Options& o, int leaf, size_t first, size_t count, T* out) {
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Value(o, leaf, first + i));
}

// Reduces elements [first, first+count) into out (count elements).
// `config`: the deterministic reducer's own, as Create resolved it (det mode).
template <typename T>
Status ReducePart(Communicator& comm, const Options& o, size_t first, size_t count, T* out, ReduceConfig* config) {
  std::vector<T> leaf_buf(o.offset + count);
  T* leaf = leaf_buf.data() + o.offset;  // --offset: misaligned on purpose
  if (o.mode == "det") {
    GL_ASSIGN_OR_RETURN(DeterministicReducer reducer,
                        DeterministicReducer::Create(comm, {o.leaves, o.f32 ? ElementType::kFloat32 : ElementType::kFloat64,
                                                            o.algorithm}));
    *config = reducer.config();
    auto sum = LeafSum<T>::ForRank(count, o.leaves, comm.rank(), comm.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) {
      FillLeaf(o, l, first, count, leaf);
      GL_RETURN_IF_ERROR(sum.AddLeaf(leaf));
    }
    return reducer.Allreduce(sum, out);
  }
  const auto [lo, hi] = LeafRange(comm.rank(), comm.size(), o.leaves);
  if (o.mode == "exact") {
    std::vector<Superaccumulator> acc(count);
    for (int l = lo; l < hi; ++l) {
      FillLeaf(o, l, first, count, leaf);
      for (size_t i = 0; i < count; ++i) acc[i].Add(static_cast<double>(leaf[i]));
    }
    return ExactAllreduce(comm, acc, out);  // rounded once, into T
  }
  // mpi: what most codes do: sum own leaves in a loop, then MPI_Allreduce.
  std::vector<T> local(count, T(0));
  for (int l = lo; l < hi; ++l) {
    FillLeaf(o, l, first, count, leaf);
    for (size_t i = 0; i < count; ++i) local[i] += leaf[i];
  }
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  MPI_Allreduce(local.data(), out, static_cast<int>(count), o.f32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, mpi->comm());
  return Status::Ok();
}

template <typename T>
Status Run(Communicator& comm, const Options& o, std::string* hash, ReduceConfig* config) {
  std::vector<T> result_buf(o.offset + o.elements);
  T* result = result_buf.data() + o.offset;
  const size_t split = std::min(o.split, o.elements);
  if (split > 0) {
    GL_RETURN_IF_ERROR(ReducePart<T>(comm, o, 0, split, result, config));
    GL_RETURN_IF_ERROR(ReducePart<T>(comm, o, split, o.elements - split, result + split, config));
  } else {
    GL_RETURN_IF_ERROR(ReducePart<T>(comm, o, 0, o.elements, result, config));
  }
  *hash = Sha256Hex(std::string_view(reinterpret_cast<const char*>(result), o.elements * sizeof(T)));
  return Status::Ok();
}

int Usage(const char* why) {
  std::fprintf(stderr, "reduction_check: %s\nusage: reduction_check [--elements E] [--seed S] [--leaves L] "
               "[--dtype f32|f64] [--mode det|mpi|exact] [--permute P] [--offset O] [--split K] [--algorithm auto|flat]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Usage(("missing value for " + a).c_str());
    const std::string v = argv[++i];
    try {
      if (a == "--elements") o.elements = std::stoull(v);
      else if (a == "--seed") o.seed = std::stoull(v);
      else if (a == "--leaves") o.leaves = std::stoi(v);
      else if (a == "--dtype" && (v == "f32" || v == "f64")) o.f32 = v == "f32";
      else if (a == "--mode" && (v == "det" || v == "mpi" || v == "exact")) o.mode = v;
      else if (a == "--permute") o.permute = std::stoi(v);
      else if (a == "--offset") o.offset = std::stoull(v);
      else if (a == "--split") o.split = std::stoull(v);
      else if (a == "--algorithm" && (v == "auto" || v == "flat"))
        o.algorithm = v == "flat" ? ReduceAlgorithm::kFlat : ReduceAlgorithm::kAuto;
      else return Usage(("unknown option or value: " + a + " " + v).c_str());
    } catch (const std::exception&) {
      return Usage(("bad number for " + a + ": " + v).c_str());
    }
  }
  if (o.leaves < 1) return Usage("--leaves must be at least 1");
  auto rt = Init(&argc, &argv);
  if (!rt.ok()) {
    std::fprintf(stderr, "reduction_check: %s\n", rt.status().message().c_str());
    return 1;
  }
  Communicator* comm = &(*rt)->world();
  std::unique_ptr<Communicator> permuted;
  if (o.permute >= 0) {
    std::vector<int> order(comm->size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(o.permute)));
    auto split = comm->Split(0, order[comm->rank()]);
    if (!split.ok()) return 1;
    permuted = std::move(split).value();
    comm = permuted.get();
  }
  std::string hash;
  // The plan a default reducer takes here (the hosts' hierarchy when the
  // ranks span hosts); in det mode, the one it took.
  ReduceConfig plan =
      WithCommunicatorsPlacement(*comm, {o.leaves, o.f32 ? ElementType::kFloat32 : ElementType::kFloat64, o.algorithm});
  plan.algorithm = ResolvedAlgorithm(plan);
  const Status s = o.f32 ? Run<float>(*comm, o, &hash, &plan) : Run<double>(*comm, o, &hash, &plan);
  if (!s.ok()) {
    std::fprintf(stderr, "reduction_check: rank %d: %s\n", comm->rank(), s.message().c_str());
    return 1;
  }
  // Does every rank hold the same bits?
  std::vector<char> all(64 * static_cast<size_t>(comm->size()));
  if (!comm->Allgather(hash.data(), 64, all.data()).ok()) return 1;
  bool identical = true;
  for (int r = 1; r < comm->size(); ++r) identical &= std::memcmp(all.data(), all.data() + 64 * r, 64) == 0;
  if (comm->rank() == 0) {
    std::fprintf(stderr, "reduction_check: mode %s, %d rank(s), %zu elements, plan %s (%s), every rank %s\n",
                 o.mode.c_str(), comm->size(), o.elements, ReductionFingerprint(plan).c_str(),
                 ReductionPlanText(plan).c_str(), identical ? "holds identical bits" : "DOES NOT hold identical bits");
    std::printf("sha256 %s\n", hash.c_str());
    std::fflush(stdout);
  }
  return identical ? 0 : 1;
}
