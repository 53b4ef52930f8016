#include "runtime/communicator.h"

namespace gpulaunch::rt {

Status Communicator::SetPlacement(MemberPlacement placement) {
  const size_t n = static_cast<size_t>(size());
  const auto fits = [n](const std::vector<int>& v) { return v.empty() || v.size() == n; };
  if (!fits(placement.host_of_rank) || !fits(placement.switch_of_rank)) {
    return InvalidArgument("a placement names " + std::to_string(placement.host_of_rank.size()) + " hosts and " +
                           std::to_string(placement.switch_of_rank.size()) + " switches for a communicator of " +
                           std::to_string(n) + " ranks");
  }
  placement_ = std::move(placement);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Split(int color, int key) {
  GL_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> part, SplitImpl(color, key));
  if (!part || placement_.host_of_rank.empty()) return part;
  // Each member's rank here, in the new communicator's order.
  const int mine = rank();
  std::vector<int> old_rank(static_cast<size_t>(part->size()));
  GL_RETURN_IF_ERROR(part->Allgather(&mine, sizeof mine, old_rank.data()));
  MemberPlacement placed;
  for (int r : old_rank) {
    placed.host_of_rank.push_back(placement_.host_of_rank[static_cast<size_t>(r)]);
    if (!placement_.switch_of_rank.empty()) placed.switch_of_rank.push_back(placement_.switch_of_rank[static_cast<size_t>(r)]);
  }
  GL_RETURN_IF_ERROR(part->SetPlacement(std::move(placed)));
  return part;
}

}  // namespace gpulaunch::rt
