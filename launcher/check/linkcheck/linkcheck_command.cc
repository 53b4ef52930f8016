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
#include "launcher/check/linkcheck/ucx_link.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

constexpr int kDefaultPort = 13337;


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
};

const SubcommandParser& Parser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "linkcheck", "--server [--port P] [--once] [--tls LIST] [--nic DEV]\n"
                     "       gpulaunch linkcheck --client HOST [--port P] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]\n"
                     "       gpulaunch linkcheck (--hosts LIST | --hostfile FILE) [--pattern ring|pairs] [--budget S]\n"
                     "                           [--allow-run-as-root] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]",
        "MEASURE: --iterations N (8-byte round trips, default 1000) --sizes MiB,... (default 1,2,4)\n"
        "         --mib-per-size M (default 256) --window W (sends in flight, default 8) --quick\n"
        "REPORT:  --format table|json --save FILE --compare FILE [--tolerance PCT (default 20)]\n"
        "Latency is an 8-byte ping-pong (round trip median and p99; one-way is half); bandwidth sends\n"
        "messages of each size with a window in flight. --tls tcp forces the network path (UCX_TLS);\n"
        "--nic picks the device (UCX_NET_DEVICES). The transport UCX used is reported per link.\n"
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
  client.insert(client.end(), measure.begin(), measure.end());
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
  std::vector<LinkResult> links;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::cerr << "linkcheck: [" << i + 1 << "/" << pairs.size() << "] " << pairs[i].first << " -> " << pairs[i].second
              << std::endl;
    links.push_back(MeasurePair(pairs[i].first, pairs[i].second, o, *target, self));
  }
  return Report(o, links);
}

}  // namespace gpulaunch
