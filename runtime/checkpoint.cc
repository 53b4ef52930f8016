#include "runtime/checkpoint.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/env.h"
#include "common/file_write.h"
#include "common/output_dir.h"

namespace fs = std::filesystem;

namespace gpulaunch::rt {
namespace {

constexpr char kMagic[] = "gpurt-checkpoint/v1";

std::string StepDir(const std::string& dir, int step) { return dir + "/step-" + std::to_string(step); }
std::string RankFile(const std::string& dir, int step, int rank) {
  return StepDir(dir, step) + "/rank-" + std::to_string(rank) + ".bin";
}


std::optional<std::string> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Every rank's `ok` flag; the first failing rank's message when one failed.
Status AllOk(Communicator& world, const Status& mine) {
  const int ok = mine.ok() ? 1 : 0;
  std::vector<int> all(static_cast<size_t>(world.size()));
  if (Status s = world.Allgather(&ok, sizeof ok, all.data()); !s.ok()) return s;
  if (!mine.ok()) return mine;
  for (int r = 0; r < world.size(); ++r) {
    if (!all[static_cast<size_t>(r)]) return FailedPrecondition("rank " + std::to_string(r) + " failed to checkpoint");
  }
  return Status::Ok();
}

}  // namespace

Checkpointer::Checkpointer(Communicator& world, std::string dir, std::string fingerprint)
    : world_(world), dir_(std::move(dir)), fingerprint_(std::move(fingerprint)) {}

Status Checkpointer::Save(int step, const std::string& state) {
  Status mine = Status::Ok();
  std::error_code ec;
  // Made and written without following a link planted in its place
  // (common/output_dir.h); the rank's part is private (job state).
  auto step_dir = OutputDir::Open(StepDir(dir_, step));
  if (!step_dir.ok()) {
    mine = step_dir.status();
  } else {
    const std::string header = std::string(kMagic) + " " + fingerprint_ + " " + std::to_string(step) + "\n";
    mine = step_dir->WriteFile("rank-" + std::to_string(world_.rank()) + ".bin", header + state, kPrivateFileMode);
  }
  // Only when every rank's file is there does `latest` move on.
  if (Status s = AllOk(world_, mine); !s.ok()) return s;
  Status committed = Status::Ok();
  if (world_.rank() == 0) {
    committed = WriteFileAtomically(dir_ + "/latest", std::to_string(step) + "\n");
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      // Only older steps: faster ranks may already be writing the next one.
      const std::string name = entry.path().filename();
      if (committed.ok() && name.rfind("step-", 0) == 0 && std::atoi(name.c_str() + 5) < step) {
        fs::remove_all(entry.path(), ec);
      }
    }
  }
  // Every rank returns only once `latest` names this step: a rank that goes
  // on (or dies) right after Save can count on the checkpoint. Without this,
  // a rank killed just after its Save returned could leave rank 0 stopped
  // before the commit, and the restart found no checkpoint.
  return AllOk(world_, committed);
}

StatusOr<std::optional<Checkpoint>> Checkpointer::LoadLatest() {
  int step = -1;
  if (world_.rank() == 0) {
    if (auto text = ReadAll(dir_ + "/latest")) step = std::atoi(text->c_str());
  }
  if (Status s = world_.Broadcast(&step, sizeof step, 0); !s.ok()) return s;
  if (step < 0) return std::optional<Checkpoint>();
  Checkpoint c;
  c.step = step;
  Status mine = Status::Ok();
  const std::string path = RankFile(dir_, step, world_.rank());
  auto bytes = ReadAll(path);
  const std::string header = std::string(kMagic) + " " + fingerprint_ + " " + std::to_string(step) + "\n";
  if (!bytes) {
    mine = NotFound(path + " is missing: the checkpoint in " + dir_ + " was written by another job or damaged");
  } else if (bytes->compare(0, header.size(), header) != 0) {
    mine = FailedPrecondition(path + " was written by an incompatible run (it begins '" +
                              bytes->substr(0, std::min(bytes->find('\n'), size_t{200})) + "', this run is '" +
                              header.substr(0, header.size() - 1) + "'); use another checkpoint directory");
  } else {
    c.state = bytes->substr(header.size());
  }
  if (Status s = AllOk(world_, mine); !s.ok()) return s;
  return std::optional<Checkpoint>(std::move(c));
}

int RestartCount() {
  const auto v = GetEnv("GPULAUNCH_RESTART_COUNT");
  return v ? std::max(0, std::atoi(v->c_str())) : 0;
}

}  // namespace gpulaunch::rt
