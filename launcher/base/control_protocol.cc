#include "launcher/base/control_protocol.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr size_t kMaxText = 1000;

std::string SafeText(const std::string& s) {
  std::string out = s.substr(0, kMaxText);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// Peer text as it arrives: control and escape bytes shown escaped (a line
// sent raw, not through FormatControlLine, can hold any byte), then cut.
std::string SafeReceived(std::string_view s) {
  std::string out = EscapeControlBytes(s.substr(0, kMaxText));
  if (out.size() > kMaxText + 64) out.resize(kMaxText + 64);
  return out;
}

bool IsStep(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789.") == std::string::npos && s.find('.') != std::string::npos;
}

}  // namespace

void ConfigureControlSocket(int fd) {
  const int on = 1, idle = 3, interval = 1, count = 3;  // 3 s + 3 x 1 s
  const unsigned user_timeout_ms = kVanishedPeerSeconds * 1000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

std::optional<ControlMessage> ParseControlLine(const std::string& line) {
  Words in(line);
  ControlMessage m;
  const std::optional<std::string_view> word = in.Next();
  const std::optional<int> rank = in.NextInt<int>();
  if (!word || !rank || *rank < 0) return std::nullopt;
  m.rank = *rank;
  if (word == "checkin") {
    const std::optional<int> pid = in.NextInt<int>();
    const std::optional<int> world = in.NextInt<int>();
    const std::optional<std::string_view> host = in.Next(), plan_hash = in.Next(), step = in.Next();
    if (!pid || !world || !host || !plan_hash || !step || *pid <= 0 || *world <= 0) return std::nullopt;
    m.kind = ControlMessage::Kind::kCheckin;
    m.pid = *pid;
    m.world = *world;
    m.host = SafeReceived(*host);
    m.plan_hash = SafeReceived(*plan_hash);
    if (IsStep(*step)) m.slurm_step = *step;
    m.in_cgroup = in.Next() == std::optional<std::string_view>("cgroup");
    return m;
  }
  if (word == "refuse") {
    const std::optional<std::string_view> host = in.Next();
    if (!host) return std::nullopt;
    m.kind = ControlMessage::Kind::kRefuse;
    m.host = SafeReceived(*host);
    m.text = SafeReceived(in.RestOfLine());
    return m;
  }
  if (word == "slot") {
    m.kind = ControlMessage::Kind::kSlot;
    m.text = SafeReceived(in.Next().value_or(""));  // the host's fingerprint, when this rank reports it
    return m;
  }
  if (word == "beat") {
    m.kind = ControlMessage::Kind::kBeat;
    return m;
  }
  if (word == "singleton") {
    m.kind = ControlMessage::Kind::kSingleton;
    return m;
  }
  if (word == "tail") {
    m.kind = ControlMessage::Kind::kTail;
    m.text = SafeReceived(in.RestOfLine());
    return m;
  }
  if (word == "exit") {
    const std::optional<std::string_view> how = in.Next();
    const std::optional<int> value = in.NextInt<int>();
    if (!how || !value || (how != "code" && how != "signal")) return std::nullopt;
    m.kind = ControlMessage::Kind::kExit;
    m.value = *value;
    m.signaled = how == "signal";
    const std::optional<std::string_view> stopped = in.Next();
    if (stopped && stopped != "stopped") return std::nullopt;
    m.told_to_stop = stopped.has_value();
    return m;
  }
  if (word == "helper") {
    const std::optional<int> pid = in.NextInt<int>();
    const std::optional<int> ms = in.NextInt<int>();
    const std::optional<std::string_view> how = in.Next();
    if (!pid || !ms || !how || *pid <= 0 || *ms < 0 || (how != "term" && how != "kill")) return std::nullopt;
    m.kind = ControlMessage::Kind::kHelper;
    m.pid = *pid;
    m.value = *ms;
    m.signaled = how == "kill";
    m.text = SafeReceived(in.RestOfLine());
    return m;
  }
  if (word == "metric") {
    m.kind = ControlMessage::Kind::kMetric;
    m.text = in.RestOfLine();
    if (m.text.empty() || m.text.size() > kMaxMetricBytes) return std::nullopt;
    return m;
  }
  if (word == "stacks") {
    const std::optional<int64_t> bytes = in.NextInt<int64_t>();
    if (!bytes || *bytes < 0 || *bytes > (1 << 20)) return std::nullopt;
    m.kind = ControlMessage::Kind::kStacks;
    m.payload_bytes = static_cast<size_t>(*bytes);
    return m;
  }
  return std::nullopt;
}

CheckinLineParts CheckinLineAround(const ControlMessage& m) {
  return {"checkin " + std::to_string(m.rank) + " ",
          " " + std::to_string(m.world) + " " + m.host + " " + m.plan_hash + " " +
              (m.slurm_step.empty() ? "-" : m.slurm_step) + (m.in_cgroup ? " cgroup" : "") + "\n"};
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
    case ControlMessage::Kind::kSingleton:
      return "singleton " + r + "\n";
    case ControlMessage::Kind::kSlot:
      return "slot " + r + (m.text.empty() ? "" : " " + m.text) + "\n";
    case ControlMessage::Kind::kTail:
      return "tail " + r + " " + SafeText(m.text) + "\n";
    case ControlMessage::Kind::kExit:
      return "exit " + r + (m.signaled ? " signal " : " code ") + std::to_string(m.value) +
             (m.told_to_stop ? " stopped" : "") + "\n";
    case ControlMessage::Kind::kStacks:
      return "stacks " + r + " " + std::to_string(m.payload_bytes) + "\n";
    case ControlMessage::Kind::kHelper:
      return "helper " + r + " " + std::to_string(m.pid) + " " + std::to_string(m.value) +
             (m.signaled ? " kill " : " term ") + SafeText(m.text) + "\n";
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
