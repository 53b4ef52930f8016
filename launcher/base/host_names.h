// Is a host name this machine, decided without the system's name service:
// the part of host identity that the exec shim needs. The shim is linked
// statically (it starts once per rank), and a static C library resolves
// names only through its built-in "files" and "dns" sources; so the caller
// passes the lookup it trusts (the launcher: getaddrinfo, host_identity.h;
// the shim: `getent ahosts`, launcher/shim/getent_lookup.h), and it is asked
// only when no cheaper rule answers.
#pragma once

#include <functional>
#include <string>
#include <vector>

struct sockaddr;

namespace gpulaunch {

// An IPv4 or IPv6 socket address's numeric text, "" for another family.
std::string AddressText(const sockaddr* sa);

// gethostname(), or "localhost" when it fails.
std::string LocalHostname();

// The numeric addresses configured on this machine's interfaces (getifaddrs).
std::vector<std::string> LocalInterfaceAddresses();

// A name's addresses in numeric form; empty when it does not resolve.
using AddressLookup = std::function<std::vector<std::string>(const std::string&)>;

// True when `name` is this machine: "localhost", a loopback address,
// gethostname() (short or full, either side), a numeric address on a local
// interface, or a name whose looked-up addresses include one of those.
// `lookup` is called only for a name that is not numeric and not this
// host's own name.
bool IsThisHost(const std::string& name, const AddressLookup& lookup);

}  // namespace gpulaunch
