// Tests of cairn's error family: codes, names and re-raising by code.
#include <cairn/error.hpp>
#include <gtest/gtest.h>

#include <stdexcept>

TEST(Errors, ThrowErrorRaisesTheSubclassOfTheCode) {
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::io, "x"), cairn::IoError);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::format, "x"), cairn::FormatError);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::invalid_argument, "x"), cairn::InvalidArgument);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::collective_mismatch, "x"),
               cairn::CollectiveMismatch);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::timeout, "x"), cairn::TimeoutError);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::not_found, "x"), cairn::NotFound);
  EXPECT_THROW(cairn::throw_error(cairn::ErrorCode::unsupported, "x"), cairn::Unsupported);
  try {
    cairn::throw_error(cairn::ErrorCode::internal, "boom");
  } catch (const cairn::Error& e) {
    EXPECT_EQ(e.code(), cairn::ErrorCode::internal);
    EXPECT_STREQ(e.what(), "boom");
  }
}

TEST(Errors, SubclassesCarryWhatTheyName) {
  const cairn::FormatError format("/ckpt/10/state/cairn-tree.json", "leaves[3].shape", "bad");
  EXPECT_EQ(format.path(), "/ckpt/10/state/cairn-tree.json");
  EXPECT_EQ(format.field(), "leaves[3].shape");
  EXPECT_EQ(format.code(), cairn::ErrorCode::format);
  const cairn::IoError io("/ckpt/tmp", "open failed");
  EXPECT_EQ(io.path(), "/ckpt/tmp");
  EXPECT_EQ(cairn::error_code_of(io), cairn::ErrorCode::io);
  EXPECT_EQ(cairn::error_code_of(std::runtime_error("x")), cairn::ErrorCode::internal);
  EXPECT_EQ(cairn::to_string(cairn::ErrorCode::timeout), "timeout");
}
