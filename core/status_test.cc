// SPDX-License-Identifier: Apache-2.0
#include "encore/core/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace encore {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, FactoriesCarryCodeAndMessage) {
  struct Case {
    Status s;
    StatusCode code;
    const char* text;
  } cases[] = {
      {InvalidArgumentError("bad x"), StatusCode::kInvalidArgument, "INVALID_ARGUMENT: bad x"},
      {FailedPreconditionError("p"), StatusCode::kFailedPrecondition, "FAILED_PRECONDITION: p"},
      {ResourceExhaustedError("oom"), StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED: oom"},
      {UnimplementedError("u"), StatusCode::kUnimplemented, "UNIMPLEMENTED: u"},
      {InternalError("i"), StatusCode::kInternal, "INTERNAL: i"},
      {UnavailableError("gone"), StatusCode::kUnavailable, "UNAVAILABLE: gone"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.s.ok());
    EXPECT_EQ(c.s.code(), c.code);
    EXPECT_EQ(c.s.ToString(), c.text);
    EXPECT_FALSE(IsCaptureRefusal(c.s));
  }
}

TEST(StatusTest, CaptureRefusalIsRecognisedAndDistinctFromPlainPrecondition) {
  Status r = CaptureRefusal("ReadScalar reads a device value back to the host");
  EXPECT_TRUE(IsCaptureRefusal(r));
  EXPECT_EQ(r.code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(IsCaptureRefusal(FailedPreconditionError("ReadScalar reads a device value back to the host")));
  Status copy = r;
  EXPECT_TRUE(IsCaptureRefusal(copy));
}

TEST(StatusOrTest, HoldsValueOrError) {
  StatusOr<int> v = 7;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
  StatusOr<int> e = NotFoundError("no method 'x'");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
}

TEST(StatusOrTest, OkStatusWithoutValueBecomesInternal) {
  StatusOr<int> e = OkStatus();
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInternal);
}

TEST(StatusOrTest, MoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(3);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> q = *std::move(p);
  EXPECT_EQ(*q, 3);
}

Status Chain(bool fail) {
  auto make = [&]() -> StatusOr<int> {
    if (fail) return InvalidArgumentError("inner");
    return 5;
  };
  ENCORE_ASSIGN_OR_RETURN(int x, make());
  ENCORE_RETURN_IF_ERROR(x == 5 ? OkStatus() : InternalError("x"));
  return OkStatus();
}

TEST(StatusMacrosTest, PropagateErrors) {
  EXPECT_TRUE(Chain(false).ok());
  EXPECT_EQ(Chain(true).message(), "inner");
}

}  // namespace
}  // namespace encore

// Reading the value of an error ends the process with the status text in
// every build mode (the old assert vanished under NDEBUG, which left
// undefined behaviour).
TEST(StatusOrDeathTest, ValueOfAnErrorDiesWithTheStatusText) {
  encore::StatusOr<int> err = encore::InvalidArgumentError("input 0 is bad");
  EXPECT_DEATH((void)err.value(), "INVALID_ARGUMENT: input 0 is bad");
  EXPECT_DEATH((void)*err, "StatusOr::value\\(\\) on an error");
  const encore::StatusOr<std::string> cerr = encore::InternalError("boom");
  EXPECT_DEATH((void)cerr->size(), "INTERNAL: boom");
}
