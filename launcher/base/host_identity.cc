#include "launcher/base/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>

namespace gpulaunch {
namespace {

std::string AddrString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string ShortName(const std::string& n) { return n.substr(0, n.find('.')); }

}  // namespace

std::string LocalHostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

namespace {

bool ResolveIsLocal(const std::string& name) {
  const std::string self = LocalHostname();
  if (name == self || ShortName(name) == ShortName(self)) return true;
  std::set<std::string> local;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next)
      if (i->ifa_addr) local.insert(AddrString(i->ifa_addr));
    freeifaddrs(ifs);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0) return false;
  bool is_local = false;
  for (addrinfo* a = res; a; a = a->ai_next) {
    const std::string addr = AddrString(a->ai_addr);
    if (local.count(addr) || addr.rfind("127.", 0) == 0) is_local = true;
  }
  freeaddrinfo(res);
  return is_local;
}

}  // namespace

bool IsLocalHost(const std::string& name) {
  if (name == "localhost" || name.rfind("127.", 0) == 0 || name == "::1") return true;
  // Each name is resolved once a process: an answer takes getifaddrs and a
  // name lookup, and a launcher asks it for every rank (teardown, at 2,048
  // ranks, asked once per rank).
  static std::mutex mu;
  static std::map<std::string, bool> known;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(name); it != known.end()) return it->second;
  }
  const bool local = ResolveIsLocal(name);
  std::lock_guard<std::mutex> lock(mu);
  known.emplace(name, local);
  return local;
}

std::string LocalAddressTowards(const std::string& remote) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(remote.c_str(), "9", &hints, &res) != 0) return "";
  std::string out;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  // connect() on a UDP socket only picks a route; nothing is sent.
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in self{};
    socklen_t len = sizeof self;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) out = AddrString(reinterpret_cast<sockaddr*>(&self));
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return out;
}

}  // namespace gpulaunch
