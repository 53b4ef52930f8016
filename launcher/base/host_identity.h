// Is a host name this machine? Used by the launcher (discover locally or
// through the engine) and by the exec shim (does this rank run where the plan
// says). A name is local when it is "localhost", equals gethostname() (short
// or full), or resolves to an address configured on a local interface. The
// answer for each name is kept for the life of the process (thread-safe).
#pragma once

#include <string>

namespace gpulaunch {

std::string LocalHostname();
bool IsLocalHost(const std::string& name);
// The local address that routes to `remote` (no packet is sent), or "" when
// it cannot be determined. Remote ranks connect back to gpulaunch on it.
std::string LocalAddressTowards(const std::string& remote);

}  // namespace gpulaunch
