#include "launcher/control_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "launcher/host_identity.h"

namespace gpulaunch {

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start(const std::string& bind_addr, const std::string& expected_hash) {
  expected_hash_ = expected_hash;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Internal("cannot create the check-in socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, bind_addr.c_str(), &addr.sin_addr) != 1) return Internal("bad bind address " + bind_addr);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listen_fd_, 1024) != 0) {
    return Internal("cannot listen for rank check-ins on " + bind_addr);
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe2(wake_, O_CLOEXEC) != 0) return Internal("cannot create the check-in wake-up pipe");
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void ControlServer::Stop() {
  stop_ = true;
  if (wake_[1] >= 0) [[maybe_unused]] auto n = write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void ControlServer::Serve() {
  while (!stop_) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) <= 0 || !(p[0].revents & POLLIN)) continue;
    std::lock_guard<std::mutex> lock(accept_mu_);
    AcceptPending(0);
  }
}

void ControlServer::AcceptPending(int timeout_ms) {
  for (;;) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    Handle(fd);
  }
}

void ControlServer::Handle(int fd) {
  std::string line;
  char buf[512];
  pollfd p{fd, POLLIN, 0};
  // A shim sends one short line and closes; never wait long on one peer.
  while (line.find('\n') == std::string::npos && line.size() < 4096 && poll(&p, 1, 1000) > 0) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::istringstream in(line);
  std::string word, host, hash;
  int rank = -1, pid = -1;
  if (!(in >> word >> rank >> pid >> host >> hash) || word != "checkin" || rank < 0) return;
  std::string step;
  const bool has_step = in >> step && step.find_first_not_of("0123456789.") == std::string::npos &&
                        step.find('.') != std::string::npos;
  std::lock_guard<std::mutex> lock(mu_);
  ranks_[rank] = {pid, host};
  if (has_step) slurm_steps_.insert(step);
  if (hash != expected_hash_) mismatched_.insert(rank);
}

int ControlServer::CheckedIn() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(ranks_.size());
}

std::set<int> ControlServer::LocalPids() {
  if (listen_fd_ >= 0) {
    std::lock_guard<std::mutex> accept_lock(accept_mu_);
    AcceptPending(0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> pids;
  for (const auto& [rank, ph] : ranks_)
    if (IsLocalHost(ph.second)) pids.insert(ph.first);
  return pids;
}

std::set<std::string> ControlServer::SlurmSteps() {
  if (listen_fd_ >= 0) {
    std::lock_guard<std::mutex> accept_lock(accept_mu_);
    AcceptPending(0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return slurm_steps_;
}

std::set<int> ControlServer::HashMismatches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mismatched_;
}

}  // namespace gpulaunch
