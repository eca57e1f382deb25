// SPDX-License-Identifier: Apache-2.0
#include "encore/core/status.h"

#include <cstdio>
#include <cstdlib>

namespace encore {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN_CODE";
}

Status::Status(StatusCode code, std::string_view message) {
  if (code != StatusCode::kOk) {
    rep_ = std::make_shared<const Rep>(Rep{code, std::string(message), false});
  }
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  out += ": ";
  out += message();
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

Status InvalidArgumentError(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
Status FailedPreconditionError(std::string_view m) { return Status(StatusCode::kFailedPrecondition, m); }
Status ResourceExhaustedError(std::string_view m) { return Status(StatusCode::kResourceExhausted, m); }
Status UnimplementedError(std::string_view m) { return Status(StatusCode::kUnimplemented, m); }
Status InternalError(std::string_view m) { return Status(StatusCode::kInternal, m); }
Status UnavailableError(std::string_view m) { return Status(StatusCode::kUnavailable, m); }
Status NotFoundError(std::string_view m) { return Status(StatusCode::kNotFound, m); }
Status AlreadyExistsError(std::string_view m) { return Status(StatusCode::kAlreadyExists, m); }
Status OutOfRangeError(std::string_view m) { return Status(StatusCode::kOutOfRange, m); }

Status CaptureRefusal(std::string_view message) {
  Status s;
  s.rep_ = std::make_shared<const Status::Rep>(
      Status::Rep{StatusCode::kFailedPrecondition, std::string(message), true});
  return s;
}

bool IsCaptureRefusal(const Status& status) { return status.capture_refusal(); }

namespace internal {
void DieOnErrorValue(const Status& status) {
  std::fprintf(stderr, "encore: StatusOr::value() on an error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

}  // namespace encore
