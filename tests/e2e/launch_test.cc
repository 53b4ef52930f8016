// End-to-end: the real gpulaunch binary starts real ranks through the real
// mpirun on this machine. Each test asserts what a user would check by hand.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "launcher/base/process.h"
#include "launcher/job/job_folder.h"
#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// Planned cpus per rank from the --dry-run table.
std::map<int, std::string> PlannedCpus(const std::string& dry_run) {
  std::map<int, std::string> cpus;
  static const std::regex row(R"(^(\d+)\s+\S+\s+\d+\s+(\S+))");
  std::istringstream in(dry_run);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) cpus[std::stoi(m[1])] = m[2];
  }
  return cpus;
}

std::string PlanHash(const std::string& dry_run) {
  std::smatch m;
  static const std::regex re("plan hash: ([0-9a-f]{64})");
  return std::regex_search(dry_run, m, re) ? m[1].str() : "";
}

std::string AllCpus() {
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> ids;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  return FormatIdList(ids);
}

TEST(Launch, SixteenRanksOversubscribedGetTheirPlannedEnvironment) {
  const std::vector<std::string> job = {"-n", "16", "--oversubscribe", "--allow-run-as-root", "-x", "FOO=bar",
                                        kBin + "/env_dump"};
  std::vector<std::string> dry = job;
  dry.insert(dry.begin(), "--dry-run");
  const CapturedRun plan = Launch(dry);
  ASSERT_EQ(ExitCode(plan), 0) << plan.err;
  const std::string hash = PlanHash(plan.out);
  ASSERT_EQ(hash.size(), 64u) << plan.out;
  const auto planned = PlannedCpus(plan.out);
  ASSERT_EQ(planned.size(), 16u) << plan.out;

  const CapturedRun run = Launch(job);
  ASSERT_EQ(ExitCode(run), 0) << run.out << run.err;
  const auto ranks = RankLines(run.out);
  ASSERT_EQ(ranks.size(), 16u) << run.out;
  std::set<std::string> ports;
  for (const auto& [r, kv] : ranks) {
    EXPECT_EQ(kv.at("world"), "16");
    EXPECT_EQ(kv.at("local"), std::to_string(r) + "/16");
    EXPECT_EQ(kv.at("node"), "0");
    EXPECT_EQ(kv.at("hash"), hash) << "rank " << r << " runs another plan than --dry-run shows";
    EXPECT_EQ(kv.at("foo"), "bar");
    EXPECT_EQ(kv.at("cvd"), "unset");  // no GPUs here
    // Oversubscribed: unbound, i.e. every CPU this machine lets us use.
    EXPECT_EQ(kv.at("affinity"), AllCpus());
    EXPECT_EQ(kv.at("affinity") + "(unbound)", planned.at(r) + "(unbound)");
    EXPECT_EQ(kv.at("cpuset"), kv.at("affinity"));
    ports.insert(kv.at("master"));
  }
  EXPECT_EQ(ports.size(), 1u) << "MASTER_ADDR:MASTER_PORT differ between ranks";
  EXPECT_EQ(ports.begin()->rfind("127.0.0.1:", 0), 0u);
}

// gpulaunch keeps hwloc's OpenGL and OpenCL plugins out of its mpirun as out
// of itself (a cheaper start), but the job's environment stays the user's:
// the shim removes the setting before the job starts. A value the user set
// is theirs: it reaches the job untouched.
TEST(Launch, TheEngineSkipsUnusedHwlocPluginsAndTheJobNeverSeesIt) {
  if (getenv("HWLOC_PLUGINS_BLACKLIST") || getenv("HWLOC_COMPONENTS")) {
    GTEST_SKIP() << "HWLOC_PLUGINS_BLACKLIST or HWLOC_COMPONENTS is set here: gpulaunch leaves hwloc alone";
  }
  // The job's own view, then its engine's: the shim's parent (one host: mpirun).
  const std::string script =
      "echo \"job=${HWLOC_PLUGINS_BLACKLIST:-unset},${GPULAUNCH_ENGINE_ONLY:-unset}\"; "
      "tr '\\0' '\\n' < /proc/$(awk '{print $4}' /proc/$PPID/stat)/environ | grep '^HWLOC_PLUGINS_BLACKLIST='";
  const std::vector<std::string> job = {"-n", "2", "--allow-run-as-root", "--no-summary", "sh", "-c", script};
  const CapturedRun run = Launch(job);
  ASSERT_EQ(ExitCode(run), 0) << run.out << run.err;
  const auto count = [](const std::string& text, const std::string& line) {
    int n = 0;
    for (const std::string& l : Split(text, '\n')) n += l == line;
    return n;
  };
  EXPECT_EQ(count(run.out, "job=unset,unset"), 2) << run.out;
  EXPECT_EQ(count(run.out, "HWLOC_PLUGINS_BLACKLIST=hwloc_gl,hwloc_opencl"), 2)
      << "mpirun did not get the setting: " << run.out;

  std::vector<std::string> argv = job;
  argv.insert(argv.begin(), kLaunch);
  const CapturedRun own = RunCaptured(argv, EnvironmentWith({{"HWLOC_PLUGINS_BLACKLIST", "hwloc_gl"}}), 120000);
  ASSERT_EQ(ExitCode(own), 0) << own.out << own.err;
  EXPECT_EQ(count(own.out, "job=hwloc_gl,unset"), 2) << own.out;
  EXPECT_EQ(count(own.out, "HWLOC_PLUGINS_BLACKLIST=hwloc_gl"), 2) << own.out;
}

// Every rank on this host: mpirun reads the topology gpulaunch already has
// (hwloc v1 XML, in the job's folder) instead of discovering the host again.
// The setting is the engine's alone, and GPULAUNCH_TOPOLOGY_CACHE=0 leaves
// mpirun to discover the host itself.
TEST(Launch, MpirunReadsThisHostsTopologyFromGpulaunchAndTheJobNeverSeesIt) {
  if (getenv("OMPI_MCA_hwloc_base_topo_file") || getenv("GPULAUNCH_TOPOLOGY_CACHE")) {
    GTEST_SKIP() << "hwloc_base_topo_file or GPULAUNCH_TOPOLOGY_CACHE is set here";
  }
  // The job's view, then its engine's (the shim's parent: mpirun) and the
  // file the engine's setting names, which every rank's binding came from.
  const std::string script =
      "echo \"job=${OMPI_MCA_hwloc_base_topo_file:-unset}\"; "
      "f=$(tr '\\0' '\\n' < /proc/$(awk '{print $4}' /proc/$PPID/stat)/environ | "
      "sed -n 's/^OMPI_MCA_hwloc_base_topo_file=//p'); "
      "echo \"engine=${f:-unset}\"; "
      "if [ -n \"$f\" ] && grep -q '<topology>' \"$f\" && grep -q 'type=\"PU\"' \"$f\"; then echo file=v1; fi; "
      "echo \"bound=$(grep Cpus_allowed_list /proc/self/status | cut -f2)\"";
  const std::vector<std::string> job = {"-n", "2", "--allow-run-as-root", "--no-summary", "sh", "-c", script};
  std::vector<std::string> dry = {"--dry-run", "-n", "2", "--allow-run-as-root", "true"};
  const auto planned = PlannedCpus(Launch(dry).out);
  const CapturedRun run = Launch(job);
  ASSERT_EQ(ExitCode(run), 0) << run.out << run.err;
  const std::vector<std::string> lines = Split(run.out, '\n');
  const auto count = [&lines](const std::string& prefix) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
  };
  EXPECT_EQ(count("job=unset"), 2) << run.out;
  EXPECT_EQ(count("engine=/"), 2) << "mpirun did not get the setting: " << run.out;
  EXPECT_EQ(count("file=v1"), 2) << run.out;
  std::multiset<std::string> bound, want;
  for (const std::string& l : lines)
    if (l.rfind("bound=", 0) == 0) bound.insert(l.substr(6));
  for (const auto& [rank, cpus] : planned) want.insert(cpus);
  EXPECT_EQ(bound, want) << "the ranks are not bound as planned: " << run.out;

  std::vector<std::string> argv = job;
  argv.insert(argv.begin(), kLaunch);
  const CapturedRun live = RunCaptured(argv, EnvironmentWith({{"GPULAUNCH_TOPOLOGY_CACHE", "0"}}), 120000);
  ASSERT_EQ(ExitCode(live), 0) << live.out << live.err;
  const std::vector<std::string> live_lines = Split(live.out, '\n');
  EXPECT_EQ(std::count(live_lines.begin(), live_lines.end(), "engine=unset"), 2) << live.out;
}

TEST(Launch, BoundRanksRunOnTheirPlannedCores) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const std::vector<std::string> job = {"-n", std::to_string(cores), "--allow-run-as-root", kBin + "/env_dump"};
  std::vector<std::string> dry = job;
  dry.insert(dry.begin(), "--dry-run");
  const auto planned = PlannedCpus(Launch(dry).out);
  const CapturedRun run = Launch(job);
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  const auto ranks = RankLines(run.out);
  ASSERT_EQ(static_cast<int>(ranks.size()), cores);
  std::set<std::string> seen;
  for (const auto& [r, kv] : ranks) {
    EXPECT_EQ(kv.at("affinity"), planned.at(r)) << "rank " << r;
    EXPECT_TRUE(seen.insert(kv.at("affinity")).second) << "two ranks share cores " << kv.at("affinity");
  }
}

TEST(Launch, LayoutGivesEveryRankItsCoordinates) {
  const CapturedRun run = Launch({"-n", "8", "--oversubscribe", "--allow-run-as-root", "--layout", "tp=2,pp=2",
                                  kBin + "/env_dump"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  const auto ranks = RankLines(run.out);
  ASSERT_EQ(ranks.size(), 8u);
  for (const auto& [r, kv] : ranks) {
    EXPECT_EQ(kv.at("coords"), "tp=" + std::to_string(r % 2) + ",pp=" + std::to_string(r / 2 % 2) + ",dp=" +
                                   std::to_string(r / 4))
        << "rank " << r;
  }
  const CapturedRun bad = Launch({"-n", "6", "--allow-run-as-root", "--layout", "tp=4", "true"});
  EXPECT_EQ(ExitCode(bad), 2);
  EXPECT_NE(bad.err.find("does not divide"), std::string::npos) << bad.err;
}

// --network gives a launch the switch tree: every rank learns its host's leaf
// switch (what libgpurt's reductions climb through); a broken file is a usage
// error naming its line.
TEST(Launch, NetworkFileGivesEveryRankItsLeafSwitch) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const TempDir scratch("network-launch");  // removed at the end: the suite leaves nothing in /tmp
  const fs::path dir = scratch.path;
  {
    std::ofstream(dir / "topology.conf") << "# two leaves under a spine\nSwitchName=rack7 Nodes=" << host
                                         << "\nSwitchName=rack8 Nodes=elsewhere\nSwitchName=spine Switches=rack[7-8]\n";
    std::ofstream(dir / "broken.conf") << "SwitchName=rack7 Nodes=" << host << "\nSwitchName=spine Switchs=rack7\n";
  }
  const CapturedRun run = Launch({"-n", "2", "--oversubscribe", "--allow-run-as-root", "--network",
                                  (dir / "topology.conf").string(), kBin + "/env_dump"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  const auto ranks = RankLines(run.out);
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& [r, kv] : ranks) EXPECT_EQ(kv.at("switch"), "rack7") << "rank " << r;
  // Without a tree: no switch.
  const CapturedRun plain = Launch({"-n", "1", "--allow-run-as-root", kBin + "/env_dump"});
  ASSERT_EQ(ExitCode(plain), 0) << plain.err;
  EXPECT_EQ(RankLines(plain.out).at(0).at("switch"), "");
  const CapturedRun bad = Launch({"-n", "1", "--allow-run-as-root", "--network", (dir / "broken.conf").string(),
                                  kBin + "/env_dump"});
  EXPECT_EQ(ExitCode(bad), 2) << bad.err;
  EXPECT_NE(bad.err.find("broken.conf:2"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out.find("rank="), std::string::npos) << "no rank may start";
}

// Measured links (--links FILE, or the default file linkcheck saves) reach
// the plan: --dry-run names what was measured and what is nominal, the
// measured leaves become the tree, `none` turns it off, and a missing or
// broken file is a usage error naming it.
TEST(Launch, MeasuredLinksReachThePlanAndAreNamed) {
  const std::string xml = GL_TEST_DATA "/topologies/hwloc/mpibind/g4dnmetal.xml";
  const TempDir dir("links");
  fs::create_directories(dir / "state/gpulaunch");
  const std::string text =
      "{\"format\": \"gpulaunch-links/v1\", \"measured_at\": \"2026-12-05T08:00:00Z\",\n"
      " \"pairs\": [{\"hosts\": [\"node1\", \"node2\"], \"gbyte_per_s\": 0.025, \"latency_us\": 40},\n"
      "           {\"hosts\": [\"node1\", \"node3\"], \"gbyte_per_s\": 0.006, \"latency_us\": 60}],\n"
      " \"shared_memory\": [],\n"
      " \"leaves\": [{\"name\": \"leafA\", \"hosts\": [\"node1\", \"node2\"], \"uplink_gbyte_per_s\": 0.006},\n"
      "            {\"name\": \"leafB\", \"hosts\": [\"node3\"], \"uplink_gbyte_per_s\": 0.006}]}\n";
  std::ofstream(dir / "links.json") << text;
  std::ofstream(dir / "state/gpulaunch/links.json") << text;
  const std::vector<std::string> job = {"-n", "24", "--dry-run", "-H", "node3:8,node1:8,node2:8", "--topology-file",
                                        xml, "true"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = job;
    args.insert(args.begin(), extra.begin(), extra.end());
    return Launch(args);
  };
  const CapturedRun given = with({"--links", dir / "links.json"});
  ASSERT_EQ(ExitCode(given), 0) << given.err;
  EXPECT_NE(given.out.find("note: links between hosts: measured for 2 of 3 pairs (" + dir / "links.json" +
                           ", 2026-12-05T08:00:00Z); nominal for node2-node3"),
            std::string::npos) << given.out;
  EXPECT_NE(given.out.find("note: measured leaves, whose uplinks flows share: leafA: node1,node2 | leafB: node3"),
            std::string::npos) << given.out;
  EXPECT_NE(given.out.find("by the network tree"), std::string::npos) << given.out;  // the leaves are the tree
  // The default file, where linkcheck saves it.
  std::vector<std::string> args = job;
  args.insert(args.begin(), kLaunch);
  const CapturedRun by_default =
      RunCaptured(args, EnvironmentWith({{"XDG_STATE_HOME", dir / "state"}}), 120000);
  EXPECT_NE(by_default.out.find("note: links between hosts: measured for 2 of 3 pairs (" + dir / "state/gpulaunch/links.json"),
            std::string::npos) << by_default.out;
  const CapturedRun none = with({"--links", "none"});
  EXPECT_NE(none.out.find("note: links between hosts: nominal figures (none measured"), std::string::npos) << none.out;
  const CapturedRun missing = with({"--links", dir / "absent.json"});
  EXPECT_EQ(ExitCode(missing), 2);
  EXPECT_NE(missing.err.find("absent.json: no such file"), std::string::npos) << missing.err;
  std::ofstream(dir / "broken.json") << "{\"format\": \"gpulaunch-links/v1\",\n \"measured_at\": 3}\n";
  const CapturedRun broken = with({"--links", dir / "broken.json"});
  EXPECT_EQ(ExitCode(broken), 2);
  EXPECT_NE(broken.err.find("broken.json:2: \"measured_at\" has the wrong type"), std::string::npos) << broken.err;
  EXPECT_EQ(broken.out.find("rank  host"), std::string::npos) << "no plan from a broken file";
}

// The hosts of -H keep their order (as mpirun fills them) unless the network
// decides: compact and by-slot alike; --network groups hosts under a leaf and
// the explanation says which were chosen; an unknown --policy is a usage error.
TEST(Launch, HostOrderIsKeptUnlessTheNetworkDecides) {
  const std::string xml = GL_TEST_DATA "/topologies/hwloc/mpibind/g4dnmetal.xml";
  auto hosts_of = [](const std::string& out) {
    const auto first = out.find('(');
    return first == std::string::npos ? std::string() : out.substr(first, out.find(')') - first + 1);
  };
  for (const char* policy : {"compact", "by-slot"}) {
    const CapturedRun run = Launch({"-n", "6", "--dry-run", "-H", "node3:2,node1:2,node2:2", "--topology-file", xml,
                                    "--policy", policy, "true"});
    ASSERT_EQ(ExitCode(run), 0) << run.err;
    EXPECT_EQ(hosts_of(run.out), "(node3, node1, node2)") << policy << "\n" << run.out;
    EXPECT_NE(run.out.find("note: hosts in the order given (no network tree"), std::string::npos) << run.out;
  }
  // Two hosts' worth of ranks; node3 and node1 share a leaf, node2 is alone.
  const TempDir scratch("host-order");
  const fs::path dir = scratch.path;
  std::ofstream(dir / "net.conf") << "SwitchName=a Nodes=node2\nSwitchName=b Nodes=node1,node3\n"
                                     "SwitchName=top Switches=a,b\n";
  const CapturedRun tree = Launch({"-n", "16", "--dry-run", "-H", "node2:8,node1:8,node3:8", "--topology-file", xml,
                                   "--network", (dir / "net.conf").string(), "true"});
  ASSERT_EQ(ExitCode(tree), 0) << tree.err;
  EXPECT_EQ(hosts_of(tree.out), "(node1, node3)") << tree.out;
  EXPECT_NE(tree.out.find("note: hosts node1, node3 of the 3 given, in this order: policy compact by the network tree"),
            std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("note: node3: chosen: 8 ranks (2 hosts under b)"), std::string::npos) << tree.out;
  const CapturedRun bad = Launch({"-n", "2", "--dry-run", "--policy", "nearest", "true"});
  EXPECT_EQ(ExitCode(bad), 2);
  EXPECT_NE(bad.err.find("unknown policy 'nearest' (choose from compact,"), std::string::npos) << bad.err;
}

// --display-map prints the plan and the engine, as --dry-run shows them,
// before any rank's output, and then launches it.
TEST(Launch, DisplayMapPrintsThePlanBeforeTheRanksRun) {
  const std::vector<std::string> job = {"-n", "4", "--oversubscribe", "--allow-run-as-root", "--no-summary",
                                        kBin + "/env_dump"};
  std::vector<std::string> dry = job, shown = job;
  dry.insert(dry.begin(), "--dry-run");
  shown.insert(shown.begin(), "--display-map");
  const CapturedRun planned = Launch(dry);
  const CapturedRun run = Launch(shown);
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  const std::string table = planned.out.substr(0, planned.out.find("rankfile:\n"));
  ASSERT_NE(table.find("plan: 4 ranks on 1 host"), std::string::npos) << planned.out;
  ASSERT_NE(table.find("\nengine: mpirun: "), std::string::npos) << planned.out;
  EXPECT_EQ(run.out.substr(0, table.size()), table) << run.out;
  EXPECT_EQ(RankLines(run.out.substr(table.size())).size(), 4u) << run.out;
}

TEST(Launch, FailingRankExitCodeIsTheJobs) {
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--allow-run-as-root", kBin + "/rank_report",
                                  "--quiet", "--exit-rank", "2", "--exit-code", "3"});
  EXPECT_EQ(ExitCode(run), 3) << run.out << run.err;
}

TEST(Launch, KilledRankGives137AndLeavesNothingBehind) {
  const std::string marker = "gl-e2e-kill-" + std::to_string(getpid());
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--allow-run-as-root", kBin + "/env_dump",
                                  "--kill-self", "1", "--sleep", "60", "--marker", marker});
  EXPECT_EQ(ExitCode(run), 137) << run.err;
  EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks left behind";
}

// The grace is long on purpose: with mpirun's default (1 s) the first rank to
// exit starts Open MPI's own stop sequence, and a loaded machine that leaves
// another rank unscheduled for that second SIGKILLs it before its handler ran
// (seen 1 in 32 with four copies of this test on 2 cores). This test checks
// that the signal reaches every rank, not how long the grace is; the ranks
// exit on SIGTERM at once, so the long grace costs nothing.
TEST(Launch, SigtermReachesEveryRankAndNothingIsLeft) {
  const fs::path dir = fs::temp_directory_path() / ("gl-e2e-sig-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::vector<std::string> argv = {kLaunch, "-n", "4", "--oversubscribe", "--allow-run-as-root", "--kill-grace",
                                         "60", "--summary",
                                         (dir / "summary.json").string(), kBin + "/env_dump", "--wait-dir",
                                         dir.string()};
  const pid_t pid = StartInBackground(argv);
  auto ready = [&] {
    int n = 0;
    for (int r = 0; r < 4; ++r) n += fs::exists(dir / ("ready." + std::to_string(r)));
    return n;
  };
  for (int i = 0; i < kStartMs / 50 && ready() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(ready(), 4) << "ranks did not start";
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  int got = 0;
  for (int r = 0; r < 4; ++r) got += fs::exists(dir / ("SIGTERM." + std::to_string(r)));
  EXPECT_EQ(got, 4) << "not every rank saw SIGTERM; the summary:\n"
                    << [&] {
                         std::ifstream f(dir / "summary.json");
                         return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
                       }();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_TRUE(WaitUntilGone(dir.string(), kGoneAfterExitMs).empty());
  fs::remove_all(dir);
}

// The second interrupt, not the kill grace, ends ranks that ignore signals:
// the grace is far longer than the bound checked, and the second SIGINT is
// sent only once every rank has seen the first (its file written).
TEST(Launch, SecondInterruptKillsRanksThatIgnoreSignals) {
  TempDir dir("stubborn");
  const std::string marker = "gl-e2e-stubborn-" + std::to_string(getpid());
  const pid_t pid = StartInBackground({kLaunch, "-n", "4", "--oversubscribe", "--allow-run-as-root", "--kill-grace",
                                       "60", "--no-summary", kBin + "/env_dump", "--stubborn", "--wait-dir",
                                       dir.path.string(), "--marker", marker});
  ASSERT_EQ(WaitForFiles(dir.path, "ready", 4, kStartMs), 4) << "ranks did not start";
  kill(pid, SIGINT);
  ASSERT_EQ(WaitForFiles(dir.path, "SIGINT", 4, kStartMs), 4) << "the first SIGINT did not reach every rank";
  kill(pid, SIGINT);
  const auto second = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() - second < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "gpulaunch did not exit within 20 s of a second SIGINT (kill grace 60 s): "
                                 << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                         : "still running");
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "stubborn ranks left behind";
}

TEST(Launch, TimeoutStopsTheJobWith124AndNothingIsLeft) {
  for (const char* stubborn : {"", "--stubborn"}) {
    const std::string marker = "gl-e2e-timeout-" + std::to_string(getpid()) + stubborn;
    std::vector<std::string> args = {"--timeout", "2", "-n", "2", "--oversubscribe", "--allow-run-as-root",
                                     kBin + "/env_dump", "--sleep", "60", "--marker", marker};
    if (*stubborn) args.push_back(stubborn);  // ignores SIGTERM: only SIGKILL ends it
    const auto start = std::chrono::steady_clock::now();
    const CapturedRun run = Launch(args);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(ExitCode(run), 124) << run.err;
    EXPECT_NE(run.err.find("ran past --timeout 2 s and was stopped"), std::string::npos) << run.err;
    EXPECT_LT(seconds, 20) << "the job was not stopped soon after its limit";
    EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks left behind" << stubborn;
  }
}

TEST(Launch, TagPrefixesWholeLines) {
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--allow-run-as-root", "--tag", kBin + "/env_dump",
                                  "--lines", "200"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  static const std::regex line_re(R"(^\[(\d+)@([^\]]+)\]: rank=(\d+) (line=\d+ x{60}|world=.*)$)");
  std::istringstream in(run.out);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_re)) << "torn or untagged line: " << line;
    EXPECT_EQ(m[1], m[3]) << line;
    ++count;
  }
  EXPECT_EQ(count, 4 * 201);
}

TEST(Launch, BadInputExitsTwoWithTheFixAndStartsNothing) {
  const fs::path dir = fs::temp_directory_path() / ("gl-e2e-bad-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string started = (dir / "started").string();
  std::ofstream(dir / "hosts") << "good slots=2\nbad slot=3\n";
  const std::vector<std::string> touch = {"touch", started};
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const Case cases[] = {
      {{"--frobnicate"}, "unknown option '--frobnicate'; see 'gpulaunch --help'"},
      {{"-n", "0"}, "at least 1"},
      {{"-n", "64"}, "--oversubscribe"},
      {{"--hostfile", (dir / "hosts").string()}, (dir / "hosts").string() + ":2:"},
      {{"--hostfile", (dir / "missing").string()}, "cannot read hostfile"},
      {{"-H", "no-such-host.invalid:2"}, "unknown host 'no-such-host.invalid'"},
      {{"-H", "node[1-"}, "malformed hostlist"},
      {{"--topology-file", GL_TEST_DATA "/topologies/hwloc/mpibind/g4dnmetal.xml"}, "use it with --dry-run"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--allow-run-as-root");
    args.insert(args.end(), touch.begin(), touch.end());
    const CapturedRun run = Launch(args);
    EXPECT_EQ(ExitCode(run), 2) << c.want << ": " << run.err;
    EXPECT_NE(run.err.find(c.want), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(started)) << "started something for " << c.want;
  }
  const CapturedRun missing = Launch({"--allow-run-as-root", "./definitely-not-here"});
  EXPECT_EQ(ExitCode(missing), 2);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos);
  if (geteuid() == 0) {
    const CapturedRun root = Launch({"-n", "1", "true"});
    EXPECT_EQ(ExitCode(root), 2);
    EXPECT_NE(root.err.find("--allow-run-as-root"), std::string::npos);
  }
  fs::remove_all(dir);
}

TEST(Shim, RefusesAWrongHostAndReports127ForAMissingProgram) {
  const std::string table = "v3|gl-x|h|127.0.0.1|1|-|1|-|elsewhere.invalid/0/1/0/0/0/-1/-/0/-";
  auto env = EnvironmentWith({{"GPULAUNCH_SLOT_TABLE", table}, {"OMPI_COMM_WORLD_RANK", "0"},
                              {"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  CapturedRun wrong = RunCaptured({kBin + "/gpulaunch-shim", "--", "true"}, env, 10000);
  EXPECT_EQ(WEXITSTATUS(wrong.wait_status), 125);
  EXPECT_NE(wrong.err.find("plan puts it on 'elsewhere.invalid'"), std::string::npos) << wrong.err;

  const std::string here = "v3|gl-x|h|127.0.0.1|1|-|1|-|localhost/0/1/0/0/0/-1/-/0/-";
  env = EnvironmentWith({{"GPULAUNCH_SLOT_TABLE", here}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}});
  CapturedRun missing = RunCaptured({kBin + "/gpulaunch-shim", "--", "/no/such/program"}, env, 10000);
  EXPECT_EQ(WEXITSTATUS(missing.wait_status), 127);
  EXPECT_NE(missing.err.find("cannot execute '/no/such/program'"), std::string::npos) << missing.err;

  env = EnvironmentWith({{"GPULAUNCH_SLOT_TABLE", here}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}});
  CapturedRun size = RunCaptured({kBin + "/gpulaunch-shim", "--", "true"}, env, 10000);
  EXPECT_EQ(WEXITSTATUS(size.wait_status), 125);
  EXPECT_NE(size.err.find("started 3 ranks"), std::string::npos) << size.err;

  // A header without rows sends the shim to gpulaunch for its row; with
  // nobody there it refuses, saying where it looked.
  const std::string header_only = "v3|gl-x|h|127.0.0.1|1|127.0.0.1:1|1|-|-";
  env = EnvironmentWith({{"GPULAUNCH_SLOT_TABLE", header_only}, {"OMPI_COMM_WORLD_RANK", "0"},
                         {"OMPI_COMM_WORLD_SIZE", "1"}});
  // Without the job's secret it cannot prove itself to gpulaunch: it says so.
  CapturedRun no_secret = RunCaptured({kBin + "/gpulaunch-shim", "--", "true"}, env, 60000);
  EXPECT_EQ(WEXITSTATUS(no_secret.wait_status), 125);
  EXPECT_NE(no_secret.err.find("GPULAUNCH_CONTROL_SECRET is not 64 hex digits"), std::string::npos) << no_secret.err;
  env = EnvironmentWith({{"GPULAUNCH_SLOT_TABLE", header_only}, {"OMPI_COMM_WORLD_RANK", "0"},
                         {"OMPI_COMM_WORLD_SIZE", "1"}, {"GPULAUNCH_CONTROL_SECRET", std::string(64, 'a')}});
  CapturedRun unreachable = RunCaptured({kBin + "/gpulaunch-shim", "--", "true"}, env, 60000);
  EXPECT_EQ(WEXITSTATUS(unreachable.wait_status), 125);
  EXPECT_NE(unreachable.err.find("could not reach gpulaunch at 127.0.0.1:1 to get this rank's slot"), std::string::npos)
      << unreachable.err;
}

// An MPI program not written here: Debian's HPC Challenge, on a small input.
TEST(Launch, HpccFromDebianCompletes) {
  if (access("/usr/bin/hpcc", X_OK) != 0) GTEST_SKIP() << "hpcc is not installed (apt-get install hpcc)";
  const fs::path dir = fs::temp_directory_path() / ("gl-e2e-hpcc-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(GL_TEST_DATA "/hpcc/hpccinf.txt", dir / "hpccinf.txt");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--allow-run-as-root", "hpcc"}, 300000);
  fs::current_path(cwd);
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  std::ifstream f(dir / "hpccoutf.txt");
  const std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("Success=1"), std::string::npos);
  EXPECT_NE(out.find("0 tests completed and failed residual checks"), std::string::npos);
  EXPECT_NE(out.find("CommWorldProcs=4"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpulaunch

namespace gpulaunch {
namespace {

// Job folders that a killed gpulaunch left are removed by the next launch of
// the same user; a live launch's folder, and one without an owner file, stay.
TEST(Launch, AJobFolderOfAGpulaunchThatIsGoneIsRemovedByTheNextLaunch) {
  const TempDir tmp("job-folders");
  const auto make = [&](const std::string& name, const std::string& owner) {
    const fs::path dir = tmp.path / name;
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::owner_all);
    if (!owner.empty()) std::ofstream(dir / "owner") << owner;
    std::ofstream(dir / "rankfile") << "rank 0=x slot=0\n";
    return dir;
  };
  // A live process of ours with its real start time: its folder stays.
  const pid_t live = StartInBackground({"sleep", "60"});
  const auto live_start = ProcessStartTime(live);
  ASSERT_TRUE(live_start.has_value());
  const fs::path dead = make("gpulaunch.Dead01", "999999999 12345\n");
  const fs::path reused = make("gpulaunch.Reuse1", std::to_string(live) + " " + std::to_string(*live_start + 1) + "\n");
  const fs::path alive = make("gpulaunch.Alive1", std::to_string(live) + " " + std::to_string(*live_start) + "\n");
  const fs::path unowned = make("gpulaunch.NoOwnr", "");
  const CapturedRun run = RunCaptured({kLaunch, "-n", "1", "--allow-run-as-root", "--no-summary", "/bin/true"},
                                      EnvironmentWith({{"TMPDIR", tmp.path.string()}}), 60000);
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  EXPECT_EQ(ExitCode(run), 0) << run.err;
  EXPECT_FALSE(fs::exists(dead)) << "its gpulaunch is gone";
  EXPECT_FALSE(fs::exists(reused)) << "its pid now names another process";
  EXPECT_TRUE(fs::exists(alive / "rankfile")) << "a live launch's folder was touched";
  EXPECT_TRUE(fs::exists(unowned / "rankfile")) << "a folder without an owner is not known to be stale";
  // And the launch removed its own.
  int left = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) left += e.path().filename().string().rfind("gpulaunch.", 0) == 0;
  EXPECT_EQ(left, 2);
}

}  // namespace
}  // namespace gpulaunch

namespace gpulaunch {
namespace {

// A stop signal from outside (scancel's SIGTERM, Slurm's time limit) gets the
// summary written at once, naming the cause, so that a SIGKILL that follows
// (Slurm's, KillWait later) cannot lose it.
TEST(Launch, TheFirstStopSignalWritesTheSummaryAtOnce) {
  const TempDir dir("early-summary");
  const std::string marker = "gl-e2e-early-summary-" + std::to_string(getpid());
  // Its job folder in the test's own (a SIGKILLed gpulaunch leaves it).
  const pid_t gl = StartInBackground({"/usr/bin/env", "TMPDIR=" + dir.path.string(), kLaunch, "-n", "2", "--oversubscribe", "--allow-run-as-root", "--summary",
                                      dir / "summary.json", "sh", "-c",
                                      "touch " + dir.path.string() + "/started.$RANK; sleep 60", marker});
  ASSERT_EQ(WaitForFiles(dir.path.string(), "started", 2, 60000), 2);
  kill(gl, SIGTERM);
  bool written = false;
  for (int i = 0; i < 200 && !written; ++i) {
    written = fs::exists(dir / "summary.json");
    if (!written) usleep(50 * 1000);
  }
  kill(gl, SIGKILL);  // as Slurm would after KillWait: no time to finish
  waitpid(gl, nullptr, 0);
  ASSERT_TRUE(written) << "no summary within 10 s of the stop signal";
  const auto summary = nlohmann::json::parse(ReadText(dir / "summary.json"));
  EXPECT_EQ(summary.value("provisional", false), true) << summary.dump();
  EXPECT_EQ(summary["exit_code"], 143);
  EXPECT_NE(summary["root_cause"]["text"].get<std::string>().find("stopped by SIGTERM sent to gpulaunch"), std::string::npos)
      << summary.dump();
  EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks outlived a SIGKILLed gpulaunch";
}

}  // namespace
}  // namespace gpulaunch
