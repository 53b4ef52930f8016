#include "launcher/check/linkcheck/linkcheck_command.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "common/file_write.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/check/host_command.h"
#include "launcher/base/host_identity.h"
#include "launcher/check/linkcheck/ucx_link.h"

namespace gpulaunch {
namespace {

constexpr int kDefaultPort = 13337;

constexpr char kHelp[] =
    "usage: gpulaunch linkcheck --server [--port P] [--once] [--tls LIST] [--nic DEV]\n"
    "       gpulaunch linkcheck --client HOST [--port P] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]\n"
    "       gpulaunch linkcheck (--hosts LIST | --hostfile FILE) [--pattern ring|pairs] [--budget S]\n"
    "                           [--allow-run-as-root] [--tls LIST] [--nic DEV] [MEASURE] [REPORT]\n"
    "MEASURE: --iterations N (8-byte round trips, default 1000) --sizes MiB,... (default 1,2,4)\n"
    "         --mib-per-size M (default 256) --window W (sends in flight, default 8) --quick\n"
    "REPORT:  --format table|json --save FILE --compare FILE [--tolerance PCT (default 20)]\n"
    "Latency is an 8-byte ping-pong (round trip median and p99; one-way is half); bandwidth sends\n"
    "messages of each size with a window in flight. --tls tcp forces the network path (UCX_TLS);\n"
    "--nic picks the device (UCX_NET_DEVICES). The transport UCX used is reported per link.\n"
    "Exit 0, 1 when a link failed or is more than --tolerance worse than --compare's, 2 for usage errors.\n";

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

StatusOr<LinkcheckOptions> Parse(const std::vector<std::string>& args) {
  LinkcheckOptions o;
  bool sizes_given = false, mib_given = false, iterations_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size()) return InvalidArgument("linkcheck: " + a + " needs a value");
      return args[++i];
    };
    auto number = [&](int64_t lo, int64_t hi) -> StatusOr<int64_t> {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      const auto n = ParseInt(v);
      if (!n || *n < lo || *n > hi) {
        return InvalidArgument("linkcheck: " + a + " " + v + ": give a number from " + std::to_string(lo) + " to " +
                               std::to_string(hi));
      }
      return *n;
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--server") {
      o.server = true;
    } else if (a == "--once") {
      o.once = true;
    } else if (a == "--client") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.client = v;
    } else if (a == "--hosts" || a == "-H") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.host_args.push_back(v);
    } else if (a == "--hostfile") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.hostfile = v;
    } else if (a == "--pattern") {
      GL_ASSIGN_OR_RETURN(o.pattern, value());
      if (o.pattern != "ring" && o.pattern != "pairs") {
        return InvalidArgument("linkcheck: --pattern " + o.pattern + ": choose ring or pairs");
      }
    } else if (a == "--port") {
      GL_ASSIGN_OR_RETURN(int64_t p, number(1, 65535));
      o.port = static_cast<int>(p);
    } else if (a == "--tls") {
      GL_ASSIGN_OR_RETURN(o.ucx.tls, value());
    } else if (a == "--nic") {
      GL_ASSIGN_OR_RETURN(o.ucx.net_devices, value());
    } else if (a == "--iterations") {
      GL_ASSIGN_OR_RETURN(int64_t n, number(1, 10000000));
      o.plan.iterations = static_cast<int>(n);
      iterations_given = true;
    } else if (a == "--window") {
      GL_ASSIGN_OR_RETURN(int64_t n, number(1, 64));
      o.plan.window = static_cast<int>(n);
    } else if (a == "--mib-per-size") {
      GL_ASSIGN_OR_RETURN(int64_t n, number(1, 1 << 20));
      o.plan.bytes_per_size = static_cast<uint64_t>(n) << 20;
      mib_given = true;
    } else if (a == "--sizes") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.plan.sizes.clear();
      for (const std::string& s : Split(v, ',')) {
        const auto mib = ParseInt(s);
        if (!mib || *mib < 1 || *mib > 256) {
          return InvalidArgument("linkcheck: --sizes " + v + ": give message sizes in MiB from 1 to 256, e.g. 1,2,4");
        }
        o.plan.sizes.push_back(static_cast<uint64_t>(*mib) << 20);
      }
      sizes_given = true;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--format") {
      GL_ASSIGN_OR_RETURN(o.format, value());
      if (o.format != "table" && o.format != "json") {
        return InvalidArgument("linkcheck: --format " + o.format + ": choose table or json");
      }
    } else if (a == "--save" || a == "--compare") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      (a == "--save" ? o.save : o.compare) = v;
    } else if (a == "--tolerance") {
      GL_ASSIGN_OR_RETURN(int64_t n, number(1, 1000));
      o.tolerance_pct = static_cast<double>(n);
    } else if (a == "--budget") {
      GL_ASSIGN_OR_RETURN(int64_t n, number(1, 86400));
      o.budget_s = static_cast<int>(n);
    } else if (a == "--allow-run-as-root") {
      o.allow_run_as_root = true;
    } else {
      return InvalidArgument("linkcheck: unknown option '" + a + "'; see 'gpulaunch linkcheck --help'");
    }
  }
  if (o.help) return o;
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
  std::vector<std::string> server = {self, "linkcheck", "--server", "--once", "--port", std::to_string(o.port)};
  if (!o.ucx.tls.empty()) server.insert(server.end(), {"--tls", o.ucx.tls});
  if (!o.ucx.net_devices.empty()) server.insert(server.end(), {"--nic", o.ucx.net_devices});
  CapturedRun server_run;
  std::thread server_thread([&] {
    server_run = RunOnHost(to, server, *target.engine, o.allow_run_as_root, o.budget_s * 1000);
  });
  std::vector<std::string> client = {self, "linkcheck", "--client", to};
  const auto more = ClientArgs(o);
  client.insert(client.end(), more.begin(), more.end());
  const CapturedRun run = RunOnHost(from, client, *target.engine, o.allow_run_as_root, o.budget_s * 1000);
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
    std::cout << kHelp;
    return kExitOk;
  }
  auto progress = [](const std::string& line) { std::cerr << "linkcheck: " << line << std::endl; };
  if (o.server) {
    const Status s = RunLinkServer(o.port, o.ucx, o.once, progress, [&](int port) {
      std::cerr << "linkcheck: listening on port " << port << std::endl;
    });
    if (!s.ok()) std::cerr << "gpulaunch: linkcheck: " << s.message() << "\n";
    return s.ok() ? kExitOk : (s.code() == StatusCode::kInvalidArgument ? kExitUsage : 1);
  }
  if (o.client) {
    auto r = RunLinkClient(*o.client, o.port, o.ucx, o.plan, 10000, progress);
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
  const std::string self = SiblingBinary("gpulaunch");
  std::vector<LinkResult> links;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::cerr << "linkcheck: [" << i + 1 << "/" << pairs.size() << "] " << pairs[i].first << " -> " << pairs[i].second
              << std::endl;
    links.push_back(MeasurePair(pairs[i].first, pairs[i].second, o, *target, self));
  }
  return Report(o, links);
}

}  // namespace gpulaunch
