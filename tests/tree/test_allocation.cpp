// Buffers sized from a file or a user's option: running out of memory is an error naming the
// leaf and the size, not a std::bad_alloc.
#include <cairn/tree.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using ::testing::HasSubstr;

TEST(Allocation, AnArrayTooLargeForMemoryIsAnErrorNamingTheLeaf) {
  cairn::ArrayTree tree;
  // 2^60 bytes: a valid shape (its volume fits int64) that no machine can hold.
  const std::vector<std::int64_t> shape = {std::int64_t{1} << 20, std::int64_t{1} << 20,
                                           std::int64_t{1} << 20};
  try {
    (void)tree.add_owned_array("state/u", cairn::DType::uint8, shape);
    FAIL() << "expected InvalidArgument";
  } catch (const cairn::InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("state/u"));
    EXPECT_THAT(e.what(), HasSubstr("1152921504606846976 bytes"));
    EXPECT_THAT(e.what(), HasSubstr("cannot be allocated on this rank"));
  }
  EXPECT_EQ(tree.find("state/u"), nullptr);
  // The tree is still usable.
  EXPECT_NE(tree.add_owned_array("state/v", cairn::DType::float64, {4, 4}), nullptr);
}
