#include "launcher/shim/child_streams.h"

#include <unistd.h>

#include <cerrno>

namespace gpulaunch {

void TailKeeper::Feed(const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == '\n') {
      Push();
    } else if (partial_.size() < kLineBytes) {
      partial_ += data[i];
    }
  }
}

std::deque<std::string> TailKeeper::Finish() {
  if (!partial_.empty()) Push();
  return lines_;
}

void TailKeeper::Push() {
  lines_.push_back(partial_);
  partial_.clear();
  if (lines_.size() > kLines) lines_.pop_front();
}

void MetricsForwarder::Feed(const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] != '\n') {
      if (partial_.size() <= kMaxMetricBytes) partial_ += data[i];
      continue;
    }
    if (control_ && control_->connected() && !partial_.empty() && partial_.size() <= kMaxMetricBytes) {
      ControlMessage m;
      m.kind = ControlMessage::Kind::kMetric;
      m.rank = rank_;
      m.text = partial_;
      control_->Send(m);
    }
    partial_.clear();
  }
}

bool MetricsForwarder::Drain(int fd) {
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      Feed(buf, static_cast<size_t>(n));
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
  }
}

}  // namespace gpulaunch
