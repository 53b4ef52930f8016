// Uses the installed headers and library: Init, a layout, a deterministic sum.
#include <cstdio>
#include <vector>

#include "runtime/deterministic_reducer.h"
#include "runtime/gpurt.h"
#include "runtime/process_groups.h"

int main(int argc, char** argv) {
  using namespace gpulaunch::rt;
  auto rt = Init(&argc, &argv);
  if (!rt.ok()) return 1;
  Communicator& world = (*rt)->world();
  auto reducer = DeterministicReducer::Create(world, {8, ElementType::kFloat64});
  auto sum = LeafSum<double>::ForRank(2, 8, world.rank(), world.size());
  for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) {
    const double leaf[2] = {1.0 * l, 0.5};
    if (!sum.AddLeaf(leaf).ok()) return 1;
  }
  std::vector<double> out(2);
  if (!reducer.ok() || !reducer->Allreduce(sum, out.data()).ok()) return 1;
  if (world.rank() == 0) std::printf("consumer: %g %g on %d ranks, plan %s\n", out[0], out[1], world.size(),
                                     reducer->fingerprint().c_str());
  return out[0] == 28.0 && out[1] == 4.0 ? 0 : 1;
}
