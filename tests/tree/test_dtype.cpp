// Tests of the dtype table and of value-checked casts (tree layer; no MPI calls).
#include <cairn/dtype.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace cairn {
namespace {

using ::testing::HasSubstr;

// Runs `fn`, expects InvalidArgument and returns its message.
template <class Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

template <class From, class To>
To cast_one(From value, std::string_view what = {}) {
  To out{};
  convert(dtype_of<From>(), &value, dtype_of<To>(), &out, 1, what);
  return out;
}

TEST(DType, NamesRoundTripAndAreStable) {
  const std::vector<std::string> expected = {
      "bool",   "int8",    "int16",    "int32",   "int64",   "uint8",     "uint16",    "uint32",
      "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
  ASSERT_EQ(all_dtypes().size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const DType d = all_dtypes()[k];
    EXPECT_EQ(dtype_name(d), expected[k]);
    EXPECT_EQ(parse_dtype(expected[k]), d);
    EXPECT_EQ(dtype_from_name(expected[k]), d);
  }
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
  EXPECT_EQ(dtype_size(DType::float16), 2u);
  EXPECT_EQ(dtype_size(DType::bfloat16), 2u);
  EXPECT_EQ(dtype_size(DType::complex64), 8u);
  EXPECT_EQ(dtype_size(DType::complex128), 16u);
}

TEST(DType, ParseRejectsUnknownNamesQuotingThem) {
  EXPECT_FALSE(dtype_from_name("Float32").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  const std::string message = invalid_argument_message([] { (void)parse_dtype("float33"); });
  EXPECT_THAT(message, HasSubstr("'float33'"));
  EXPECT_THAT(message, HasSubstr("float64"));  // lists the valid names
  // Hostile input: control bytes are escaped and long strings shortened.
  const std::string hostile = std::string("int\0\n", 5) + std::string(5000, 'x');
  const std::string escaped = invalid_argument_message([&] { (void)parse_dtype(hostile); });
  EXPECT_THAT(escaped, HasSubstr("int\\x00\\x0a"));
  EXPECT_LT(escaped.size(), 1000u);
}

TEST(DType, DtypeOfMapsCxxTypes) {
  static_assert(dtype_of<bool>() == DType::boolean);
  static_assert(dtype_of<std::int8_t>() == DType::int8);
  static_assert(dtype_of<std::int16_t>() == DType::int16);
  static_assert(dtype_of<std::int32_t>() == DType::int32);
  static_assert(dtype_of<std::int64_t>() == DType::int64);
  static_assert(dtype_of<long long>() == DType::int64);
  static_assert(dtype_of<std::uint8_t>() == DType::uint8);
  static_assert(dtype_of<std::uint16_t>() == DType::uint16);
  static_assert(dtype_of<std::uint32_t>() == DType::uint32);
  static_assert(dtype_of<std::uint64_t>() == DType::uint64);
  static_assert(dtype_of<unsigned long long>() == DType::uint64);
  static_assert(dtype_of<const float>() == DType::float32);
  static_assert(dtype_of<double>() == DType::float64);
  static_assert(dtype_of<std::complex<float>>() == DType::complex64);
  static_assert(dtype_of<std::complex<double>>() == DType::complex128);
  static_assert(!HasDType<long double>);
  static_assert(!HasDType<std::string>);
  SUCCEED();
}

TEST(DType, CastAllowedRejectsOnlyComplexToReal) {
  for (const DType from : all_dtypes()) {
    for (const DType to : all_dtypes()) {
      EXPECT_EQ(cast_allowed(from, to), !is_complex(from) || is_complex(to))
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
  const std::complex<double> c(1, 2);
  double out = 0;
  EXPECT_THAT(invalid_argument_message(
                  [&] { convert(DType::complex128, &c, DType::float64, &out, 1, "leaf 'z'"); }),
              HasSubstr("imaginary"));
}

TEST(DType, Float64ToFloat32RoundsAndRejectsOverflow) {
  EXPECT_EQ((cast_one<double, float>(1.5)), 1.5f);
  EXPECT_EQ((cast_one<double, float>(0.1)), 0.1f);      // nearest float, as the hardware rounds
  EXPECT_EQ((cast_one<double, float>(-1e-50)), -0.0f);  // underflow is rounding, not an error
  EXPECT_TRUE(std::isnan(cast_one<double, float>(std::nan(""))));
  EXPECT_EQ((cast_one<double, float>(-INFINITY)), -INFINITY);
  const std::string message =
      invalid_argument_message([] { (void)cast_one<double, float>(1e300, "leaf 'fields/u'"); });
  EXPECT_THAT(message, HasSubstr("leaf 'fields/u'"));
  EXPECT_THAT(message, HasSubstr("1e+300"));
  EXPECT_THAT(message, HasSubstr("float32"));
}

TEST(DType, Float16ExactValuesRoundTripThroughFloat32) {
  const std::vector<float> exact = {0.0f,          -0.0f,     1.0f,          0.5f,     -3.75f,
                                    65504.0f,      -65504.0f, 0x1p-24f,      0x1p-14f, 0x1.ff8p-15f,
                                    1.0009765625f, 1024.0f,   2049.0f - 1.0f};
  for (const float f : exact) {
    std::uint16_t half = 0;
    convert(DType::float32, &f, DType::float16, &half, 1);
    float back = 0;
    convert(DType::float16, &half, DType::float32, &back, 1);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(back), std::bit_cast<std::uint32_t>(f)) << f;
  }
  EXPECT_EQ(float16_from_double(1.0), 0x3c00);
  EXPECT_EQ(float16_from_double(-2.0), 0xc000);
  EXPECT_EQ(float16_from_double(65504.0), 0x7bff);
  EXPECT_EQ(float16_from_double(0x1p-24), 0x0001);
  EXPECT_EQ(float16_from_double(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(float16_to_double(float16_from_double(NAN))));
}

TEST(DType, Float16RoundsToNearestEven) {
  EXPECT_EQ(float16_from_double(1.0 + 0x1p-11), 0x3c00);            // tie -> even (down)
  EXPECT_EQ(float16_from_double(1.0 + 3 * 0x1p-11), 0x3c02);        // tie -> even (up)
  EXPECT_EQ(float16_from_double(1.0 + 0x1p-11 + 0x1p-30), 0x3c01);  // above the tie
  EXPECT_EQ(float16_from_double(65519.0), 0x7bff);                  // below the overflow threshold
  EXPECT_EQ(float16_from_double(65520.0), 0x7c00);                  // rounds to infinity
  EXPECT_EQ(float16_from_double(0x1p-25), 0x0000);                  // tie with zero -> even (zero)
  EXPECT_EQ(float16_from_double(0x1.8p-25), 0x0001);
  EXPECT_EQ(float16_from_double(0x1.ffcp-15), 0x0400);  // largest subnormal rounds to normal
  // Overflow while casting is an error, not a silent infinity.
  EXPECT_THAT(invalid_argument_message([] {
                const double big = 70000;
                std::uint16_t h = 0;
                convert(DType::float64, &big, DType::float16, &h, 1);
              }),
              HasSubstr("70000"));
}

TEST(DType, EveryFloat16AndBfloat16PatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const double h = float16_to_double(b);
    const double bf = bfloat16_to_double(b);
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(float16_to_double(float16_from_double(h))));
    } else {
      ASSERT_EQ(float16_from_double(h), b) << bits;
    }
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(bfloat16_to_double(bfloat16_from_double(bf))));
    } else {
      ASSERT_EQ(bfloat16_from_double(bf), b) << bits;
      // bfloat16 is the top half of a float32.
      ASSERT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(bf)), bits << 16) << bits;
    }
  }
}

TEST(DType, RandomFloatsMatchIndependentReferences) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int k = 0; k < 200000; ++k) {
    const std::uint32_t bits = any_bits(rng);
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    // bfloat16 reference: round the float32 pattern to its upper half, ties to even.
    const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    auto reference = static_cast<std::uint16_t>(rounded >> 16);
    if (std::isinf(f)) reference = static_cast<std::uint16_t>(bits >> 16);
    ASSERT_EQ(bfloat16_from_double(f), reference) << f;
#if defined(__FLT16_MAX__)
    // The compiler's own _Float16 conversion (round to nearest even) as the reference.
    const auto h = static_cast<_Float16>(f);
    std::uint16_t hbits = 0;
    std::memcpy(&hbits, &h, 2);
    ASSERT_EQ(float16_from_double(f), hbits) << f;
#endif
  }
}

TEST(DType, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(bfloat16_from_double(1.0), 0x3f80);
  EXPECT_EQ(bfloat16_from_double(1.0 + 0x1p-8), 0x3f80);      // tie -> even (down)
  EXPECT_EQ(bfloat16_from_double(1.0 + 3 * 0x1p-8), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bfloat16_from_double(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  float back = 0;
  const std::uint16_t pi_bf16 = bfloat16_from_double(3.14159265358979);
  convert(DType::bfloat16, &pi_bf16, DType::float32, &back, 1);
  EXPECT_EQ(back, 3.140625f);
}

TEST(DType, IntegerToSmallFloatRoundsOnce) {
  // 2^62 + 2^54 + 1 is just above a bfloat16 tie. Going through double first would round to
  // the tie and then to even (2^62); a single rounding gives 2^62 + 2^55.
  const std::int64_t v = (std::int64_t{1} << 62) + (std::int64_t{1} << 54) + 1;
  std::uint16_t bf = 0;
  convert(DType::int64, &v, DType::bfloat16, &bf, 1);
  EXPECT_EQ(bfloat16_to_double(bf), std::ldexp(1.0, 62) + std::ldexp(1.0, 55));
  // 2049 is a float16 tie between 2048 and 2050: even mantissa wins.
  const std::int32_t odd = 2049;
  std::uint16_t h = 0;
  convert(DType::int32, &odd, DType::float16, &h, 1);
  EXPECT_EQ(float16_to_double(h), 2048.0);
  const std::int32_t big = 70000;
  EXPECT_THAT(invalid_argument_message([&] { convert(DType::int32, &big, DType::float16, &h, 1); }),
              HasSubstr("float16"));
  EXPECT_EQ((cast_one<std::uint64_t, float>(std::numeric_limits<std::uint64_t>::max())), 0x1p64f);
}

TEST(DType, IntegerCastsRejectValuesThatDoNotFit) {
  EXPECT_EQ((cast_one<std::int32_t, std::int8_t>(-128)), -128);
  EXPECT_EQ((cast_one<std::int8_t, std::uint64_t>(7)), 7u);
  EXPECT_EQ((cast_one<std::uint64_t, std::int64_t>(std::uint64_t{1} << 62)), std::int64_t{1} << 62);
  // 300 -> int8 reports the element, the value, both dtypes and the leaf.
  const std::vector<std::int32_t> values = {1, 300, 2};
  std::vector<std::int8_t> out(3);
  const std::string message = invalid_argument_message([&] {
    convert(DType::int32, values.data(), DType::int8, out.data(), 3, "leaf 'fields/id'");
  });
  EXPECT_THAT(message, HasSubstr("element 1"));
  EXPECT_THAT(message, HasSubstr("300"));
  EXPECT_THAT(message, HasSubstr("int32"));
  EXPECT_THAT(message, HasSubstr("int8"));
  EXPECT_THAT(message, HasSubstr("leaf 'fields/id'"));
  EXPECT_THAT(message, HasSubstr("silent truncation is not allowed"));
  invalid_argument_message([] { (void)cast_one<std::int64_t, std::uint8_t>(-1); });
  invalid_argument_message([] { (void)cast_one<std::int64_t, std::uint8_t>(256); });
  invalid_argument_message(
      [] { (void)cast_one<std::uint64_t, std::int64_t>(std::uint64_t{1} << 63); });
  invalid_argument_message([] { (void)cast_one<std::int64_t, std::uint64_t>(-5); });
}

TEST(DType, FloatToIntegerNeedsAFiniteWholeNumberInRange) {
  EXPECT_EQ((cast_one<double, std::int32_t>(-42.0)), -42);
  EXPECT_EQ((cast_one<double, std::int64_t>(-0x1p63)), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ((cast_one<float, std::uint8_t>(255.0f)), 255);
  EXPECT_THAT(invalid_argument_message([] { (void)cast_one<double, std::int32_t>(std::nan("")); }),
              HasSubstr("nan"));
  invalid_argument_message([] { (void)cast_one<double, std::int32_t>(INFINITY); });
  EXPECT_THAT(invalid_argument_message([] { (void)cast_one<double, std::int32_t>(2.5); }),
              HasSubstr("whole"));
  invalid_argument_message([] { (void)cast_one<double, std::int32_t>(1e10); });
  invalid_argument_message([] { (void)cast_one<double, std::int64_t>(0x1p63); });
  invalid_argument_message([] { (void)cast_one<float, std::uint8_t>(-1.0f); });
  invalid_argument_message([] { (void)cast_one<double, std::uint64_t>(0x1p64); });
}

TEST(DType, BoolCastsHoldOnlyZeroAndOne) {
  EXPECT_TRUE((cast_one<double, bool>(1.0)));
  EXPECT_FALSE((cast_one<std::int64_t, bool>(0)));
  EXPECT_EQ((cast_one<bool, float>(true)), 1.0f);
  EXPECT_EQ((cast_one<bool, std::int16_t>(true)), 1);
  invalid_argument_message([] { (void)cast_one<std::int32_t, bool>(2); });
  invalid_argument_message([] { (void)cast_one<double, bool>(0.5); });
  // A damaged bool byte in the source is reported, not read as "true".
  const std::uint8_t damaged = 2;
  std::int32_t out = 0;
  EXPECT_THAT(
      invalid_argument_message([&] { convert(DType::boolean, &damaged, DType::int32, &out, 1); }),
      HasSubstr("bool"));
}

TEST(DType, ComplexCasts) {
  EXPECT_EQ((cast_one<double, std::complex<float>>(2.5)), std::complex<float>(2.5f, 0.0f));
  EXPECT_EQ((cast_one<std::int32_t, std::complex<double>>(-7)), std::complex<double>(-7, 0));
  EXPECT_EQ((cast_one<std::complex<double>, std::complex<float>>({1.5, -0.25})),
            std::complex<float>(1.5f, -0.25f));
  EXPECT_EQ((cast_one<std::complex<float>, std::complex<double>>({3.0f, 4.0f})),
            std::complex<double>(3.0, 4.0));
  invalid_argument_message([] {
    (void)cast_one<std::complex<double>, std::complex<float>>({1.0, 1e300});
  });
}

TEST(DType, ConvertArraysUnalignedAndSameType) {
  // Unaligned source and destination buffers, many elements, a same-dtype copy.
  std::vector<std::byte> src(1 + 100 * sizeof(double));
  std::vector<std::byte> dst(1 + 100 * sizeof(float));
  for (int k = 0; k < 100; ++k) {
    const double v = k * 0.5 - 10;
    std::memcpy(src.data() + 1 + k * sizeof(double), &v, sizeof v);
  }
  convert(DType::float64, src.data() + 1, DType::float32, dst.data() + 1, 100);
  for (int k = 0; k < 100; ++k) {
    float v = 0;
    std::memcpy(&v, dst.data() + 1 + k * sizeof(float), sizeof v);
    EXPECT_EQ(v, static_cast<float>(k * 0.5 - 10));
  }
  const std::vector<std::uint16_t> a = {1, 2, 3};
  std::vector<std::uint16_t> b(3);
  convert(DType::float16, a.data(), DType::float16, b.data(), 3);
  EXPECT_EQ(a, b);
  convert(DType::int8, nullptr, DType::float64, nullptr, 0);  // nothing to do
}

}  // namespace
}  // namespace cairn
