// Status / StatusOr: expected failures as values, never exceptions across
// library boundaries. The code set is small and closed on purpose: callers
// branch on the code, users read the message.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace gpulaunch {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the user's input is wrong (usage error, exit 2)
  kNotFound,         // a named thing (file, host, program) does not exist
  kInfeasible,       // the request can never fit the given resources
  kUnavailable,      // not now: capacity or a transient condition
  kFailedPrecondition,  // environment not as required (e.g. root without opt-in)
  kInternal,         // broken: a bug or an engine failure
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", for logs and test failure messages.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Infeasible(std::string m) { return {StatusCode::kInfeasible, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Holds either a value or a non-OK Status. Accessing value() of an error is an
// invariant violation (assert), not an expected failure.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace gpulaunch

// Propagate a non-OK status to the caller.
#define GL_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::gpulaunch::Status gl_status_ = (expr);  \
    if (!gl_status_.ok()) return gl_status_;  \
  } while (0)

#define GL_CONCAT_INNER(a, b) a##b
#define GL_CONCAT(a, b) GL_CONCAT_INNER(a, b)
// Declare `lhs` from a StatusOr, or return its error.
#define GL_ASSIGN_OR_RETURN(lhs, expr) GL_ASSIGN_OR_RETURN_IMPL(GL_CONCAT(gl_sor_, __LINE__), lhs, expr)
#define GL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
