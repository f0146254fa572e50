// Errors as values at module boundaries (Abseil/Envoy style): a code plus a message that already
// names the file:line:col, job, query or endpoint it is about, so the CLI can print it as one line.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace diagnose {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad user input: flags, job reference, YAML, PromQL template
  kNotFound,           // job, file, metric or endpoint does not exist
  kAlreadyExists,
  kPermissionDenied,
  kFailedPrecondition, // e.g. a live job's TSDB cannot be served from a copy
  kUnavailable,        // endpoint down, Prometheus died; retryable
  kDeadlineExceeded,   // timeout; retryable
  kDataLoss,           // corrupt or truncated data
  kParse,              // malformed log, JSON or YAML content
  kCancelled,          // SIGINT/SIGTERM
  kInternal,
  kResourceExhausted,  // a named limit (engine/core/limits.h) was hit
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
  // "<code>: <message>", for logs; the CLI prints message() alone.
  std::string ToString() const;
  // Prefixes context ("while opening job 8308: ...") without losing the code.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status ParseError(std::string m) { return {StatusCode::kParse, std::move(m)}; }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}                 // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::move(value)) {}           // NOLINT
  StatusOr(const Status& status) : status_(status) { assert(!status.ok()); }  // NOLINT
  StatusOr(Status&& status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { assert(ok()); return *value_; }
  T& value() & { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace diagnose

#define DIAGNOSE_CONCAT_INNER(a, b) a##b
#define DIAGNOSE_CONCAT(a, b) DIAGNOSE_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::diagnose::Status diagnose_status_ = (expr);      \
    if (!diagnose_status_.ok()) return diagnose_status_; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(DIAGNOSE_CONCAT(diagnose_statusor_, __LINE__), lhs, expr)
