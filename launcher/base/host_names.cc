#include "launcher/base/host_names.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace gpulaunch {
namespace {

std::string ShortName(const std::string& n) { return n.substr(0, n.find('.')); }

// The address in inet_ntop's form, or "" when `text` is not numeric: "::01"
// and "::1" compare equal afterwards.
std::string CanonicalAddress(const std::string& text) {
  unsigned char bytes[sizeof(in6_addr)];
  char buf[INET6_ADDRSTRLEN] = {0};
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1) return inet_ntop(AF_INET, bytes, buf, sizeof buf);
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1) return inet_ntop(AF_INET6, bytes, buf, sizeof buf);
  return "";
}

bool IsLoopback(const std::string& address) { return address.rfind("127.", 0) == 0 || address == "::1"; }

bool IsLocalAddress(const std::string& address, const std::vector<std::string>& local) {
  return IsLoopback(address) || std::find(local.begin(), local.end(), address) != local.end();
}

}  // namespace

std::string AddressText(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string LocalHostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::vector<std::string> LocalInterfaceAddresses() {
  std::vector<std::string> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (std::string a = AddressText(i->ifa_addr); !a.empty()) out.push_back(std::move(a));
  }
  freeifaddrs(ifs);
  return out;
}

bool IsThisHost(const std::string& name, const AddressLookup& lookup) {
  if (name.empty()) return false;
  if (name == "localhost") return true;
  const std::string self = LocalHostname();
  if (name == self || ShortName(name) == ShortName(self)) return true;
  if (const std::string numeric = CanonicalAddress(name); !numeric.empty()) {
    return IsLocalAddress(numeric, LocalInterfaceAddresses());
  }
  // The interfaces are listed only for a name the lookup knows.
  const std::vector<std::string> found = lookup(name);
  if (found.empty()) return false;
  const std::vector<std::string> local = LocalInterfaceAddresses();
  for (const std::string& address : found) {
    const std::string canonical = CanonicalAddress(address);
    if (!canonical.empty() && IsLocalAddress(canonical, local)) return true;
  }
  return false;
}

}  // namespace gpulaunch
