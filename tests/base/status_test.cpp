#include "base/status.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

Status FailIf(bool fail) {
  if (fail) return InvalidInputError("input '{}' has dtype {}", "x", "int32");
  return Status::Ok();
}

Status Chain(bool fail) {
  VIGIL_RETURN_IF_ERROR(FailIf(fail));
  return InternalError("reached the end");
}

Result<int> Half(int v) {
  if (v % 2) return InvalidInputError("{} is odd", v);
  return v / 2;
}

Result<int> Quarter(int v) {
  VIGIL_ASSIGN_OR_RETURN(int h, Half(v));
  VIGIL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, OkIsCheapAndEmpty) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(ExitCodeFor(s), 0);
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(Status, ErrorCarriesDiagnosis) {
  Status s = FailIf(true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x' has dtype int32");
  s.WithFact("expected", "float32").WithCause("int32 and float32 have equal size", "4 bytes each").WithFix("cast");
  EXPECT_EQ(s.diagnosis().facts.size(), 1u);
  EXPECT_EQ(s.diagnosis().causes[0].evidence, "4 bytes each");
  EXPECT_EQ(s.diagnosis().fixes[0], "cast");
  EXPECT_EQ(ExitCodeFor(s), 1);
  EXPECT_EQ(ExitCodeFor(InternalError("bug")), 3);
}

TEST(Status, BuildersOnOkAreNoOps) {
  Status s;
  s.WithFact("a", "b").WithFix("c").WithContext("d");
  EXPECT_TRUE(s.ok());
}

TEST(Status, CopyIsDeep) {
  Status a = FailIf(true);
  Status b = a;
  b.WithContext("outer");
  EXPECT_EQ(a.summary(), "input 'x' has dtype int32");
  EXPECT_EQ(b.summary(), "outer: input 'x' has dtype int32");
}

TEST(Status, ReturnIfErrorPropagatesFirstFailure) {
  EXPECT_EQ(Chain(true).code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(Chain(false).code(), ErrorCode::kInternal);
}

TEST(Result, AssignOrReturn) {
  Result<int> ok = Quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().summary(), "3 is odd");
}

TEST(Result, OkStatusWithoutValueBecomesInternalError) {
  Result<int> r{Status::Ok()};
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

TEST(Status, CodeNames) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::kInvalidModel), "InvalidModel");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kOutOfMemory), "OutOfMemory");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kDeviceFault), "DeviceFault");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kCrashed), "Crashed");
}

}  // namespace
}  // namespace vigil
