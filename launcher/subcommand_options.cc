// The hand-written parsers of the subcommands whose options are few and
// positional-aware (`gpulaunch submit` passes the rest through verbatim);
// Boost.ProgramOptions stays in options.cc.
#include "launcher/options.h"

#include "common/strings.h"

namespace gpulaunch {

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
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size()) return InvalidArgument("nodes: " + a + " needs a value");
      return args[++i];
    };
    auto seconds = [&](int lo, int* out) -> Status {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      const auto n = ParseInt(v);
      if (!n || *n < lo || *n > 86400) {
        return InvalidArgument("nodes: " + a + " " + v + ": give seconds from " + std::to_string(lo) + " to 86400");
      }
      *out = static_cast<int>(*n);
      return Status::Ok();
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-H" || a == "--host") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.host_args.push_back(v);
    } else if (a == "--hostfile" || a == "--machinefile") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.hostfile = v;
    } else if (a == "--format") {
      GL_ASSIGN_OR_RETURN(o.format, value());
      if (o.format != "table" && o.format != "json") {
        return InvalidArgument("nodes: --format " + o.format + ": choose table or json");
      }
    } else if (a == "--budget") {
      GL_RETURN_IF_ERROR(seconds(1, &o.budget_s));
    } else if (a == "--watch") {
      GL_RETURN_IF_ERROR(seconds(1, &o.watch_s));
    } else if (a == "--allow-run-as-root") {
      o.allow_run_as_root = true;
    } else {
      return InvalidArgument("nodes: unknown option '" + a + "'; see 'gpulaunch nodes --help'");
    }
  }
  if (!o.host_args.empty() && o.hostfile) return InvalidArgument("nodes: give either --host or --hostfile, not both");
  return o;
}

}  // namespace gpulaunch
