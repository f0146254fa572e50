#include "engine/core/status.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

StatusOr<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgumentError("value " + std::to_string(v) + " is not positive");
  return v;
}

Status Doubles(int v, int* out) {
  ASSIGN_OR_RETURN(int parsed, ParsePositive(v));
  *out = parsed * 2;
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorsPropagateThroughMacros) {
  int out = 0;
  EXPECT_TRUE(Doubles(4, &out).ok());
  EXPECT_EQ(out, 8);
  Status bad = Doubles(-1, &out);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "value -1 is not positive");
  EXPECT_EQ(bad.WithContext("job 1").message(), "job 1: value -1 is not positive");
  EXPECT_EQ(bad.ToString(), "invalid-argument: value -1 is not positive");
}

}  // namespace
}  // namespace diagnose
