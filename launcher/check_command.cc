#include "launcher/check_command.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "launcher/exit_codes.h"
#include "launcher/health_check.h"
#include "launcher/host_command.h"
#include "launcher/options.h"
#include "launcher/storage_check.h"

namespace gpulaunch {
namespace {

constexpr char kHelp[] =
    "usage: gpulaunch check --storage PATH [-H LIST | --hostfile FILE] [--size MiB] [--budget S]\n"
    "                       [--format table|json] [--allow-run-as-root]\n"
    "       gpulaunch check --slurm-health [--node NAME] [--expect-gpus N]\n"
    "From every host at once (through mpirun, or srun inside an allocation): write --size MiB (default 16)\n"
    "under PATH, read it back, time create/stat/unlink, then read every other host's file and compare. Reports\n"
    "throughput and metadata latency per host with the spread, and fails naming each host that sees\n"
    "missing or different data. Each host gets --budget seconds (default 60) per phase.\n"
    "Exit 0 when every host passes, 1 when one does not, 2 for usage errors.\n";

std::string NewToken() {
  std::random_device rd;
  char buf[24];
  std::snprintf(buf, sizeof buf, "%08x%04x", rd(), rd() & 0xffff);
  return buf;
}

// Runs one probe phase on every host at once; `line` turns a host's output
// into its result, `failed` makes the result for a host that gave none.
template <typename Result>
std::map<std::string, Result> Phase(const HostCommandTarget& target, const CheckOptions& o,
                                    const std::function<std::vector<std::string>(const std::string&)>& program,
                                    const std::function<StatusOr<Result>(const std::string&)>& parse) {
  std::vector<Result> results(target.hosts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < target.hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      const std::string& host = target.hosts[i];
      const CapturedRun run = RunOnHost(host, program(host), target.use_srun, o.allow_run_as_root, o.budget_s * 1000);
      Result r;
      r.host = host;
      if (run.timed_out) {
        r.error = "no answer within --budget " + std::to_string(o.budget_s) + " s";
      } else if (auto parsed = parse(run.out); run.wait_status == 0 && parsed.ok()) {
        r = std::move(parsed).value();
        r.host = host;
      } else {
        r.error = run.wait_status != 0 ? EngineFailureReason(run, target.use_srun ? "srun" : "mpirun")
                                       : parsed.status().message();
      }
      results[i] = std::move(r);
    });
  }
  for (auto& t : threads) t.join();
  std::map<std::string, Result> by_host;
  for (Result& r : results) by_host[r.host] = std::move(r);
  return by_host;
}

}  // namespace

int RunCheckCommand(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--slurm-health") != args.end()) return RunSlurmHealthCheck(args);
  auto parsed = ParseCheckCommandLine(args);
  if (!parsed.ok()) {
    std::cerr << "gpulaunch: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const CheckOptions& o = *parsed;
  if (o.help) {
    std::cout << kHelp;
    return kExitOk;
  }
  auto target = ResolveCommandHosts(o.host_args, o.hostfile, "check");
  if (!target.ok()) {
    std::cerr << "gpulaunch: " << target.status().message() << "\n";
    return kExitUsage;
  }
  // Every host resolves PATH itself, so it must not depend on a working directory.
  const std::string path = std::filesystem::absolute(*o.storage).lexically_normal().string();
  const std::string probe = SiblingBinary("gpulaunch-probe");
  const std::string token = NewToken();
  const std::string bytes = std::to_string(static_cast<uint64_t>(o.size_mib) << 20);
  std::string writers;
  for (const std::string& h : target->hosts) writers += (writers.empty() ? "" : ",") + h;

  const auto writes = Phase<StorageWriteResult>(
      *target, o, [&](const std::string& h) { return std::vector<std::string>{probe, "storage", "write", path, token, h, bytes}; },
      ParseStorageWriteLine);
  const auto reads = Phase<StorageReadResult>(
      *target, o,
      [&](const std::string& h) {
        return std::vector<std::string>{probe, "storage", "read", path, token, h, bytes, writers};
      },
      ParseStorageReadLine);
  // Always clean up, whatever the verdict.
  Phase<StorageReadResult>(
      *target, o, [&](const std::string& h) { return std::vector<std::string>{probe, "storage", "clean", path, token, h}; },
      [](const std::string&) -> StatusOr<StorageReadResult> { return StorageReadResult(); });

  const StorageCheckReport report = AnalyzeStorage(path, static_cast<uint64_t>(o.size_mib) << 20, target->hosts, writes, reads);
  std::cout << (o.format == "json" ? StorageReportJson(report) : RenderStorageTable(report)) << std::flush;
  if (!report.ok) {
    for (const StorageHostVerdict& v : report.hosts)
      if (!v.ok) std::cerr << "gpulaunch: check --storage: " << v.host << ": " << v.reason << "\n";
  }
  return report.ok ? kExitOk : 1;
}

}  // namespace gpulaunch
