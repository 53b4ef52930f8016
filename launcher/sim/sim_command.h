// `gpulaunch sim (--trace FILE | --synthetic SPEC) --cluster SPEC [--policy
// NAME|all] [--templates DEFS] [--teams N] [--quota SPEC] [--checkpoint S]
// [--reserve NAME:TEAM:HOSTS@START-END]... [--format table|json] [--out
// FILE]`: replays a job trace, real or synthetic, on a simulated pool
// (policies/pool/simulator.h) under gpulaunch's policy and the baselines, in
// one run, and reports JCT, queueing, utilisation, fragmentation, topology
// spans, preemptions, migrations, guarantee violations, the hard rules'
// audit and the decision latency (launcher/sim_output.h). benchmarks/plot-sim
// draws the JSON's utilisation over time and JCT CDF as PNG plots.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunSimCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
