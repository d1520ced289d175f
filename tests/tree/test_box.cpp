// Tests of box geometry and region copies (tree layer; no MPI calls).
#include <cairn/box.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace cairn {
namespace {

using ::testing::HasSubstr;
using Shape = std::vector<std::int64_t>;

TEST(Box, VolumeCountsElementsAndRejectsOverflow) {
  EXPECT_EQ(volume(Shape{}), 1);
  EXPECT_EQ(volume(Shape{3, 4, 5}), 60);
  EXPECT_EQ(volume(Shape{3, 0, 5}), 0);
  EXPECT_EQ(volume(Box{{1, 2}, {3, 4}}), 12);
  const std::int64_t big = std::int64_t{1} << 32;
  EXPECT_THROW((void)volume(Shape{big, big}), InvalidArgument);
  // Even with a zero extent, the other extents must be countable (their strides must fit).
  EXPECT_THROW((void)volume(Shape{0, big, big}), InvalidArgument);
  EXPECT_THROW((void)volume(Shape{2, -1}), InvalidArgument);
  EXPECT_THROW((void)volume(Shape(33, 1)), InvalidArgument);
  EXPECT_EQ(volume(Shape(32, 1)), 1);
  EXPECT_THROW((void)volume(Box{{0}, {1, 2}}), InvalidArgument);
}

TEST(Box, IntersectAndContains) {
  const Box a{{0, 0}, {4, 4}};
  const Box b{{2, 3}, {4, 4}};
  EXPECT_EQ(intersect(a, b), (Box{{2, 3}, {2, 1}}));
  EXPECT_FALSE(intersect(a, Box{{4, 0}, {2, 2}}).has_value());  // touching is not overlapping
  EXPECT_FALSE(intersect(a, Box{{1, 1}, {0, 2}}).has_value());  // empty
  EXPECT_EQ(intersect(Box{}, Box{}), Box{});                    // 0-d boxes
  EXPECT_THROW((void)intersect(a, Box{{0}, {1}}), InvalidArgument);
  EXPECT_THROW((void)intersect(a, Box{{0, std::numeric_limits<std::int64_t>::max()}, {1, 1}}),
               InvalidArgument);
  EXPECT_TRUE(contains(a, Box{{1, 1}, {3, 3}}));
  EXPECT_FALSE(contains(a, Box{{1, 1}, {4, 3}}));
  EXPECT_TRUE(contains(a, Box{{9, 9}, {0, 3}}));  // empty boxes lie anywhere
  EXPECT_FALSE(contains(a, Box{{0}, {1}}));
  EXPECT_FALSE(contains(a, Box{{-1, 0}, {1, 1}}));
  EXPECT_TRUE(contains(Box{}, Box{}));
}

TEST(Box, BoxInShapeNamesTheProblem) {
  EXPECT_FALSE(box_problem(Box{{0, 4}, {8, 4}}, Shape{8, 8}).has_value());
  EXPECT_THAT(*box_problem(Box{{0, 5}, {8, 4}}, Shape{8, 8}), HasSubstr("dimension 1"));
  EXPECT_TRUE(box_problem(Box{{0}, {8}}, Shape{8, 8}).has_value());
  EXPECT_TRUE(box_problem(Box{{-1, 0}, {1, 1}}, Shape{8, 8}).has_value());
  EXPECT_TRUE(box_problem(Box{{0, 0}, {1, -1}}, Shape{8, 8}).has_value());
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(box_problem(Box{{max}, {max}}, Shape{max}).has_value());  // no overflow
  try {
    check_box_in_shape(Box{{6}, {4}}, Shape{8}, "leaf 'u' on rank 2");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("leaf 'u' on rank 2"));
    EXPECT_THAT(e.what(), HasSubstr("[6:10]"));
    EXPECT_THAT(e.what(), HasSubstr("(8)"));
  }
  EXPECT_EQ(to_string(Box{}), "[]");
  EXPECT_EQ(to_string(Box{{1, 2}, {3, 0}}), "[1:4, 2:2]");
  EXPECT_EQ(shape_to_string(Shape{}), "()");
  EXPECT_EQ(whole_box(Shape{3, 4}), (Box{{0, 0}, {3, 4}}));
  EXPECT_EQ(row_major_strides(Shape{2, 3, 4}), (Shape{12, 4, 1}));
}

// Global index -> a value that identifies it.
std::int64_t tag(const std::vector<std::int64_t>& index) {
  std::int64_t t = 0;
  for (const auto i : index) t = t * 1000 + i + 1;
  return t;
}

// Fills a row-major buffer of `box` with tag(global index).
std::vector<std::int64_t> tagged(const Box& box) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(volume(box)));
  std::vector<std::int64_t> local(box.rank(), 0);
  for (auto& v : out) {
    std::vector<std::int64_t> global(box.rank());
    for (std::size_t d = 0; d < box.rank(); ++d) global[d] = box.offset[d] + local[d];
    v = tag(global);
    for (std::size_t d = box.rank(); d-- > 0;) {
      if (++local[d] < box.extent[d]) break;
      local[d] = 0;
    }
  }
  return out;
}

// The naive reference: element by element through global indices.
void naive_copy(const std::vector<std::int64_t>& src, const Box& src_box,
                std::vector<std::int64_t>& dst, const Box& dst_box, const Box& region) {
  if (volume(region) == 0) return;
  const auto ss = row_major_strides(src_box.extent);
  const auto ds = row_major_strides(dst_box.extent);
  std::vector<std::int64_t> local(region.rank(), 0);
  while (true) {
    std::int64_t si = 0;
    std::int64_t di = 0;
    for (std::size_t d = 0; d < region.rank(); ++d) {
      const std::int64_t g = region.offset[d] + local[d];
      si += (g - src_box.offset[d]) * ss[d];
      di += (g - dst_box.offset[d]) * ds[d];
    }
    dst[static_cast<std::size_t>(di)] = src[static_cast<std::size_t>(si)];
    std::size_t d = region.rank();
    for (; d-- > 0;) {
      if (++local[d] < region.extent[d]) break;
      local[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

Box random_box(std::mt19937& rng, const Shape& shape) {
  Box b;
  for (const auto n : shape) {
    std::uniform_int_distribution<std::int64_t> pick(0, n);
    std::int64_t lo = pick(rng);
    std::int64_t hi = pick(rng);
    if (lo > hi) std::swap(lo, hi);
    b.offset.push_back(lo);
    b.extent.push_back(hi - lo);
  }
  return b;
}

TEST(Box, CopyRegionMatchesNaiveReferenceForRandomBoxes) {
  std::mt19937 rng(2024);
  const std::vector<Shape> shapes = {{17}, {9, 13}, {5, 6, 7}, {3, 1, 4, 2}};
  int nonempty = 0;
  for (const Shape& shape : shapes) {
    for (int trial = 0; trial < 1000; ++trial) {
      const Box src_box = random_box(rng, shape);
      const Box dst_box = random_box(rng, shape);
      const auto common = intersect(src_box, dst_box);
      if (!common) continue;
      // A random sub-region of the intersection (sometimes the whole of it).
      Box region = *common;
      if (trial % 3 != 0) {
        for (std::size_t d = 0; d < region.rank(); ++d) {
          std::uniform_int_distribution<std::int64_t> pick(0, region.extent[d]);
          const std::int64_t lo = pick(rng);
          std::uniform_int_distribution<std::int64_t> len(0, region.extent[d] - lo);
          region.offset[d] += lo;
          region.extent[d] = len(rng);
        }
      }
      const auto src = tagged(src_box);
      std::vector<std::int64_t> got(static_cast<std::size_t>(volume(dst_box)), -1);
      std::vector<std::int64_t> want = got;
      copy_region(sizeof(std::int64_t), src.data(), src_box, got.data(), dst_box, region);
      naive_copy(src, src_box, want, dst_box, region);
      ASSERT_EQ(got, want) << "src " << to_string(src_box) << " dst " << to_string(dst_box)
                           << " region " << to_string(region);
      nonempty += volume(region) > 0;
    }
  }
  EXPECT_GT(nonempty, 500);  // the test exercised real copies
}

TEST(Box, CopyRegionZeroDAndWideElements) {
  const std::complex<double> src(1.5, -2.5);
  std::complex<double> dst;
  copy_region(sizeof src, &src, Box{}, &dst, Box{}, Box{});
  EXPECT_EQ(dst, src);
  // 16-byte elements, a 2-d region, element sizes other than 8.
  std::vector<std::complex<double>> a(12);
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = {double(k), -double(k)};
  std::vector<std::complex<double>> b(4);
  copy_region(sizeof(a[0]), a.data(), Box{{0, 0}, {3, 4}}, b.data(), Box{{1, 1}, {2, 2}},
              Box{{1, 1}, {2, 2}});
  EXPECT_EQ(b, (std::vector<std::complex<double>>{a[5], a[6], a[9], a[10]}));
  std::vector<std::uint8_t> bytes = {1, 2, 3, 4, 5, 6};
  std::vector<std::uint8_t> col(2);
  copy_region(1, bytes.data(), Box{{0, 0}, {2, 3}}, col.data(), Box{{0, 2}, {2, 1}},
              Box{{0, 2}, {2, 1}});
  EXPECT_EQ(col, (std::vector<std::uint8_t>{3, 6}));
}

TEST(Box, CopyRegionRejectsRegionsOutsideEitherBox) {
  std::vector<int> a(16);
  std::vector<int> b(16);
  EXPECT_THROW(copy_region(4, a.data(), Box{{0}, {16}}, b.data(), Box{{4}, {16}}, Box{{0}, {8}}),
               InvalidArgument);
  EXPECT_THROW(
      copy_region(4, a.data(), Box{{0}, {16}}, b.data(), Box{{0, 0}, {4, 4}}, Box{{0}, {8}}),
      InvalidArgument);
  EXPECT_THROW(copy_region(0, a.data(), Box{{0}, {16}}, b.data(), Box{{0}, {16}}, Box{{0}, {8}}),
               InvalidArgument);
}

TEST(Box, StridedSourceCopyAndPack) {
  // A 4x3 row-major matrix viewed transposed: a 3x4 box with strides (1, 3).
  std::vector<int> m(12);
  std::iota(m.begin(), m.end(), 0);
  const Shape transposed_strides = {1, 3};
  std::vector<int> packed(12);
  pack_strided(sizeof(int), m.data(), Shape{3, 4}, transposed_strides, packed.data());
  EXPECT_EQ(packed, (std::vector<int>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  // Region [1:3, 2:4] of the transposed view placed into a 2x2 destination.
  std::vector<int> out(4);
  copy_region(sizeof(int), m.data(), Box{{0, 0}, {3, 4}}, transposed_strides, out.data(),
              Box{{1, 2}, {2, 2}}, Box{{1, 2}, {2, 2}});
  EXPECT_EQ(out, (std::vector<int>{7, 10, 8, 11}));
  // A reversed view (negative stride) of a 1-d array.
  std::vector<int> reversed(12);
  pack_strided(sizeof(int), m.data() + 11, Shape{12}, Shape{-1}, reversed.data());
  EXPECT_EQ(reversed.front(), 11);
  EXPECT_EQ(reversed.back(), 0);
  EXPECT_THROW(pack_strided(sizeof(int), m.data(), Shape{3, 4}, Shape{1}, packed.data()),
               InvalidArgument);
  // Unpacking is the inverse: the packed transposed view scatters back into the matrix.
  std::vector<int> back(12, -1);
  unpack_strided(sizeof(int), packed.data(), Shape{3, 4}, transposed_strides, back.data());
  EXPECT_EQ(back, m);
  EXPECT_THROW(unpack_strided(sizeof(int), packed.data(), Shape{3, 4}, Shape{1}, back.data()),
               InvalidArgument);
  EXPECT_THROW(unpack_strided(0, packed.data(), Shape{3, 4}, transposed_strides, back.data()),
               InvalidArgument);
}

// The row-major position, within `box`, of each element of each run, in order: the runs must
// enumerate 0, 1, 2, ... exactly once.
std::vector<std::int64_t> positions_of_runs(const Box& box, const std::vector<Box>& runs) {
  const Shape strides = row_major_strides(box.extent);
  std::vector<std::int64_t> positions;
  for (const Box& run : runs) {
    Shape index(run.rank(), 0);
    for (std::int64_t k = 0; k < volume(run); ++k) {
      std::int64_t at = 0;
      for (std::size_t d = 0; d < run.rank(); ++d) {
        at += (run.offset[d] + index[d] - box.offset[d]) * strides[d];
      }
      positions.push_back(at);
      for (std::size_t d = run.rank(); d-- > 0;) {
        if (++index[d] < run.extent[d]) break;
        index[d] = 0;
      }
    }
  }
  return positions;
}

TEST(Box, SplitIntoRunsCoversTheBoxInBufferOrder) {
  std::mt19937 rng(11);
  const Shape shape = {7, 6, 5, 3};
  for (int trial = 0; trial < 300; ++trial) {
    const Box box = random_box(rng, shape);
    const std::int64_t max_elements = std::uniform_int_distribution<std::int64_t>(1, 40)(rng);
    const std::vector<Box> runs = split_into_runs(box, max_elements);
    std::vector<std::int64_t> want(static_cast<std::size_t>(volume(box)));
    std::iota(want.begin(), want.end(), 0);
    ASSERT_EQ(positions_of_runs(box, runs), want) << to_string(box) << " by " << max_elements;
    for (const Box& run : runs) {
      EXPECT_TRUE(contains(box, run));
      EXPECT_GE(volume(run), 1);
      EXPECT_LE(volume(run), max_elements);
    }
  }
}

TEST(Box, SplitIntoRunsTakesWholeRowsWhereTheyFit) {
  // Rows of 4 elements: slabs of 2 rows, the last one shorter.
  EXPECT_EQ(split_into_runs(Box{{1, 0}, {5, 4}}, 9),
            (std::vector<Box>{{{1, 0}, {2, 4}}, {{3, 0}, {2, 4}}, {{5, 0}, {1, 4}}}));
  // Rows of 10 elements do not fit in 4: each row is cut into runs of the second dimension.
  EXPECT_EQ(split_into_runs(Box{{0, 2}, {2, 10}}, 4), (std::vector<Box>{{{0, 2}, {1, 4}},
                                                                        {{0, 6}, {1, 4}},
                                                                        {{0, 10}, {1, 2}},
                                                                        {{1, 2}, {1, 4}},
                                                                        {{1, 6}, {1, 4}},
                                                                        {{1, 10}, {1, 2}}}));
  EXPECT_EQ(split_into_runs(Box{{0, 0}, {3, 3}}, 9), (std::vector<Box>{{{0, 0}, {3, 3}}}));
  EXPECT_EQ(split_into_runs(Box{{}, {}}, 1), (std::vector<Box>{Box{}}));
  EXPECT_TRUE(split_into_runs(Box{{0, 0}, {0, 3}}, 2).empty());
  EXPECT_THROW((void)split_into_runs(Box{{0}, {3}}, 0), InvalidArgument);
}

TEST(Box, StridedCopyMatchesPackThenCopy) {
  std::mt19937 rng(7);
  const Shape shape = {6, 5, 4};
  for (int trial = 0; trial < 100; ++trial) {
    const Box src_box = random_box(rng, shape);
    const Box dst_box = random_box(rng, shape);
    const auto region = intersect(src_box, dst_box);
    if (!region) continue;
    // Store the source box in a padded buffer: strides larger than row-major.
    const Shape pad_extent = {src_box.extent[0] + 1, src_box.extent[1] + 2, src_box.extent[2] + 3};
    const Shape strides = row_major_strides(pad_extent);
    std::vector<std::int64_t> padded(static_cast<std::size_t>(volume(pad_extent)), -7);
    const auto dense = tagged(src_box);
    copy_region(8, dense.data(), src_box, padded.data(), Box{src_box.offset, pad_extent}, src_box);
    std::vector<std::int64_t> got(static_cast<std::size_t>(volume(dst_box)), -1);
    std::vector<std::int64_t> want = got;
    copy_region(8, padded.data(), src_box, strides, got.data(), dst_box, *region);
    naive_copy(dense, src_box, want, dst_box, *region);
    ASSERT_EQ(got, want);
  }
}

}  // namespace
}  // namespace cairn
