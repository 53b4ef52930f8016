// `gpulaunch sim --trace FILE --cluster SPEC [--policy NAME|all] [--teams N
// --quota SPEC] [--format table|json] [--out FILE]`: replays a job trace on
// a simulated pool (policies/pool/simulator.h) under gpulaunch's policy and
// the baselines, in one run, and reports JCT, queueing, utilisation,
// fragmentation, topology spans, preemptions, guarantee violations and the
// decision latency. `benchmarks/plot-sim` draws the JSON's utilisation and
// JCT CDF.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunSimCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
