#include "launcher/shim/apply_slot.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/parallel_layout.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

std::optional<int> IntVar(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (!v) return std::nullopt;
  const auto n = ParseInt(v);
  if (!n) return std::nullopt;
  return static_cast<int>(*n);
}

constexpr int kMpolPreferred = 1;  // <numaif.h> MPOL_PREFERRED, without libnuma

}  // namespace

StatusOr<EngineIdentity> ReadEngineIdentity(const EnvLookup& env) {
  EngineIdentity id;
  if (const char* named = env(kEngineIdentityEnv); named && *named) {
    std::vector<std::string> names = Split(named, ' ');
    std::erase(names, std::string());
    if (names.size() < 2 || names.size() > 3) {
      return FailedPrecondition(std::string(kEngineIdentityEnv) + "='" + named +
                                "' must name two or three variables (rank, size, local rank)");
    }
    const auto rank = IntVar(env, names[0].c_str());
    if (!rank) {
      return FailedPrecondition("no rank from the engine: " + names[0] + " (named by " + kEngineIdentityEnv +
                                ") is not set; gpulaunch-shim must be started by the engine gpulaunch chose");
    }
    id.rank = *rank;
    id.world_size = IntVar(env, names[1].c_str());
    if (names.size() == 3) id.local_rank = IntVar(env, names[2].c_str());
    id.source = names[0] + "/" + names[1];
    return id;
  }
  if (auto r = IntVar(env, "OMPI_COMM_WORLD_RANK")) {
    id.rank = *r;
    id.world_size = IntVar(env, "OMPI_COMM_WORLD_SIZE");
    id.local_rank = IntVar(env, "OMPI_COMM_WORLD_LOCAL_RANK");
    id.source = "OMPI_COMM_WORLD_*";
    id.open_mpi = true;
  } else if (auto p = IntVar(env, "PMIX_RANK")) {
    id.rank = *p;
    id.source = "PMIX_RANK";
  } else if (auto s = IntVar(env, "SLURM_PROCID")) {
    id.rank = *s;
    id.world_size = IntVar(env, "SLURM_NTASKS");
    id.local_rank = IntVar(env, "SLURM_LOCALID");
    id.source = "SLURM_*";
  } else {
    return FailedPrecondition("no rank from the engine (none of OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID is set); "
                              "gpulaunch-shim must be started by mpirun or srun through gpulaunch");
  }
  return id;
}

namespace {
int WorldOf(const SlotTable& t) { return t.ranks.empty() ? t.world : static_cast<int>(t.ranks.size()); }
}  // namespace

Status CheckWorld(const SlotTable& t, const EngineIdentity& id) {
  const int world = WorldOf(t);
  if (id.rank < 0 || id.rank >= world) {
    return FailedPrecondition("the engine says rank " + std::to_string(id.rank) + " (" + id.source +
                              ") but the plan has ranks 0-" + std::to_string(world - 1));
  }
  if (id.world_size && *id.world_size != world) {
    return FailedPrecondition("the engine started " + std::to_string(*id.world_size) + " ranks (" + id.source +
                              ") but the plan has " + std::to_string(world) +
                              "; the engine did not follow the plan's rankfile");
  }
  return Status::Ok();
}

Status CheckSlot(const RankSlot& slot, const EngineIdentity& id,
                 const std::function<bool(const std::string&)>& is_this_host, const std::string& hostname) {
  if (id.local_rank && *id.local_rank != slot.local_rank) {
    return FailedPrecondition("rank " + std::to_string(id.rank) + " has local rank " + std::to_string(*id.local_rank) +
                              " but the plan says " + std::to_string(slot.local_rank));
  }
  if (!is_this_host(slot.host)) {
    return FailedPrecondition("rank " + std::to_string(id.rank) + " runs on '" + hostname + "' but the plan puts it on '" +
                              slot.host + "'; check that host names resolve the same everywhere");
  }
  return Status::Ok();
}

Status CheckIdentity(const SlotTable& t, const EngineIdentity& id,
                     const std::function<bool(const std::string&)>& is_this_host, const std::string& hostname) {
  GL_RETURN_IF_ERROR(CheckWorld(t, id));
  return CheckSlot(t.ranks[id.rank], id, is_this_host, hostname);
}

std::map<std::string, std::string> RankEnvironment(const SlotTable& t, int rank) {
  RankSlot slot = t.ranks[rank];
  slot.rank = rank;
  return RankEnvironment(t, slot);
}

std::map<std::string, std::string> RankEnvironment(const SlotTable& t, const RankSlot& r) {
  const int rank = r.rank;
  const int world = WorldOf(t);
  std::map<std::string, std::string> env = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_RANK", std::to_string(r.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(r.local_size)},
      {"NODE_RANK", std::to_string(r.node_rank)},
      {"GROUP_RANK", std::to_string(r.node_rank)},
      {"MASTER_ADDR", t.master_addr},
      {"MASTER_PORT", std::to_string(t.master_port)},
      {"GPULAUNCH_JOB_ID", t.job_id},
      {"GPULAUNCH_PLAN_HASH", t.plan_hash},
      {"GPULAUNCH_HOST", r.host},
      {"GPULAUNCH_CPUSET", FormatIdList(r.cpus)},
      {"GPULAUNCH_BOUND", r.bound ? "1" : "0"},
      {"GPULAUNCH_MEM_NODE", r.mem_node < 0 ? "" : std::to_string(r.mem_node)},
      {"GPULAUNCH_GPUS", FormatIdList(r.gpus)},
      {"GPULAUNCH_NIC", r.nic},
      {"GPULAUNCH_SWITCH", r.leaf_switch},
  };
  // The layout and this rank's place in it.
  if (auto layout = ParseLayout(t.layout, world); layout.ok()) {
    const auto c = layout->CoordsOf(rank);
    env["GPULAUNCH_LAYOUT"] = layout->ToString();
    env["GPULAUNCH_COORDS"] = "tp=" + std::to_string(c[kTp]) + ",pp=" + std::to_string(c[kPp]) + ",dp=" +
                              std::to_string(c[kDp]);
  }
  if (!r.gpus.empty()) {
    // Indices are in PCI bus order; make CUDA count the same way.
    env["CUDA_VISIBLE_DEVICES"] = FormatIdList(r.gpus);
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  }
  if (!r.nic.empty()) {
    env["UCX_NET_DEVICES"] = r.nic;
    if (r.nic.find(':') != std::string::npos) env["NCCL_IB_HCA"] = "=" + r.nic;
  }
  return env;
}

StatusOr<std::string> CudaVisibleDevices(const std::vector<int>& gpus, const EnvLookup& env) {
  const char* held_var = env("SLURM_STEP_GPUS") ? "SLURM_STEP_GPUS" : "SLURM_JOB_GPUS";
  const char* held_text = env(held_var);
  const char* slurm_cvd = env("CUDA_VISIBLE_DEVICES");
  if (!held_text || !slurm_cvd) return FormatIdList(gpus);
  const std::vector<std::string> held = Split(held_text, ',');
  const std::vector<std::string> names = Split(slurm_cvd, ',');
  if (held.size() != names.size()) return FormatIdList(gpus);  // not Slurm's pair: the plan's indices stand
  std::vector<std::string> out;
  for (int g : gpus) {
    const auto it = std::find(held.begin(), held.end(), std::to_string(g));
    if (it == held.end()) {
      return FailedPrecondition("the plan gives this rank GPU " + std::to_string(g) + ", but this Slurm step holds GPUs " +
                                held_text + " (" + held_var + "); plan inside the same allocation, or ask for the "
                                "GPUs with --gres=gpu:N");
    }
    out.push_back(names[static_cast<size_t>(it - held.begin())]);
  }
  return Join(out, ",");
}

Status ApplyBinding(const RankSlot& slot) {
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int pu : slot.cpus) {
    if (pu >= CPU_SETSIZE) return FailedPrecondition("CPU " + std::to_string(pu) + " is beyond this system's limit");
    CPU_SET(pu, &want);
  }
  if (sched_setaffinity(0, sizeof want, &want) != 0) {
    return FailedPrecondition("cannot bind to CPUs " + FormatIdList(slot.cpus) + ": " + std::strerror(errno) +
                              " (the plan names CPUs this host does not have, or a cgroup forbids them)");
  }
  cpu_set_t got;
  CPU_ZERO(&got);
  if (sched_getaffinity(0, sizeof got, &got) != 0 || !CPU_EQUAL(&want, &got)) {
    return FailedPrecondition("binding to CPUs " + FormatIdList(slot.cpus) + " did not hold");
  }
  if (slot.mem_node >= 0) {
    struct stat st;
    const std::string node_dir = "/sys/devices/system/node/node" + std::to_string(slot.mem_node);
    if (stat(node_dir.c_str(), &st) != 0) {
      return FailedPrecondition("memory node " + std::to_string(slot.mem_node) + " does not exist on this host");
    }
    unsigned long mask[16] = {0};
    if (slot.mem_node >= 16 * 64) return FailedPrecondition("memory node " + std::to_string(slot.mem_node) + " too large");
    mask[slot.mem_node / 64] |= 1UL << (slot.mem_node % 64);
    if (syscall(SYS_set_mempolicy, kMpolPreferred, mask, 16 * 64 + 1) != 0) {
      return FailedPrecondition("cannot prefer memory node " + std::to_string(slot.mem_node) + ": " +
                                std::strerror(errno));
    }
    int mode = -1;
    unsigned long got_mask[16] = {0};
    if (syscall(SYS_get_mempolicy, &mode, got_mask, 16 * 64 + 1, nullptr, 0) != 0 || mode != kMpolPreferred ||
        !(got_mask[slot.mem_node / 64] & (1UL << (slot.mem_node % 64)))) {
      return FailedPrecondition("memory policy for node " + std::to_string(slot.mem_node) + " did not hold");
    }
  }
  return Status::Ok();
}

}  // namespace gpulaunch
