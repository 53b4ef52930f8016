#include "launcher/check/linkcheck/linkcheck_command.h"
#include "launcher/base/control_auth.h"
#include "common/env.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "common/file_write.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/core/subcommand_parser.h"
#include "launcher/check/host_command.h"
#include "launcher/base/host_identity.h"
#include "launcher/check/linkcheck/link_survey.h"
#include "launcher/check/linkcheck/ucx_link.h"
#include "common/link_table.h"
#include "common/utc_time.h"

#include <chrono>
#include <filesystem>

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

constexpr int kDefaultPort = 13337;
constexpr int kMaxSyncS = 24;  // a server waits kPeerDeadline (30 s) for the client's first message


struct LinkcheckOptions {
  bool server = false, once = false, help = false, quick = false, allow_run_as_root = false;
  std::optional<std::string> client;
  std::vector<std::string> host_args;
  std::optional<std::string> hostfile;
  std::string pattern = "ring";
  int port = kDefaultPort;
  UcxSettings ucx;
  LinkPlan plan;
  std::string format = "table";
  std::optional<std::string> save, compare;
  double tolerance_pct = 20;
  int budget_s = 120;
  bool concurrent = false;      // --concurrent: shift rounds, inferred leaves
  int sync_s = 10;              // --sync: seconds for a round's clients to start
  std::string links;            // --links: the link file to write; "none": none
  bool shared_memory = true;    // measure each host's shared memory for the link file
};

const SubcommandParser& Parser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "linkcheck", "--server [--port P] [--once] [--tls LIST] [--nic DEV]\n"
                     "       gpulaunch linkcheck --client HOST [--port P] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]\n"
                     "       gpulaunch linkcheck (--hosts LIST | --hostfile FILE) [--pattern ring|pairs] [--budget S]\n"
                     "                           [--concurrent [--sync S]] [--links FILE|none] [--no-shared-memory]\n"
                     "                           [--allow-run-as-root] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]",
        "MEASURE: --iterations N (8-byte round trips, default 1000) --sizes MiB,... (default 1,2,4)\n"
        "         --mib-per-size M (default 256) --window W (sends in flight, default 8) --quick\n"
        "REPORT:  --format table|json --save FILE --compare FILE [--tolerance PCT (default 20)]\n"
        "Latency is an 8-byte ping-pong (round trip median and p99; one-way is half); bandwidth sends\n"
        "messages of each size with a window in flight. --tls tcp forces the network path (UCX_TLS);\n"
        "--nic picks the device (UCX_NET_DEVICES). The transport UCX used is reported per link.\n"
        "The --hosts form saves what it measured for the placement model (--links, default\n"
        "$XDG_STATE_HOME/gpulaunch/links.json): per pair GB/s and one-way latency, each host's shared memory\n"
        "between two ranks, and with --concurrent the leaves whose uplinks flows share (docs/check.md).\n"
        "Exit 0, 1 when a link failed or is more than --tolerance worse than --compare's, 2 for usage errors.");
    p->Add()
      ("server", "serve one peer's measurements (on the far host)")
      ("once", "--server: stop after one client")
      ("client", po::value<std::string>()->value_name("HOST"), "measure the link to HOST's --server")
      ("hosts,H", po::value<std::vector<std::string>>()->composing()->value_name("LIST"), "measure between these hosts (repeatable)")
      ("hostfile", po::value<std::string>()->value_name("FILE"), "the hosts, from a host file")
      ("pattern", po::value<std::string>()->value_name("ring|pairs"), "which links: each to the next (default) or every pair")
      ("port", po::value<std::string>()->value_name("P"), "the server's control port")
      ("tls", po::value<std::string>()->value_name("LIST"), "UCX transports (UCX_TLS), e.g. tcp")
      ("nic", po::value<std::string>()->value_name("DEV"), "the device (UCX_NET_DEVICES)")
      ("iterations", po::value<std::string>()->value_name("N"), "8-byte round trips (default 1000)")
      ("window", po::value<std::string>()->value_name("W"), "sends in flight (default 8)")
      ("mib-per-size", po::value<std::string>()->value_name("M"), "MiB sent per message size (default 256)")
      ("sizes", po::value<std::string>()->value_name("MiB,..."), "message sizes (default 1,2,4)")
      ("quick", "fewer iterations and bytes: 200 round trips, 32 MiB of 1 and 4 MiB")
      ("format", po::value<std::string>()->value_name("table|json"), "table (default) or json")
      ("save", po::value<std::string>()->value_name("FILE"), "record the results as a baseline")
      ("compare", po::value<std::string>()->value_name("FILE"), "flag links worse than the baseline's")
      ("tolerance", po::value<std::string>()->value_name("PCT"), "how much worse counts (default 20)")
      ("budget", po::value<std::string>()->value_name("S"), "seconds each link gets (default 120)")
      ("concurrent", "also run every host's flow at once, in rounds, and infer the leaves that share an uplink (implies --pattern pairs)")
      ("sync", po::value<std::string>()->value_name("S"), "--concurrent: seconds a round's clients get to start before all send (default 10; doubled for a round that did not start together)")
      ("links", po::value<std::string>()->value_name("FILE|none"), "the link file to update (default $XDG_STATE_HOME/gpulaunch/links.json); none: write none")
      ("no-shared-memory", "do not measure each host's shared memory for the link file")
      ("start-at", po::value<std::string>()->value_name("UNIX_MS"), "--client: begin the bandwidth half at this time (what --concurrent passes)")
      ("allow-run-as-root", "let mpirun run as root");
    return p;
  }();
  return *parser;
}

StatusOr<LinkcheckOptions> Parse(const std::vector<std::string>& args) {
  const SubcommandParser& p = Parser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  LinkcheckOptions o;
  o.help = SubcommandParser::WantsHelp(vm);
  if (o.help) return o;
  auto text = [&](const char* name, std::string fallback) {
    return vm.count(name) ? vm[name].as<std::string>() : fallback;
  };
  o.server = vm.count("server") > 0;
  o.once = vm.count("once") > 0;
  o.quick = vm.count("quick") > 0;
  o.allow_run_as_root = vm.count("allow-run-as-root") > 0;
  if (vm.count("client")) o.client = vm["client"].as<std::string>();
  if (vm.count("hosts")) o.host_args = vm["hosts"].as<std::vector<std::string>>();
  if (vm.count("hostfile")) o.hostfile = vm["hostfile"].as<std::string>();
  o.pattern = text("pattern", o.pattern);
  if (o.pattern != "ring" && o.pattern != "pairs") return p.Error("--pattern " + o.pattern + ": choose ring or pairs");
  o.ucx.tls = text("tls", o.ucx.tls);
  o.ucx.net_devices = text("nic", o.ucx.net_devices);
  GL_ASSIGN_OR_RETURN(o.port, IntOption(p, vm, "port", o.port, 1, 65535, "a number"));
  GL_ASSIGN_OR_RETURN(o.plan.iterations, IntOption(p, vm, "iterations", o.plan.iterations, 1, 10000000, "a number"));
  GL_ASSIGN_OR_RETURN(o.plan.window, IntOption(p, vm, "window", o.plan.window, 1, 64, "a number"));
  GL_ASSIGN_OR_RETURN(const int mib, IntOption(p, vm, "mib-per-size", static_cast<int>(o.plan.bytes_per_size >> 20), 1,
                                               1 << 20, "a number"));
  o.plan.bytes_per_size = static_cast<uint64_t>(mib) << 20;
  if (vm.count("sizes")) {
    const std::string v = vm["sizes"].as<std::string>();
    o.plan.sizes.clear();
    for (const std::string& s : Split(v, ',')) {
      const auto size = ParseInt(s);
      if (!size || *size < 1 || *size > 256) {
        return p.Error("--sizes " + v + ": give message sizes in MiB from 1 to 256, e.g. 1,2,4");
      }
      o.plan.sizes.push_back(static_cast<uint64_t>(*size) << 20);
    }
  }
  GL_ASSIGN_OR_RETURN(o.format, FormatOption(p, vm));
  if (vm.count("save")) o.save = vm["save"].as<std::string>();
  if (vm.count("compare")) o.compare = vm["compare"].as<std::string>();
  GL_ASSIGN_OR_RETURN(const int tolerance, IntOption(p, vm, "tolerance", static_cast<int>(o.tolerance_pct), 1, 1000,
                                                     "a number"));
  o.tolerance_pct = tolerance;
  GL_ASSIGN_OR_RETURN(o.budget_s, IntOption(p, vm, "budget", o.budget_s, 1, 86400, "a number"));
  o.concurrent = vm.count("concurrent") > 0;
  if (o.concurrent) o.pattern = "pairs";
  GL_ASSIGN_OR_RETURN(o.sync_s, IntOption(p, vm, "sync", o.sync_s, 1, kMaxSyncS, "seconds (a server waits 30 s at most)"));
  o.links = text("links", DefaultLinkTablePath());
  o.shared_memory = vm.count("no-shared-memory") == 0;
  if (vm.count("start-at")) {
    const auto at = ParseInt(vm["start-at"].as<std::string>());
    if (!at || *at <= 0) return p.Error("--start-at " + vm["start-at"].as<std::string>() + ": give Unix milliseconds");
    o.plan.bandwidth_start_unix_ms = *at;
  }
  const bool sizes_given = vm.count("sizes") > 0, mib_given = vm.count("mib-per-size") > 0,
             iterations_given = vm.count("iterations") > 0;
  const int modes = (o.server ? 1 : 0) + (o.client ? 1 : 0) + (!o.host_args.empty() || o.hostfile ? 1 : 0);
  if (modes != 1) {
    return InvalidArgument("linkcheck: give one of --server, --client HOST, or --hosts LIST / --hostfile FILE");
  }
  if (o.quick) {
    if (!iterations_given) o.plan.iterations = 200;
    if (!mib_given) o.plan.bytes_per_size = 32ull << 20;
    if (!sizes_given) o.plan.sizes = {1u << 20, 4u << 20};
  }
  return o;
}


// The measurement options again, for a client started on another host.
std::vector<std::string> ClientArgs(const LinkcheckOptions& o) {
  std::vector<std::string> a = {"--port", std::to_string(o.port), "--iterations", std::to_string(o.plan.iterations),
                                "--window", std::to_string(o.plan.window), "--mib-per-size",
                                std::to_string(o.plan.bytes_per_size >> 20), "--format", "json"};
  std::string sizes;
  for (uint64_t s : o.plan.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(s >> 20);
  a.insert(a.end(), {"--sizes", sizes});
  if (!o.ucx.tls.empty()) a.insert(a.end(), {"--tls", o.ucx.tls});
  if (!o.ucx.net_devices.empty()) a.insert(a.end(), {"--nic", o.ucx.net_devices});
  return a;
}

// The client's own options: the measurement's, and when its round starts.
std::vector<std::string> ClientOnlyArgs(const LinkcheckOptions& o) {
  std::vector<std::string> a = ClientArgs(o);
  if (o.plan.bandwidth_start_unix_ms > 0) a.insert(a.end(), {"--start-at", std::to_string(o.plan.bandwidth_start_unix_ms)});
  return a;
}

LinkResult MeasurePair(const std::string& from, const std::string& to, const LinkcheckOptions& o,
                       const HostCommandTarget& target, const std::string& self) {
  // The server allows what the client will ask (the same measurement
  // options), and both prove the run's secret, which travels in the
  // environment (ucx_link.h).
  const auto measure = ClientArgs(o);
  std::vector<std::string> server = {self, "--server", "--once"};
  server.insert(server.end(), measure.begin(), measure.end());
  const std::map<std::string, std::string> env = {{kLinkcheckSecretEnv, NewControlSecretHex()}};
  CapturedRun server_run;
  std::thread server_thread([&] {
    server_run = RunOnHost(to, server, *target.engine, o.allow_run_as_root, o.budget_s * 1000, env);
  });
  std::vector<std::string> client = {self, "--client", to};
  const auto client_measure = ClientOnlyArgs(o);
  client.insert(client.end(), client_measure.begin(), client_measure.end());
  const CapturedRun run = RunOnHost(from, client, *target.engine, o.allow_run_as_root, o.budget_s * 1000, env);
  server_thread.join();
  LinkResult r;
  r.from = from;
  r.to = to;
  const size_t open = run.out.find('{'), close = run.out.rfind('}');
  auto parsed = open == std::string::npos || close == std::string::npos
                    ? StatusOr<std::vector<LinkResult>>(InvalidArgument("no results"))
                    : ParseLinkResultsJson(run.out.substr(open, close - open + 1), "results of " + from);
  if (run.timed_out) {
    r.error = "no result within --budget " + std::to_string(o.budget_s) + " s";
  } else if (parsed.ok() && parsed->size() == 1) {
    r = parsed->front();
    r.from = from;
    r.to = to;
  } else {
    // The client's own words (it prints its error), else the engine's.
    r.error = EngineFailureReason(run, *target.engine);
    for (const std::string& line : Split(run.err, '\n')) {
      if (line.find("linkcheck:") != std::string::npos) {
        r.error = std::string(Trim(line.substr(line.find("linkcheck:") + 10)));
        break;
      }
    }
  }
  return r;
}

int Report(const LinkcheckOptions& o, const std::vector<LinkResult>& links) {
  std::cout << (o.format == "json" ? LinkResultsJson(links) : RenderLinkTable(links)) << std::flush;
  bool ok = true;
  for (const LinkResult& l : links) {
    if (l.error.empty()) continue;
    ok = false;
    std::cerr << "gpulaunch: linkcheck: " << l.from << " -> " << l.to << ": " << l.error << "\n";
  }
  if (o.save) {
    if (Status s = WriteFileAtomically(*o.save, LinkResultsJson(links)); !s.ok()) {
      std::cerr << "gpulaunch: linkcheck --save: " << s.message() << "\n";
      ok = false;
    }
  }
  if (o.compare) {
    auto text = ReadTextFile(*o.compare, "linkcheck baseline");
    auto baseline = text.ok() ? ParseLinkResultsJson(*text, *o.compare) : StatusOr<std::vector<LinkResult>>(text.status());
    if (!baseline.ok()) {
      std::cerr << "gpulaunch: linkcheck --compare: " << baseline.status().message() << "\n";
      return kExitUsage;
    }
    const auto worse = CompareLinks(*baseline, links, o.tolerance_pct);
    (o.format == "json" ? std::cerr : std::cout)
        << (worse.empty() ? "no link more than " + std::to_string(static_cast<int>(o.tolerance_pct)) +
                                "% worse than " + *o.compare + "\n"
                          : "worse than " + *o.compare + ":\n");
    for (const std::string& w : worse) std::cerr << "gpulaunch: linkcheck: " << w << "\n";
    ok = ok && worse.empty();
  }
  return ok ? kExitOk : 1;
}

// Round `shift` of --concurrent: every host's flow to the host `shift` after
// it, their bandwidth halves begun together after --sync seconds. One size
// (the largest) and few round trips: the round is about bandwidth. Each flow
// sends at least what takes it kRoundFlowSeconds alone, so that a client
// waking a few milliseconds late still overlaps the others (a fast link
// moves --mib-per-size in milliseconds).
constexpr double kRoundFlowSeconds = 1.0;
constexpr uint64_t kMaxRoundFlowBytes = 4ull << 30;
SurveyRound RunRound(const LinkSurvey& survey, int shift, int sync_s, const LinkcheckOptions& o,
                     const HostCommandTarget& target, const std::string& self) {
  const std::vector<std::string>& hosts = survey.hosts;
  LinkcheckOptions round = o;
  round.plan.iterations = std::min(o.plan.iterations, 20);
  round.plan.sizes = {*std::max_element(o.plan.sizes.begin(), o.plan.sizes.end())};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  round.plan.bandwidth_start_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now).count() + int64_t{sync_s} * 1000;
  SurveyRound out{shift, std::vector<LinkResult>(hosts.size())};
  std::vector<std::thread> flows;
  for (const auto& [from, to] : ShiftRound(static_cast<int>(hosts.size()), shift)) {
    LinkcheckOptions flow = round;
    const double alone = AloneGbytePerS(survey, hosts[from], hosts[to]);
    const uint64_t wanted = std::min<uint64_t>(static_cast<uint64_t>(alone * 1e9 * kRoundFlowSeconds), kMaxRoundFlowBytes);
    flow.plan.bytes_per_size = std::max(o.plan.bytes_per_size, (wanted + (1u << 20) - 1) >> 20 << 20);
    flows.emplace_back([&, flow, from = from, to = to] {
      out.results[from] = MeasurePair(hosts[from], hosts[to], flow, target, self);
    });
  }
  for (std::thread& t : flows) t.join();
  return out;
}

// Updates the link file with this run's measurements (the pairs measured now
// replace older figures of the same pairs). A file that is there but not a
// link file is left alone: it is an error, not something to overwrite.
Status SaveLinks(const std::string& path, const LinkTable& measured) {
  GL_ASSIGN_OR_RETURN(std::optional<LinkTable> old, ReadLinkTableIfPresent(path));
  LinkTable t = old ? std::move(*old) : LinkTable();
  t.MergeFrom(measured);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  return WriteFileAtomically(path, WriteLinkTable(t));
}

}  // namespace

int RunLinkcheckCommand(const std::vector<std::string>& args) {
  auto parsed = Parse(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const LinkcheckOptions& o = *parsed;
  if (o.help) {
    std::cout << Parser().Help();
    return kExitOk;
  }
  auto progress = [](const std::string& line) { std::cerr << "linkcheck: " << line << std::endl; };
  if (o.server) {
    const Status s = RunLinkServer(o.port, o.ucx, o.once, progress, GetEnv(kLinkcheckSecretEnv).value_or(""), o.plan,
                                   [&](int port) {
      std::cerr << "linkcheck: listening on port " << port << std::endl;
    });
    if (!s.ok()) std::cerr << "gpulaunch: linkcheck: " << s.message() << "\n";
    return s.ok() ? kExitOk : (s.code() == StatusCode::kInvalidArgument ? kExitUsage : 1);
  }
  if (o.client) {
    auto r = RunLinkClient(*o.client, o.port, o.ucx, o.plan, 10000, progress, GetEnv(kLinkcheckSecretEnv).value_or(""));
    LinkResult result;
    if (r.ok()) {
      result = std::move(r).value();
    } else {
      if (r.status().code() == StatusCode::kInvalidArgument) {
        std::cerr << "gpulaunch: linkcheck: " << r.status().message() << "\n";
        return kExitUsage;
      }
      result.to = *o.client;
      result.error = r.status().message();
      std::cerr << "linkcheck: " << result.error << "\n";
    }
    result.from = LocalHostname();
    return Report(o, {result});
  }
  auto target = ResolveCommandHosts(o.host_args, o.hostfile, "linkcheck");
  if (!target.ok()) return Fail(target.status());
  const std::vector<std::string>& hosts = target->hosts;
  if (hosts.size() < 2) {
    std::cerr << "gpulaunch: linkcheck: --hosts needs at least 2 hosts to measure a link between them\n";
    return kExitUsage;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  if (o.pattern == "ring") {
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (hosts.size() == 2 && i == 1) break;  // a ring of two is one link
      pairs.emplace_back(hosts[i], hosts[(i + 1) % hosts.size()]);
    }
  } else {
    for (size_t i = 0; i < hosts.size(); ++i)
      for (size_t j = i + 1; j < hosts.size(); ++j) pairs.emplace_back(hosts[i], hosts[j]);
  }
  const std::string self = SiblingBinary("gpulaunch-linkcheck");  // this binary (linkcheck_main.cc)
  LinkSurvey survey;
  survey.hosts = hosts;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::cerr << "linkcheck: [" << i + 1 << "/" << pairs.size() << "] " << pairs[i].first << " -> " << pairs[i].second
              << std::endl;
    survey.pairs.push_back(MeasurePair(pairs[i].first, pairs[i].second, o, *target, self));
  }
  if (o.shared_memory && o.links != "none") {
    // Two ranks on one host: UCX's own choice of transport (shared memory),
    // whatever --tls says of the network.
    LinkcheckOptions local = o;
    local.ucx = UcxSettings{};
    for (const std::string& h : hosts) {
      std::cerr << "linkcheck: shared memory on " << h << std::endl;
      survey.shared_memory.push_back(MeasurePair(h, h, local, *target, self));
    }
  }
  std::optional<InferredLeaves> leaves;
  if (o.concurrent) {
    // A round whose flows did not all begin together is run again with
    // twice the time to start (the server waits 30 s at most); the leaves are
    // inferred only from rounds that ran at once.
    bool all_together = true;
    for (int shift = 1; shift < static_cast<int>(hosts.size()); ++shift) {
      int sync_s = o.sync_s;
      for (int attempt = 0;; ++attempt) {
        std::cerr << "linkcheck: at once, round " << shift << "/" << hosts.size() - 1 << " (start in " << sync_s
                  << " s)" << std::endl;
        SurveyRound round = RunRound(survey, shift, sync_s, o, *target, self);
        const bool together = std::all_of(round.results.begin(), round.results.end(), BeganWithItsRound);
        if (together || attempt == 2 || sync_s >= kMaxSyncS) {
          all_together &= together;
          survey.rounds.push_back(std::move(round));
          break;
        }
        sync_s = std::min(2 * sync_s, kMaxSyncS);
      }
    }
    leaves = all_together ? InferLeaves(static_cast<int>(hosts.size()), ConcurrentFlows(survey)) : InferredLeaves{};
  }
  int rc = Report(o, survey.pairs);
  std::ostream& text = o.format == "json" ? std::cerr : std::cout;
  for (const std::string& line : DescribeSurvey(survey, leaves ? &*leaves : nullptr)) text << line << "\n";
  if (o.links != "none") {
    const LinkTable measured = SurveyTable(survey, leaves ? &*leaves : nullptr,
                                           UtcTimestamp(std::chrono::system_clock::now()));
    if (Status s = SaveLinks(o.links, measured); !s.ok()) {
      std::cerr << "gpulaunch: linkcheck --links " << o.links << ": " << s.message() << "\n";
      rc = 1;
    } else {
      text << "links saved to " << o.links << " (launches and plan read them: --links)\n";
    }
  }
  for (const LinkResult& m : survey.shared_memory)
    if (!m.error.empty()) rc = 1;
  return rc;
}

}  // namespace gpulaunch
