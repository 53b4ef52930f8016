#include "launcher/base/control_protocol.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <sstream>

namespace gpulaunch {
namespace {

constexpr size_t kMaxText = 1000;

std::string SafeText(const std::string& s) {
  std::string out = s.substr(0, kMaxText);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// The rest of the stream after one separating space (free text).
std::string Rest(std::istringstream& in) {
  std::string rest;
  std::getline(in, rest);
  if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
  return rest;
}

bool IsStep(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789.") == std::string::npos && s.find('.') != std::string::npos;
}

}  // namespace

void DetectVanishedPeer(int fd) {
  const int on = 1, idle = 3, interval = 1, count = 3;  // 3 s + 3 x 1 s
  const unsigned user_timeout_ms = kVanishedPeerSeconds * 1000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

std::optional<ControlMessage> ParseControlLine(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  ControlMessage m;
  if (!(in >> word >> m.rank) || m.rank < 0) return std::nullopt;
  if (word == "checkin") {
    std::string step;
    if (!(in >> m.pid >> m.world >> m.host >> m.plan_hash >> step) || m.pid <= 0 || m.world <= 0) return std::nullopt;
    m.kind = ControlMessage::Kind::kCheckin;
    if (IsStep(step)) m.slurm_step = step;
    return m;
  }
  if (word == "refuse") {
    if (!(in >> m.host)) return std::nullopt;
    m.kind = ControlMessage::Kind::kRefuse;
    m.text = Rest(in);
    return m;
  }
  if (word == "slot") {
    m.kind = ControlMessage::Kind::kSlot;
    in >> m.text;  // the host's fingerprint, when this rank reports it
    return m;
  }
  if (word == "beat") {
    m.kind = ControlMessage::Kind::kBeat;
    return m;
  }
  if (word == "tail") {
    m.kind = ControlMessage::Kind::kTail;
    m.text = Rest(in);
    return m;
  }
  if (word == "exit") {
    std::string how;
    if (!(in >> how >> m.value) || (how != "code" && how != "signal")) return std::nullopt;
    m.kind = ControlMessage::Kind::kExit;
    m.signaled = how == "signal";
    std::string stopped;
    if (in >> stopped && stopped != "stopped") return std::nullopt;
    m.told_to_stop = stopped == "stopped";
    return m;
  }
  if (word == "metric") {
    m.kind = ControlMessage::Kind::kMetric;
    m.text = Rest(in);
    if (m.text.empty() || m.text.size() > kMaxMetricBytes) return std::nullopt;
    return m;
  }
  if (word == "stacks") {
    long long bytes = -1;
    if (!(in >> bytes) || bytes < 0 || bytes > (1 << 20)) return std::nullopt;
    m.kind = ControlMessage::Kind::kStacks;
    m.payload_bytes = static_cast<size_t>(bytes);
    return m;
  }
  return std::nullopt;
}

CheckinLineParts CheckinLineAround(const ControlMessage& m) {
  return {"checkin " + std::to_string(m.rank) + " ",
          " " + std::to_string(m.world) + " " + m.host + " " + m.plan_hash + " " +
              (m.slurm_step.empty() ? "-" : m.slurm_step) + "\n"};
}

std::string FormatControlLine(const ControlMessage& m) {
  const std::string r = std::to_string(m.rank);
  switch (m.kind) {
    case ControlMessage::Kind::kCheckin: {
      const CheckinLineParts parts = CheckinLineAround(m);
      return parts.before_pid + std::to_string(m.pid) + parts.after_pid;
    }
    case ControlMessage::Kind::kRefuse:
      return "refuse " + r + " " + m.host + " " + SafeText(m.text) + "\n";
    case ControlMessage::Kind::kBeat:
      return "beat " + r + "\n";
    case ControlMessage::Kind::kSlot:
      return "slot " + r + (m.text.empty() ? "" : " " + m.text) + "\n";
    case ControlMessage::Kind::kTail:
      return "tail " + r + " " + SafeText(m.text) + "\n";
    case ControlMessage::Kind::kExit:
      return "exit " + r + (m.signaled ? " signal " : " code ") + std::to_string(m.value) +
             (m.told_to_stop ? " stopped" : "") + "\n";
    case ControlMessage::Kind::kStacks:
      return "stacks " + r + " " + std::to_string(m.payload_bytes) + "\n";
    case ControlMessage::Kind::kMetric: {
      if (m.text.size() > kMaxMetricBytes) return "";
      std::string text = m.text;
      for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
      return "metric " + r + " " + text + "\n";
    }
  }
  return "";
}

}  // namespace gpulaunch
