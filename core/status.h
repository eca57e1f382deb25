// SPDX-License-Identifier: Apache-2.0
// Status and StatusOr: encore's error values. Public functions return these
// and never throw, because a throw in the middle of a stream capture would
// leave the capture open and the stream unusable.
#ifndef ENCORE_CORE_STATUS_H_
#define ENCORE_CORE_STATUS_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace encore {

// Codes follow abseil's meanings; use the most specific one that applies.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

// [[nodiscard]]: a dropped Status is a dropped error; write `(void)` where
// ignoring one is deliberate, and say why.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string_view message);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  std::string_view message() const {
    return rep_ ? std::string_view(rep_->message) : std::string_view();
  }
  // True for the refusal a capture-aware shim returns inside a capture.
  bool capture_refusal() const { return rep_ && rep_->capture_refusal; }

  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  friend Status CaptureRefusal(std::string_view message);
  struct Rep {
    StatusCode code;
    std::string message;
    bool capture_refusal = false;
  };
  // Null when OK, so an OK status costs one pointer and no allocation on the
  // replay path.
  std::shared_ptr<const Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string_view message);
Status FailedPreconditionError(std::string_view message);
Status ResourceExhaustedError(std::string_view message);
Status UnimplementedError(std::string_view message);
Status InternalError(std::string_view message);
Status UnavailableError(std::string_view message);
Status NotFoundError(std::string_view message);
Status AlreadyExistsError(std::string_view message);
Status OutOfRangeError(std::string_view message);

// What a shim returns when it is asked, inside a stream capture, to do
// something a graph cannot record (read a device value back, say). Its code is
// kFailedPrecondition; the manager treats it as an expected capture failure.
Status CaptureRefusal(std::string_view message);
bool IsCaptureRefusal(const Status& status);

namespace internal {
// Prints "StatusOr::value() on an error: <status>" to stderr and aborts. Out
// of line and the same in every build mode: reading the value of an error is
// a bug that must stop the process, never undefined behaviour.
[[noreturn]] void DieOnErrorValue(const Status& status);
}  // namespace internal

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // An error status; an OK status here is a programming error and becomes
  // kInternal rather than a StatusOr without a value.
  // (Initialized, not assigned: nvcc warns on a discarded assignment result
  // of a [[nodiscard]] type.)
  StatusOr(Status status)  // NOLINT
      : status_(status.ok() ? Status(StatusCode::kInternal, "StatusOr built from an OK status without a value")
                            : std::move(status)) {}
  StatusOr(const T& value) : value_(value) {}       // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // On an error these end the process with the status text.
  T& value() & {
    if (!ok()) internal::DieOnErrorValue(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) internal::DieOnErrorValue(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieOnErrorValue(status_);
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace encore

// Returns early with the status of `expr` when it is not OK.
#define ENCORE_RETURN_IF_ERROR(expr)                \
  do {                                              \
    ::encore::Status encore_status_ = (expr);       \
    if (!encore_status_.ok()) return encore_status_; \
  } while (0)

#define ENCORE_CONCAT_INNER_(a, b) a##b
#define ENCORE_CONCAT_(a, b) ENCORE_CONCAT_INNER_(a, b)
// `ENCORE_ASSIGN_OR_RETURN(auto x, MakeX());`
#define ENCORE_ASSIGN_OR_RETURN(lhs, expr) \
  ENCORE_ASSIGN_OR_RETURN_IMPL_(ENCORE_CONCAT_(encore_statusor_, __LINE__), lhs, expr)
#define ENCORE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(*tmp)

#endif  // ENCORE_CORE_STATUS_H_
