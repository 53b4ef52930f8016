#include "launcher/check/linkcheck/linkcheck_options.h"

#include "common/link_table.h"
#include "common/strings.h"
#include "launcher/core/subcommand_parser.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

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

}  // namespace

std::string LinkcheckHelp() { return Parser().Help(); }

StatusOr<LinkcheckOptions> ParseLinkcheckOptions(const std::vector<std::string>& args) {
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

std::vector<std::string> ClientOnlyArgs(const LinkcheckOptions& o) {
  std::vector<std::string> a = ClientArgs(o);
  if (o.plan.bandwidth_start_unix_ms > 0) a.insert(a.end(), {"--start-at", std::to_string(o.plan.bandwidth_start_unix_ms)});
  return a;
}

}  // namespace gpulaunch
