// FP_INTERNAL_CHECK's handler hook (core/diagnostic.h): a library user can turn a bug into an
// exception instead of losing the process; without a handler the default report and exit 70 stay
// (the CLI's tests check that path: tests/lit/cli).

#include <gtest/gtest.h>

#include <string>

#include "core/diagnostic.h"

namespace fp {
namespace {

// Installs a handler for the scope of one test.
class ScopedHandler {
 public:
  explicit ScopedHandler(InternalFailureHandler h) : previous_(set_internal_failure_handler(h)) {}
  ~ScopedHandler() { set_internal_failure_handler(previous_); }
  ScopedHandler(const ScopedHandler&) = delete;
  ScopedHandler& operator=(const ScopedHandler&) = delete;

 private:
  InternalFailureHandler previous_;
};

int check_positive(int x) {
  FP_INTERNAL_CHECK(x > 0, "x = {} is not positive", x);
  return x;
}

TEST(InternalFailure, AThrowingHandlerTurnsAFailedCheckIntoAnException) {
  ScopedHandler h(throw_internal_error);
  EXPECT_EQ(check_positive(3), 3);
  try {
    check_positive(-2);
    FAIL() << "the check passed";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.failure().message, "x = -2 is not positive");
    EXPECT_STREQ(e.failure().condition, "x > 0");
    EXPECT_NE(std::string(e.failure().file).find("internal_failure_test.cpp"), std::string::npos);
    EXPECT_GT(e.failure().line, 0);
    EXPECT_NE(std::string(e.what()).find("x = -2 is not positive"), std::string::npos) << e.what();
  }
}

TEST(InternalFailure, UnreachableReportsThroughTheSameHandler) {
  ScopedHandler h(throw_internal_error);
  EXPECT_THROW(FP_UNREACHABLE("no case {}", 7), InternalError);
}

TEST(InternalFailure, WithoutAHandlerTheProcessExitsWithSeventy) {
  EXPECT_EXIT(check_positive(0), ::testing::ExitedWithCode(kExitInternal), "internal error at .*x = 0 is not positive");
}

TEST(InternalFailure, InstallingReturnsThePreviousHandler) {
  const InternalFailureHandler before = set_internal_failure_handler(throw_internal_error);
  EXPECT_EQ(set_internal_failure_handler(before), throw_internal_error);
}

}  // namespace
}  // namespace fp
