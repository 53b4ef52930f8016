// Is a host name this machine, as the launcher asks it (discover locally or
// through the engine; which ranks are local), resolving names through the
// system's name service (getaddrinfo). The rules are IsThisHost's
// (host_names.h); the answer for each name is kept for the life of the
// process (thread-safe). Not linked into the exec shim, which is static and
// brings its own lookup.
#pragma once

#include <string>
#include <vector>

#include "launcher/base/host_names.h"

namespace gpulaunch {

bool IsLocalHost(const std::string& name);
// A name's addresses through getaddrinfo, numeric; empty when it does not resolve.
std::vector<std::string> AddressesByResolver(const std::string& name);
// The local address that routes to `remote` (no packet is sent), or "" when
// it cannot be determined. Remote ranks connect back to gpulaunch on it.
std::string LocalAddressTowards(const std::string& remote);
// The name of the network interface that holds the IPv4 address `address`
// ("lo" for 127.0.0.1), or "" when no interface of this host holds it.
std::string InterfaceHolding(const std::string& address);

}  // namespace gpulaunch
