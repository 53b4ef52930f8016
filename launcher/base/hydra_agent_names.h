// The names by which gpulaunch's Hydra engine (launcher/engine/hydra_engine.h)
// reaches the shim's Hydra roles (launcher/shim/hydra_launch_agent.h).
#pragma once

namespace gpulaunch {

// The shim's second name (a link beside it): Hydra's ssh.
inline constexpr const char* kHydraSshAgentName = "gpulaunch-hydra-ssh";
// The shim's flag for the other side: read the environment, exec the proxy.
inline constexpr const char* kHydraProxyFlag = "--hydra-proxy";

}  // namespace gpulaunch
