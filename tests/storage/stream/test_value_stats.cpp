// The statistics a save records of a shard's values (ValueStats): min and max of the finite
// values and NaN and inf counts, the same whether the bytes arrive whole or cut inside
// elements; float16 and bfloat16 read from their bits; integers exact at their limits; two
// parts of a leaf combined.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "storage/stream/value_stats.hpp"

namespace cairn::testing {
namespace {

using storage::ValueStats;

template <class T>
LeafStats stats_of(DType dtype, const std::vector<T>& values, std::size_t piece) {
  ValueStats stats(dtype);
  const auto bytes = std::as_bytes(std::span(values));
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    stats.update(bytes.subspan(at, std::min(piece, bytes.size() - at)));
  }
  return stats.result();
}

TEST(ValueStats, FloatingValuesWholeOrCutInsideElements) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> values;
  for (int k = 0; k < 1001; ++k) values.push_back(k % 7 == 3 ? kNaN : k * 0.5 - 100);
  values[500] = kInf;  // one of the 143 NaN (500 % 7 == 3)
  values[501] = -kInf;
  for (const std::size_t piece : {std::size_t{3}, std::size_t{8}, std::size_t{1} << 20}) {
    const LeafStats s = stats_of(DType::float64, values, piece);
    ASSERT_TRUE(s.min.has_value()) << piece;
    EXPECT_EQ(std::get<double>(*s.min), -100.0) << piece;
    EXPECT_EQ(std::get<double>(*s.max), 400.0) << piece;
    EXPECT_EQ(s.nan_count, 142U) << piece;
    EXPECT_EQ(s.inf_count, 2U) << piece;
  }
  const std::vector<float> floats = {std::numeric_limits<float>::quiet_NaN(), 2.5f, -0.25f};
  const LeafStats f = stats_of(DType::float32, floats, 5);
  EXPECT_EQ(std::get<double>(*f.min), -0.25);
  EXPECT_EQ(std::get<double>(*f.max), 2.5);
  EXPECT_EQ(f.nan_count, 1U);
}

TEST(ValueStats, NoFiniteValueHasNoRange) {
  const std::vector<double> values(5, std::numeric_limits<double>::quiet_NaN());
  const LeafStats s = stats_of(DType::float64, values, 64);
  EXPECT_FALSE(s.min.has_value());
  EXPECT_FALSE(s.max.has_value());
  EXPECT_EQ(s.nan_count, 5U);
  EXPECT_FALSE(stats_of(DType::float64, std::vector<double>{}, 64).min.has_value());
}

TEST(ValueStats, HalfPrecisionFromItsBits) {
  // float16: -2, 0.5, +inf, NaN, 3; bfloat16: 1, -inf, NaN, -4.
  const std::vector<std::uint16_t> half = {0xc000, 0x3800, 0x7c00, 0x7e00, 0x4200};
  const LeafStats h = stats_of(DType::float16, half, 3);
  EXPECT_EQ(std::get<double>(*h.min), -2.0);
  EXPECT_EQ(std::get<double>(*h.max), 3.0);
  EXPECT_EQ(h.nan_count, 1U);
  EXPECT_EQ(h.inf_count, 1U);
  const std::vector<std::uint16_t> brain = {0x3f80, 0xff80, 0x7fc0, 0xc080};
  const LeafStats b = stats_of(DType::bfloat16, brain, 1);
  EXPECT_EQ(std::get<double>(*b.min), -4.0);
  EXPECT_EQ(std::get<double>(*b.max), 1.0);
  EXPECT_EQ(b.nan_count, 1U);
  EXPECT_EQ(b.inf_count, 1U);
}

TEST(ValueStats, IntegersExactAtTheirLimits) {
  const std::vector<std::int64_t> big = {0, std::numeric_limits<std::int64_t>::max(),
                                         std::numeric_limits<std::int64_t>::min() + 1};
  const LeafStats s = stats_of(DType::int64, big, 5);
  EXPECT_EQ(std::get<std::int64_t>(*s.min), std::numeric_limits<std::int64_t>::min() + 1);
  EXPECT_EQ(std::get<std::int64_t>(*s.max), std::numeric_limits<std::int64_t>::max());
  const std::vector<std::uint64_t> ubig = {7, std::numeric_limits<std::uint64_t>::max()};
  const LeafStats u = stats_of(DType::uint64, ubig, 8);
  EXPECT_EQ(std::get<std::uint64_t>(*u.min), 7U);
  EXPECT_EQ(std::get<std::uint64_t>(*u.max), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(ValueStats::kept_for(DType::boolean));
  EXPECT_FALSE(ValueStats::kept_for(DType::complex128));
}

TEST(ValueStats, PartsOfALeafCombine) {
  const LeafStats a = stats_of(DType::int16, std::vector<std::int16_t>{-3, 9}, 2);
  const LeafStats b = stats_of(DType::int16, std::vector<std::int16_t>{-7, 4}, 2);
  const LeafStats none{.min = std::nullopt, .max = std::nullopt, .nan_count = 2, .inf_count = 1};
  const LeafStats all = storage::merge_stats(storage::merge_stats(a, none), b);
  EXPECT_EQ(std::get<std::int64_t>(*all.min), -7);
  EXPECT_EQ(std::get<std::int64_t>(*all.max), 9);
  EXPECT_EQ(all.nan_count, 2U);
  EXPECT_EQ(all.inf_count, 1U);
  EXPECT_EQ(std::get<std::int64_t>(*storage::merge_stats(none, a).min), -3);
}

}  // namespace
}  // namespace cairn::testing
