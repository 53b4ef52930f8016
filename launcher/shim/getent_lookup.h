// A host name's addresses through `getent ahosts NAME` (glibc's getent,
// run from PATH as an argv array): the shim's name lookup. The shim is
// linked statically, and a static C library would reach only its built-in
// "files" and "dns" sources, not the modules nsswitch.conf may name (sss,
// ldap, myhostname, ...); getent is dynamic and reads them all, as the rest
// of the system does. Asked only for a planned host name that is neither
// this host's own name nor numeric (host_names.h), so most ranks never run it.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

// Numeric addresses, in getent's order, without repeats; empty when the name
// does not resolve or getent cannot run (within `timeout_ms`).
std::vector<std::string> AddressesByGetent(const std::string& name, int timeout_ms = 15000);

// getent ahosts' output ("ADDRESS SOCKTYPE [NAMES]" lines) to its addresses.
std::vector<std::string> ParseGetentHosts(const std::string& output);

}  // namespace gpulaunch
