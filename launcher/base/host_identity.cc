#include "launcher/base/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <mutex>

namespace gpulaunch {
std::vector<std::string> AddressesByResolver(const std::string& name) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) out.push_back(AddressText(a->ai_addr));
  freeaddrinfo(res);
  return out;
}

bool IsLocalHost(const std::string& name) {
  // Each name is resolved once a process: an answer takes getifaddrs and a
  // name lookup, and a launcher asks it for every rank (teardown, at 2,048
  // ranks, asked once per rank).
  static std::mutex mu;
  static std::map<std::string, bool> known;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(name); it != known.end()) return it->second;
  }
  const bool local = IsThisHost(name, AddressesByResolver);
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
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) out = AddressText(reinterpret_cast<sockaddr*>(&self));
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return out;
}

std::string InterfaceHolding(const std::string& address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i && name.empty(); i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && i->ifa_name && AddressText(i->ifa_addr) == address) {
      name = i->ifa_name;
    }
  }
  freeifaddrs(list);
  return name;
}

}  // namespace gpulaunch
