// Deterministic collectives (DESIGN.md level L2, and L3 "exact" for sums).
//
// Allreduce/Reduce/ReduceScatter of float32 and float64 take each rank's
// LeafSum and give every rank the same bits as a one-process run of the same
// leaves, for any rank count and any rank -> host mapping (see
// reduction_tree.h). Two algorithms give those same bits:
//   - flat (algo=tree-rs-ag): reduce-scatter by element range (pairwise
//     exchanges of the ranks' tree nodes; the owner evaluates the fixed
//     tree), then an allgather of the ranges. Every rank sends its nodes to
//     every other rank, wherever it runs.
//   - hierarchical (algo=hier-rs-ag, hierarchical_reduce.h): combine inside
//     each host first, then inside each leaf switch when the switches are
//     known, then exchange only what each switch (host) combined, then
//     spread back down. Needs every rank's host (and switch).
// kAuto picks the hierarchical one when the ranks span more than one host.
//
// Fail closed: Create() exchanges the reduction-plan fingerprint (algorithm,
// host and switch maps, leaves, dtype, tree) and refuses when any rank
// differs.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/hierarchical_reduce.h"
#include "runtime/leaf_sum.h"
#include "runtime/superaccumulator.h"

namespace gpulaunch::rt {

enum class ElementType { kFloat32, kFloat64 };

// kHierarchicalHostsOnly: the hierarchy stops at hosts even when the
// switches are known (they still count bytes): for comparison, as kFlat is.
enum class ReduceAlgorithm { kAuto, kFlat, kHierarchical, kHierarchicalHostsOnly };

struct ReduceConfig {
  // Not an aggregate, so that {leaves, type} stays a complete initialiser.
  ReduceConfig(int leaves_ = 64, ElementType type_ = ElementType::kFloat32,
               ReduceAlgorithm algorithm_ = ReduceAlgorithm::kAuto, std::vector<int> host_of_rank_ = {},
               std::vector<int> switch_of_rank_ = {})
      : leaves(leaves_),
        type(type_),
        algorithm(algorithm_),
        host_of_rank(std::move(host_of_rank_)),
        switch_of_rank(std::move(switch_of_rank_)) {}
  int leaves;
  ElementType type;
  ReduceAlgorithm algorithm;
  // Host of every rank of the communicator, by rank: any labels, only which
  // ranks share one matters. Empty: the communicator's own placement
  // (Communicator::placement(): libgpurt's world and every group split from
  // it know theirs), unless the algorithm is kFlat; with none known, one host.
  std::vector<int> host_of_rank;
  // Leaf switch of every rank, by rank (any labels), e.g. from
  // Runtime::switches(); empty: the communicator's placement's when
  // host_of_rank was taken from it too, else unknown. Used by the hierarchical algorithm
  // when switches group hosts (RankHierarchy); ranks of one host must name
  // the same switch.
  std::vector<int> switch_of_rank;
  // The hierarchical algorithm's step inside a host; null: the CPU one
  // (MakeCpuLocalReducer). Not part of the fingerprint: every implementation
  // gives the same bits.
  std::shared_ptr<LocalReducer> local_reducer;
};

// The algorithm kAuto resolves to: hierarchical when host_of_rank names more
// than one host, flat otherwise.
ReduceAlgorithm ResolvedAlgorithm(const ReduceConfig& config);
// "gpurt-reduce/v1 algo=tree-rs-ag leaves=64 dtype=f32 tree=balanced-ceil-left
// kernel=elementwise-add"; the hierarchical one adds "hosts=H map=<digest>",
// or "hosts=H switches=S map=<digest>" with a switch level.
std::string ReductionPlanText(const ReduceConfig& config);
// First 16 hex digits of the SHA-256 of the plan text.
std::string ReductionFingerprint(const ReduceConfig& config);

// `config` with the communicator's placement filled in where it names no
// hosts and its algorithm is not kFlat (what Create and the exact sums use).
ReduceConfig WithCommunicatorsPlacement(const Communicator& comm, const ReduceConfig& config);

class DeterministicReducer {
 public:
  // Collective: every rank of `comm` calls it. Fails (on every rank) when the
  // ranks' fingerprints differ.
  static StatusOr<DeterministicReducer> Create(Communicator& comm, const ReduceConfig& config);

  // The configuration with its algorithm resolved and host (switch) labels
  // made dense (0.. by first appearance in rank order).
  const ReduceConfig& config() const { return config_; }
  const RankHierarchy& hierarchy() const { return hierarchy_; }
  const std::string& fingerprint() const { return fingerprint_; }
  // Bytes this rank's reductions sent so far, to its own host and to others,
  // and to other switches when the switches are known (ranks of an unknown
  // host map count as one host).
  const ReduceTraffic& traffic() const { return traffic_; }

  // out: count elements, identical on every rank.
  template <typename T>
  Status Allreduce(const LeafSum<T>& mine, T* out);
  // out: count elements on `root` only (others may pass nullptr).
  template <typename T>
  Status Reduce(const LeafSum<T>& mine, T* out, int root);
  // out: this rank's elements ElementRange(count, rank, size).
  template <typename T>
  Status ReduceScatter(const LeafSum<T>& mine, T* out);

 private:
  DeterministicReducer(Communicator& comm, ReduceConfig config, RankHierarchy hierarchy, std::string fingerprint)
      : comm_(&comm), config_(std::move(config)), hierarchy_(std::move(hierarchy)), fingerprint_(std::move(fingerprint)) {}
  template <typename T>
  Status CheckInput(const LeafSum<T>& mine) const;
  // This rank's ElementRange of the root, by the configured algorithm.
  template <typename T>
  Status ReduceScatterRange(const LeafSum<T>& mine, T* out);

  Communicator* comm_;
  ReduceConfig config_;
  RankHierarchy hierarchy_;
  std::string fingerprint_;
  ReduceTraffic traffic_;
  ReduceScratch scratch_;
};

// Allgather of equal-sized blocks; out: size() * count elements in rank order.
template <typename T>
Status Allgather(Communicator& comm, const T* in, size_t count, T* out);
// Gather to root; out used on root only.
template <typename T>
Status Gather(Communicator& comm, const T* in, size_t count, T* out, int root);

// Exact (L3) sums: the correctly rounded sum of every rank's accumulated
// values, the same bits everywhere and for any order or rank count.
// `host_of_rank` and `switch_of_rank` empty: the communicator's placement.
// With `host_of_rank` naming more than one host, the accumulators are merged
// inside each host first and one a host crosses (to rank 0, which rounds and
// spreads the result down the hierarchy): (hosts - 1) accumulators between
// hosts instead of every rank's to every rank.
StatusOr<double> ExactAllreduceSum(Communicator& comm, const Superaccumulator& mine,
                                   const std::vector<int>& host_of_rank = {},
                                   const std::vector<int>& switch_of_rank = {});
// Elementwise exact sums of vectors (on request: 552 bytes travel per
// element), each rounded once into T (float or double). With `host_of_rank`
// (every rank's host) naming more than one host, the accumulators are merged
// inside each host before any crosses to another (hierarchical_reduce.h),
// and the results spread through switches too when `switch_of_rank` names
// them; the bits are the same either way.
template <typename T>
Status ExactAllreduce(Communicator& comm, const std::vector<Superaccumulator>& mine, T* out,
                      const std::vector<int>& host_of_rank = {}, const std::vector<int>& switch_of_rank = {});

}  // namespace gpulaunch::rt
