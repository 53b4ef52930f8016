// What the shim keeps or passes on from its child's pipes: the last lines of
// its stderr (for the exit report) and its step records (with --profile).
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "launcher/shim/control_client.h"

namespace gpulaunch {

// The last kLines lines of a byte stream, each cut at kLineBytes.
class TailKeeper {
 public:
  static constexpr size_t kLines = 20;
  static constexpr size_t kLineBytes = 500;

  void Feed(const char* data, size_t n);
  // The kept lines, a last one without its newline included.
  std::deque<std::string> Finish();

 private:
  void Push();
  std::string partial_;
  std::deque<std::string> lines_;
};

// Splits the metrics pipe into lines (one JSON record each) and sends each
// to gpulaunch as a `metric` message; a line over kMaxMetricBytes is dropped
// whole, never cut. Without a connected `control` the records are dropped.
class MetricsForwarder {
 public:
  MetricsForwarder(int rank, ControlClient* control) : rank_(rank), control_(control) {}
  void Feed(const char* data, size_t n);
  // Reads what the (non-blocking) pipe holds now; false at end-of-file or error.
  bool Drain(int fd);

 private:
  int rank_;
  ControlClient* control_;
  std::string partial_;
};

}  // namespace gpulaunch
