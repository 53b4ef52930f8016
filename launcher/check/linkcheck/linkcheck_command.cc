#include "launcher/check/linkcheck/linkcheck_command.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "common/env.h"
#include "common/file_write.h"
#include "common/output_dir.h"
#include "common/link_table.h"
#include "common/strings.h"
#include "common/utc_time.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/check/host_command.h"
#include "launcher/check/linkcheck/link_survey.h"
#include "launcher/check/linkcheck/linkcheck_options.h"
#include "launcher/check/linkcheck/survey_runner.h"
#include "launcher/check/linkcheck/ucx_link.h"

namespace gpulaunch {
namespace {

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

// Updates the link file with this run's measurements (the pairs measured now
// replace older figures of the same pairs). A file that is there but not a
// link file is left alone: it is an error, not something to overwrite.
Status SaveLinks(const std::string& path, const LinkTable& measured) {
  GL_ASSIGN_OR_RETURN(std::optional<LinkTable> old, ReadLinkTableIfPresent(path));
  LinkTable t = old ? std::move(*old) : LinkTable();
  t.MergeFrom(measured);
  const std::filesystem::path where(path);
  GL_ASSIGN_OR_RETURN(const OutputDir folder,
                      OutputDir::Open(where.has_parent_path() ? where.parent_path().string() : "."));
  return folder.WriteFile(where.filename().string(), WriteLinkTable(t));
}

}  // namespace

int RunLinkcheckCommand(const std::vector<std::string>& args) {
  auto parsed = ParseLinkcheckOptions(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const LinkcheckOptions& o = *parsed;
  if (o.help) {
    std::cout << LinkcheckHelp();
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
  const std::string self = SiblingBinary("gpulaunch-linkcheck");  // this binary (linkcheck_main.cc)
  const SurveyRun run = RunSurvey(o, *target, self);
  const LinkSurvey& survey = run.survey;
  const std::optional<InferredLeaves>& leaves = run.leaves;
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
