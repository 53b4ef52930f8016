// The hand-written parsers of the subcommands whose options are few and
// positional-aware (`gpulaunch submit` passes the rest through verbatim);
// Boost.ProgramOptions stays in options.cc.
#include "launcher/core/options.h"

#include <cstdlib>

#include "common/strings.h"

namespace gpulaunch {
namespace {

// The value after args[i] (i moves onto it).
StatusOr<std::string> TakeValue(const std::string& command, const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) return InvalidArgument(command + ": " + args[i] + " needs a value");
  return args[++i];
}

StatusOr<int> TakeNumber(const std::string& command, const std::vector<std::string>& args, size_t& i, int lo, int hi,
                         const char* unit) {
  const std::string flag = args[i];
  GL_ASSIGN_OR_RETURN(std::string v, TakeValue(command, args, i));
  const auto n = ParseInt(v);
  if (!n || *n < lo || *n > hi) {
    return InvalidArgument(command + ": " + flag + " " + v + ": give " + unit + " from " + std::to_string(lo) + " to " +
                           std::to_string(hi));
  }
  return static_cast<int>(*n);
}

// What every per-host command (nodes, check) accepts: -H/--host,
// --hostfile/--machinefile, --format table|json, --allow-run-as-root.
// False when args[i] is none of them.
struct HostFlags {
  std::vector<std::string>* host_args;
  std::optional<std::string>* hostfile;
  std::string* format;
  bool* allow_run_as_root;
};
StatusOr<bool> TakeHostFlag(const std::string& command, const std::vector<std::string>& args, size_t& i,
                            const HostFlags& out) {
  const std::string& a = args[i];
  if (a == "-H" || a == "--host") {
    GL_ASSIGN_OR_RETURN(std::string v, TakeValue(command, args, i));
    out.host_args->push_back(v);
  } else if (a == "--hostfile" || a == "--machinefile") {
    GL_ASSIGN_OR_RETURN(std::string v, TakeValue(command, args, i));
    *out.hostfile = v;
  } else if (a == "--format") {
    GL_ASSIGN_OR_RETURN(*out.format, TakeValue(command, args, i));
    if (*out.format != "table" && *out.format != "json") {
      return InvalidArgument(command + ": --format " + *out.format + ": choose table or json");
    }
  } else if (a == "--allow-run-as-root") {
    *out.allow_run_as_root = true;
  } else {
    return false;
  }
  return true;
}

}  // namespace

StatusOr<SubmitOptions> ParseSubmitCommandLine(const std::vector<std::string>& args) {
  SubmitOptions o;
  size_t i = 0;
  auto value = [&](const std::string& name) -> StatusOr<std::string> {
    if (i + 1 >= args.size()) return InvalidArgument("submit: " + name + " needs a value");
    return args[++i];
  };
  auto count = [&](const std::string& name, int* out) -> Status {
    GL_ASSIGN_OR_RETURN(std::string v, value(name));
    const auto n = ParseInt(v);
    if (!n || *n < 1 || *n > 1000000) return InvalidArgument("submit: " + name + " " + v + ": give a positive number");
    *out = static_cast<int>(*n);
    return Status::Ok();
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (a == "-N" || a == "--nodes") GL_RETURN_IF_ERROR(count(a, &o.nodes));
    else if (a == "-n" || a == "--ntasks") GL_RETURN_IF_ERROR(count(a, &o.ranks));
    else if (a == "--gpus-per-node") GL_RETURN_IF_ERROR(count(a, &o.gpus_per_node));
    else if (a == "--time") { GL_ASSIGN_OR_RETURN(o.time, value(a)); }
    else if (a == "--partition" || a == "-p") { GL_ASSIGN_OR_RETURN(o.partition, value(a)); }
    else if (a == "--job-name" || a == "-J") { GL_ASSIGN_OR_RETURN(o.job_name, value(a)); }
    else if (a == "--output" || a == "-o") { GL_ASSIGN_OR_RETURN(o.output, value(a)); }
    else if (a == "--script") { GL_ASSIGN_OR_RETURN(std::string p, value(a)); o.script = p; }
    else break;  // the rest is for the gpulaunch in the job
  }
  if (i < args.size() && args[i] == "--") ++i;
  o.launch.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.nodes == 0) return InvalidArgument("submit needs -N NODES, e.g. gpulaunch submit -N 4 -- ./job");
  if (o.launch.empty()) return InvalidArgument("submit: no program; e.g. gpulaunch submit -N 4 -- ./job");
  for (const std::string& field : {o.time, o.partition, o.job_name, o.output}) {
    if (field.find('\n') != std::string::npos) return InvalidArgument("submit: values must be one line");
  }
  return o;
}

StatusOr<NodesOptions> ParseNodesCommandLine(const std::vector<std::string>& args) {
  NodesOptions o;
  const HostFlags host_flags{&o.host_args, &o.hostfile, &o.format, &o.allow_run_as_root};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    GL_ASSIGN_OR_RETURN(bool taken, TakeHostFlag("nodes", args, i, host_flags));
    if (taken) continue;
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--budget") {
      GL_ASSIGN_OR_RETURN(o.budget_s, TakeNumber("nodes", args, i, 1, 86400, "seconds"));
    } else if (a == "--watch") {
      GL_ASSIGN_OR_RETURN(o.watch_s, TakeNumber("nodes", args, i, 1, 86400, "seconds"));
    } else if (a == "--count") {
      GL_ASSIGN_OR_RETURN(o.count, TakeNumber("nodes", args, i, 1, 1000000, "refreshes"));
    } else {
      return InvalidArgument("nodes: unknown option '" + a + "'; see 'gpulaunch nodes --help'");
    }
  }
  if (!o.host_args.empty() && o.hostfile) return InvalidArgument("nodes: give either --host or --hostfile, not both");
  if (o.count > 0 && o.watch_s == 0) return InvalidArgument("nodes: --count needs --watch S (it counts refreshes)");
  return o;
}

StatusOr<CheckOptions> ParseCheckCommandLine(const std::vector<std::string>& args) {
  CheckOptions o;
  const HostFlags host_flags{&o.host_args, &o.hostfile, &o.format, &o.allow_run_as_root};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    GL_ASSIGN_OR_RETURN(bool taken, TakeHostFlag("check", args, i, host_flags));
    if (taken) continue;
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--storage") {
      GL_ASSIGN_OR_RETURN(std::string v, TakeValue("check", args, i));
      if (v.empty()) return InvalidArgument("check: --storage needs a directory");
      o.storage = v;
    } else if (a == "--size") {
      GL_ASSIGN_OR_RETURN(o.size_mib, TakeNumber("check", args, i, 1, 65536, "MiB"));
    } else if (a == "--binary" || a == "--save" || a == "--compare") {
      GL_ASSIGN_OR_RETURN(std::string v, TakeValue("check", args, i));
      if (v.empty()) return InvalidArgument("check: " + a + " needs a path");
      (a == "--binary" ? o.binary : a == "--save" ? o.save : o.compare) = v;
    } else if (a == "--max-clock-skew") {
      GL_ASSIGN_OR_RETURN(std::string v, TakeValue("check", args, i));
      char* end = nullptr;
      o.max_clock_skew_s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.max_clock_skew_s > 0) || o.max_clock_skew_s > 3600) {
        return InvalidArgument("check: --max-clock-skew " + v + ": give seconds above 0 (e.g. 0.5)");
      }
    } else if (a == "--budget") {
      GL_ASSIGN_OR_RETURN(o.budget_s, TakeNumber("check", args, i, 1, 86400, "seconds"));
    } else {
      return InvalidArgument("check: unknown option '" + a + "'; see 'gpulaunch check --help'");
    }
  }
  if (!o.host_args.empty() && o.hostfile) return InvalidArgument("check: give either --host or --hostfile, not both");
  if (o.storage && (o.binary || o.save || o.compare)) {
    return InvalidArgument("check: --storage runs the storage check only; --binary, --save and --compare belong to "
                           "the pre-flight checks (run them without --storage)");
  }
  return o;
}

}  // namespace gpulaunch
