#include "launcher/check/check_command.h"

#include <arpa/inet.h>
#include <sys/wait.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "common/file_write.h"
#include "common/link_table.h"
#include "launcher/base/child_environment.h"
#include "launcher/base/process.h"
#include "launcher/base/rank_cgroup.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/check/health_check.h"
#include "launcher/check/host_command.h"
#include "launcher/core/options.h"
#include "launcher/check/preflight.h"
#include "launcher/check/storage_check.h"
#include "slurm/kill_wait.h"

namespace gpulaunch {
namespace {


// 128 random bits in hex: the storage check's scratch folder is named by it.
std::string NewToken() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

// Runs one probe phase on every host at once; `line` turns a host's output
// into its result, `failed` makes the result for a host that gave none.
template <typename Result>
std::map<std::string, Result> Phase(const HostCommandTarget& target, const CheckOptions& o,
                                    const std::function<std::vector<std::string>(const std::string&)>& program,
                                    const std::function<StatusOr<Result>(const std::string&)>& parse,
                                    const std::map<std::string, std::string>& env = {}) {
  std::vector<Result> results(target.hosts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < target.hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      const std::string& host = target.hosts[i];
      const CapturedRun run = RunOnHost(host, program(host), *target.engine, o.allow_run_as_root, o.budget_s * 1000, env);
      Result r;
      r.host = host;
      if (run.timed_out) {
        r.error = "no answer within --budget " + std::to_string(o.budget_s) + " s";
      } else if (auto parsed = parse(run.out); run.wait_status == 0 && parsed.ok()) {
        r = std::move(parsed).value();
        r.host = host;
      } else {
        r.error = run.wait_status != 0 ? EngineFailureReason(run, *target.engine)
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

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A name's IPv4 addresses, in resolver order.
std::vector<std::string> Addresses(const std::string& name) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &list) != 0) return out;
  for (addrinfo* a = list; a; a = a->ai_next) {
    char ip[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, ip, sizeof ip);
    if (std::find(out.begin(), out.end(), ip) == out.end()) out.push_back(ip);
  }
  freeaddrinfo(list);
  return out;
}

// The host's addresses and the first one's name, as the launch host resolves them.
void Resolve(HostProbe& p) {
  p.addresses = Addresses(p.host);
  if (p.addresses.empty()) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, p.addresses.front().c_str(), &addr.sin_addr) != 1) return;
  char name[NI_MAXHOST] = {0};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), sizeof addr, name, sizeof name, nullptr, 0, NI_NAMEREQD) != 0) {
    return;
  }
  p.reverse_name = name;
  const std::vector<std::string> back = Addresses(name);
  p.reverse_confirms = std::find(back.begin(), back.end(), p.addresses.front()) != back.end();
}

// Asks every host for its facts at once (one thread per host, each bounded
// by --budget); a host that cannot answer gets its reason in `error`.
std::vector<HostProbe> ProbeHosts(const CheckOptions& o, const HostCommandTarget& target) {
  const std::string probe = SiblingBinary("gpulaunch-probe");
  std::vector<HostProbe> probes(target.hosts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < target.hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      HostProbe& p = probes[i];
      p.host = target.hosts[i];
      Resolve(p);
      std::vector<std::string> program = {probe, "facts", p.host};
      if (o.binary) program.push_back(*o.binary);
      p.asked_s = Now();
      const CapturedRun run = RunOnHost(p.host, program, *target.engine, o.allow_run_as_root, o.budget_s * 1000);
      p.answered_s = Now();
      if (run.timed_out) {
        p.error = "no answer within --budget " + std::to_string(o.budget_s) + " s";
      } else if (run.wait_status != 0) {
        p.error = EngineFailureReason(run, *target.engine);
      } else if (auto facts = ParseFactsOutput(run.out, "facts of " + p.host); facts.ok()) {
        p.facts = std::move(facts).value();
      } else {
        p.error = facts.status().message();
      }
    });
  }
  for (auto& t : threads) t.join();
  return probes;
}

// Names every failed check on stderr; true when every host passed.
bool ReportFailures(const std::vector<PreflightHost>& verdicts) {
  bool ok = true;
  for (const PreflightHost& h : verdicts) {
    if (h.ok()) continue;
    ok = false;
    for (const CheckOutcome& c : h.checks)
      if (c.state == CheckState::kFail) std::cerr << "gpulaunch: check: " << h.host << ": " << c.name << ": " << c.detail << "\n";
  }
  return ok;
}

// What Hydra's own protocol still allows, said wherever a launch will use it
// (docs/security.md, "Hydra").
constexpr const char* kHydraControlPortWarning =
    "warning: hydra: Hydra's control port has no authentication. gpulaunch keeps the job's environment and "
    "secret off it, binds it to the job's address and refuses local peers of other users, but any peer on "
    "another host that reaches that address can fail the job (exit 125) by connecting first or hanging up; "
    "launch with Open MPI (--launcher mpirun) or srun where the job's network is shared with others "
    "(docs/security.md)\n";

// Inside an allocation: what Slurm's configuration lets through
// (docs/launch.md, "Stopped by Slurm").
void WarnAboutSlurmsHardEnds() {
  const CapturedRun config = RunCaptured({"scontrol", "show", "config"}, EnvironmentWith({}), 5000);
  if (!config.Succeeded()) return;
  // A rank's own cgroup (launcher/base/rank_cgroup.h) holds what escaped
  // its rank even then; probed on this host, as the shims would make it.
  if (ParseProctrackType(config.out) == "proctrack/linuxproc") {
    if (const std::string why = WhyNoRankCgroup(); !why.empty()) {
      std::cerr << "warning: slurm: ProctrackType is proctrack/linuxproc and a rank's shim cannot make a cgroup "
                   "of its own here ("
                << why
                << "): when a step is SIGKILLed at once (scancel --signal=KILL, kill -9 of gpulaunch), a process "
                   "that escaped its rank (setsid, a double fork) can outlive it, since neither Slurm nor the "
                   "killed shim can find it; proctrack/cgroup, or a cgroup v2 subtree delegated to the job's "
                   "user, closes that (docs/launch.md)\n";
    }
  }
  if (const auto kill_wait = ParseKillWaitSeconds(config.out); kill_wait && *kill_wait < 1 + kStopMarginS) {
    std::cerr << "warning: slurm: KillWait is " << *kill_wait << " s: a job stopped by scancel or its time limit "
              << "has under " << kStopMarginS << " s to stop its ranks and write its summary\n";
  }
}

int RunPreflight(const CheckOptions& o, const HostCommandTarget& target) {
  std::optional<std::map<std::string, HostFacts>> baseline;
  if (o.compare) {
    auto text = ReadTextFile(*o.compare, "baseline");
    auto parsed = text.ok() ? ParseBaseline(*text, *o.compare) : StatusOr<std::map<std::string, HostFacts>>(text.status());
    if (!parsed.ok()) {
      std::cerr << "gpulaunch: check --compare: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    baseline = std::move(parsed).value();
  }
  const std::vector<HostProbe> probes = ProbeHosts(o, target);
  PreflightOptions options;
  options.max_clock_skew_s = o.max_clock_skew_s;
  options.binary_given = o.binary.has_value();
  // As a launch of it with the same --launcher would choose.
  bool hydra = o.launcher == "hydra";
  if (o.binary) {
    if (auto choice = ChooseEngine(o.launcher, *o.binary); !choice.ok()) {
      options.binary_engine_refusal = choice.status().message();
    } else {
      hydra = choice->engine->Name() == "hydra";
    }
  }
  const std::vector<PreflightHost> verdicts = EvaluatePreflight(probes, options);
  std::cout << (o.format == "json" ? PreflightJson(verdicts) : RenderPreflightTable(verdicts));
  if (baseline) {
    const std::vector<std::string> changes = CompareWithBaseline(*baseline, probes);
    std::cout << (changes.empty() ? "no changes since " + *o.compare + "\n"
                                  : "changes since " + *o.compare + ":\n");
    for (const std::string& c : changes) std::cout << "  " << c << "\n";
  }
  std::cout << std::flush;
  if (hydra) std::cerr << kHydraControlPortWarning;
  if (InSlurmAllocation()) WarnAboutSlurmsHardEnds();
  if (o.save) {
    if (Status s = WriteFileAtomically(*o.save, BaselineJson(probes)); !s.ok()) {
      std::cerr << "gpulaunch: check --save: " << s.message() << "\n";
      return 1;
    }
  }
  return ReportFailures(verdicts) ? kExitOk : 1;
}

// --links: the link survey of the same hosts (gpulaunch-linkcheck --hosts
// ... --concurrent --quick), saved where launches and plan read it; its
// report follows the checks' (on stderr with --format json). Its exit code.
int MeasureLinks(const CheckOptions& o, const HostCommandTarget& target) {
  if (target.hosts.size() < 2) {
    std::cerr << "gpulaunch: check --links: one host, no link between hosts to measure\n";
    return kExitOk;
  }
  const std::string path = *o.links == "default" ? DefaultLinkTablePath() : *o.links;
  std::vector<std::string> argv = {SiblingBinary("gpulaunch-linkcheck"), "--hosts", Join(target.hosts, ","),
                                   "--concurrent", "--quick", "--links", path};
  if (o.allow_run_as_root) argv.push_back("--allow-run-as-root");
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), 3600 * 1000);
  (o.format == "json" ? std::cerr : std::cout) << run.out << std::flush;
  std::cerr << run.err;
  if (run.timed_out) std::cerr << "gpulaunch: check --links: the link survey took over an hour; stopped\n";
  return WIFEXITED(run.wait_status) && !run.timed_out ? WEXITSTATUS(run.wait_status) : 1;
}

}  // namespace

int RunCheckCommand(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--slurm-health") != args.end()) return RunSlurmHealthCheck(args);
  auto parsed = ParseCheckCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const CheckOptions& o = *parsed;
  if (o.help) {
    std::cout << CheckHelpText();
    return kExitOk;
  }
  auto target = ResolveCommandHosts(o.host_args, o.hostfile, "check", o.launcher);
  if (!target.ok()) return Fail(target.status());
  if (!o.storage) {
    const int checks = RunPreflight(o, *target);
    if (!o.links || checks == kExitUsage) return checks;
    const int links = MeasureLinks(o, *target);
    return checks != kExitOk ? checks : links;
  }
  // Every host resolves PATH itself, so it must not depend on a working directory.
  const std::string path = std::filesystem::absolute(*o.storage).lexically_normal().string();
  const std::string probe = SiblingBinary("gpulaunch-probe");
  const std::string token = NewToken();
  const std::string bytes = std::to_string(static_cast<uint64_t>(o.size_mib) << 20);
  std::string writers;
  for (const std::string& h : target->hosts) writers += (writers.empty() ? "" : ",") + h;

  const std::map<std::string, std::string> env = {{kStorageTokenEnv, token}};  // never argv: ps shows it to all
  const auto writes = Phase<StorageWriteResult>(
      *target, o, [&](const std::string& h) { return std::vector<std::string>{probe, "storage", "write", path, h, bytes}; },
      ParseStorageWriteLine, env);
  const auto reads = Phase<StorageReadResult>(
      *target, o,
      [&](const std::string& h) { return std::vector<std::string>{probe, "storage", "read", path, h, bytes, writers}; },
      ParseStorageReadLine, env);
  // Always clean up, whatever the verdict.
  Phase<StorageReadResult>(
      *target, o, [&](const std::string& h) { return std::vector<std::string>{probe, "storage", "clean", path, h}; },
      [](const std::string&) -> StatusOr<StorageReadResult> { return StorageReadResult(); }, env);

  const StorageCheckReport report = AnalyzeStorage(path, static_cast<uint64_t>(o.size_mib) << 20, target->hosts, writes, reads);
  std::cout << (o.format == "json" ? StorageReportJson(report) : RenderStorageTable(report)) << std::flush;
  if (!report.ok) {
    for (const StorageHostVerdict& v : report.hosts)
      if (!v.ok) std::cerr << "gpulaunch: check --storage: " << v.host << ": " << v.reason << "\n";
  }
  return report.ok ? kExitOk : 1;
}

}  // namespace gpulaunch
