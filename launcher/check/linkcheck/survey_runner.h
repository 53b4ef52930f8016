// The measurements of `gpulaunch linkcheck --hosts`, run through the engine
// (mpirun, or srun in an allocation): each link by starting the server on
// one host and the client on the other; each host's shared memory; with
// --concurrent, rounds of every host's flow at once, and the leaves inferred
// from them. What the results mean is link_survey.h's (pure) business.
#pragma once

#include <optional>
#include <string>

#include "launcher/check/host_command.h"
#include "launcher/check/linkcheck/leaf_inference.h"
#include "launcher/check/linkcheck/link_survey.h"
#include "launcher/check/linkcheck/linkcheck_options.h"

namespace gpulaunch {

// One link measured: `self` (this binary, gpulaunch-linkcheck) serving on
// `to` and measuring from `from`, with the run's secret in the environment
// (ucx_link.h). A failure is in the result's error, in the client's words
// where it said any, else the engine's.
LinkResult MeasurePair(const std::string& from, const std::string& to, const LinkcheckOptions& o,
                       const HostCommandTarget& target, const std::string& self);

struct SurveyRun {
  LinkSurvey survey;
  std::optional<InferredLeaves> leaves;  // --concurrent: empty when a round never ran at once
};

// The --pattern's links one at a time, then (unless --no-shared-memory or
// --links none) each host's shared memory, then with --concurrent the
// rounds. Progress goes to stderr.
SurveyRun RunSurvey(const LinkcheckOptions& o, const HostCommandTarget& target, const std::string& self);

}  // namespace gpulaunch
