#include "storage/stream/value_stats.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cairn::storage {

namespace {

// What one scan of whole elements found: the range of the finite values (lo > hi when there
// was none) and the non-finite counts.
template <class V>
struct Found {
  V lo;
  V hi;
  std::uint64_t nan = 0;
  std::uint64_t inf = 0;
};

// The bits of a floating type: an unsigned integer of its size, its exponent and mantissa.
template <class T>
struct FloatBits;
template <>
struct FloatBits<double> {
  using U = std::uint64_t;
  static constexpr U kExponent = 0x7ff0000000000000ULL;
  static constexpr U kMantissa = 0x000fffffffffffffULL;
};
template <>
struct FloatBits<float> {
  using U = std::uint32_t;
  static constexpr U kExponent = 0x7f800000U;
  static constexpr U kMantissa = 0x007fffffU;
};

// One pass without branches on the values, in kLanes independent lanes so that the processor
// overlaps them: a value is NaN or infinite when its exponent bits are all set (NaN with a
// mantissa), and such a value leaves the range as it is.
template <class T>
Found<double> scan_floating(const std::byte* data, std::size_t count) noexcept {
  using Bits = FloatBits<T>;
  using U = typename Bits::U;
  constexpr std::size_t kLanes = 4;
  T lo[kLanes];
  T hi[kLanes];
  std::uint64_t nonfinite[kLanes] = {};
  std::uint64_t nan[kLanes] = {};
  for (std::size_t l = 0; l < kLanes; ++l) {
    lo[l] = std::numeric_limits<T>::infinity();
    hi[l] = -std::numeric_limits<T>::infinity();
  }
  const auto add = [&](std::size_t l, std::size_t i) {
    U bits;
    std::memcpy(&bits, data + i * sizeof(T), sizeof(T));
    T x;
    std::memcpy(&x, &bits, sizeof(T));
    const bool special = (bits & Bits::kExponent) == Bits::kExponent;
    nonfinite[l] += special ? 1 : 0;
    nan[l] += special && (bits & Bits::kMantissa) != 0 ? 1 : 0;
    lo[l] = std::min(lo[l], special ? lo[l] : x);
    hi[l] = std::max(hi[l], special ? hi[l] : x);
  };
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) add(l, i + l);
  }
  for (; i < count; ++i) add(0, i);
  Found<double> out{std::numeric_limits<double>::infinity(),
                    -std::numeric_limits<double>::infinity()};
  for (std::size_t l = 0; l < kLanes; ++l) {
    out.lo = std::min(out.lo, static_cast<double>(lo[l]));
    out.hi = std::max(out.hi, static_cast<double>(hi[l]));
    out.nan += nan[l];
    out.inf += nonfinite[l] - nan[l];
  }
  return out;
}

#if defined(__SSE2__)
// The same pass on SSE2 registers (every x86-64 processor has them), two registers per step:
// a value is finite when x - x == 0, NaN when it is unordered with itself; the lanes of a value
// that is not finite keep their range. About twice the scalar pass's speed.
Found<double> scan_float64_sse2(const std::byte* data, std::size_t count) noexcept {
  const double* x = reinterpret_cast<const double*>(data);
  const __m128d zero = _mm_setzero_pd();
  __m128d lo[2] = {_mm_set1_pd(std::numeric_limits<double>::infinity()),
                   _mm_set1_pd(std::numeric_limits<double>::infinity())};
  __m128d hi[2] = {_mm_set1_pd(-std::numeric_limits<double>::infinity()),
                   _mm_set1_pd(-std::numeric_limits<double>::infinity())};
  __m128i finite = _mm_setzero_si128();  // per lane, counted by subtracting its all-ones mask
  __m128i nan = _mm_setzero_si128();
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (int r = 0; r < 2; ++r) {
      const __m128d v = _mm_loadu_pd(x + i + 2 * r);
      const __m128d ok = _mm_cmpeq_pd(_mm_sub_pd(v, v), zero);
      finite = _mm_sub_epi64(finite, _mm_castpd_si128(ok));
      nan = _mm_sub_epi64(nan, _mm_castpd_si128(_mm_cmpunord_pd(v, v)));
      lo[r] = _mm_min_pd(lo[r], _mm_or_pd(_mm_and_pd(ok, v), _mm_andnot_pd(ok, lo[r])));
      hi[r] = _mm_max_pd(hi[r], _mm_or_pd(_mm_and_pd(ok, v), _mm_andnot_pd(ok, hi[r])));
    }
  }
  alignas(16) double los[4];
  alignas(16) double his[4];
  alignas(16) std::uint64_t counts[4];
  _mm_store_pd(los, lo[0]);
  _mm_store_pd(los + 2, lo[1]);
  _mm_store_pd(his, hi[0]);
  _mm_store_pd(his + 2, hi[1]);
  _mm_store_si128(reinterpret_cast<__m128i*>(counts), finite);
  _mm_store_si128(reinterpret_cast<__m128i*>(counts + 2), nan);
  Found<double> out = scan_floating<double>(data + i * sizeof(double), count - i);
  for (int l = 0; l < 4; ++l) {
    out.lo = std::min(out.lo, los[l]);
    out.hi = std::max(out.hi, his[l]);
  }
  const std::uint64_t nans = counts[2] + counts[3];
  out.nan += nans;
  out.inf += i - (counts[0] + counts[1]) - nans;
  return out;
}
#endif

// float16 and bfloat16: the exponent's bits say NaN or infinite, the rest is converted.
Found<double> scan_half(const std::byte* data, std::size_t count, bool bfloat) noexcept {
  const unsigned shift = bfloat ? 7 : 10;
  const std::uint16_t exponent = bfloat ? 0xff : 0x1f;
  const std::uint16_t mantissa = bfloat ? 0x7f : 0x3ff;
  Found<double> out{std::numeric_limits<double>::infinity(),
                    -std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, data + i * 2, 2);
    if (((bits >> shift) & exponent) == exponent) {
      ++((bits & mantissa) != 0 ? out.nan : out.inf);
      continue;
    }
    const double x = bfloat ? bfloat16_to_double(bits) : float16_to_double(bits);
    out.lo = std::min(out.lo, x);
    out.hi = std::max(out.hi, x);
  }
  return out;
}

template <class T, class V>
Found<V> scan_integer(const std::byte* data, std::size_t count) noexcept {
  T lo = std::numeric_limits<T>::max();
  T hi = std::numeric_limits<T>::lowest();
  for (std::size_t i = 0; i < count; ++i) {
    T x;
    std::memcpy(&x, data + i * sizeof(T), sizeof(T));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return {static_cast<V>(lo), static_cast<V>(hi)};
}

}  // namespace

bool ValueStats::kept_for(DType dtype) noexcept {
  return is_floating(dtype) || is_signed_integer(dtype) || is_unsigned_integer(dtype);
}

ValueStats::ValueStats(DType dtype) noexcept : dtype_(dtype), size_(dtype_size(dtype)) {}

void ValueStats::update(std::span<const std::byte> bytes) noexcept {
  if (carried_ > 0) {
    const std::size_t take = std::min(size_ - carried_, bytes.size());
    std::memcpy(carry_.data() + carried_, bytes.data(), take);
    carried_ += take;
    bytes = bytes.subspan(take);
    if (carried_ < size_) return;
    scan(carry_.data(), 1);
    carried_ = 0;
  }
  const std::size_t whole = bytes.size() / size_;
  if (whole > 0) scan(bytes.data(), whole);
  carried_ = bytes.size() - whole * size_;
  if (carried_ > 0) std::memcpy(carry_.data(), bytes.data() + whole * size_, carried_);
}

void ValueStats::scan(const std::byte* data, std::size_t count) noexcept {
  const auto take = [&]<class V>(const Found<V>& found) {
    nan_ += found.nan;
    inf_ += found.inf;
    if (!(found.lo <= found.hi)) return;  // no finite value
    if (!any_) {
      min_ = found.lo;
      max_ = found.hi;
      any_ = true;
      return;
    }
    min_ = std::min(std::get<V>(min_), found.lo);
    max_ = std::max(std::get<V>(max_), found.hi);
  };
  switch (dtype_) {
#if defined(__SSE2__)
    case DType::float64: take(scan_float64_sse2(data, count)); break;
#else
    case DType::float64: take(scan_floating<double>(data, count)); break;
#endif
    case DType::float32: take(scan_floating<float>(data, count)); break;
    case DType::float16: take(scan_half(data, count, false)); break;
    case DType::bfloat16: take(scan_half(data, count, true)); break;
    case DType::int8: take(scan_integer<std::int8_t, std::int64_t>(data, count)); break;
    case DType::int16: take(scan_integer<std::int16_t, std::int64_t>(data, count)); break;
    case DType::int32: take(scan_integer<std::int32_t, std::int64_t>(data, count)); break;
    case DType::int64: take(scan_integer<std::int64_t, std::int64_t>(data, count)); break;
    case DType::uint8: take(scan_integer<std::uint8_t, std::uint64_t>(data, count)); break;
    case DType::uint16: take(scan_integer<std::uint16_t, std::uint64_t>(data, count)); break;
    case DType::uint32: take(scan_integer<std::uint32_t, std::uint64_t>(data, count)); break;
    case DType::uint64: take(scan_integer<std::uint64_t, std::uint64_t>(data, count)); break;
    default: break;  // not kept_for()
  }
}

LeafStats ValueStats::result() const noexcept {
  LeafStats out{.nan_count = nan_, .inf_count = inf_};
  if (any_) {
    out.min = min_;
    out.max = max_;
  }
  return out;
}

LeafStats merge_stats(const LeafStats& a, const LeafStats& b) noexcept {
  LeafStats out{.min = a.min,
                .max = a.max,
                .nan_count = a.nan_count + b.nan_count,
                .inf_count = a.inf_count + b.inf_count};
  // Both parts are of one dtype, so their values hold the same alternative.
  if (!a.min) {
    out.min = b.min;
    out.max = b.max;
  } else if (b.min) {
    out.min = std::min(*a.min, *b.min);
    out.max = std::max(*a.max, *b.max);
  }
  return out;
}

}  // namespace cairn::storage
