// cairn — the dtype table and value-checked numeric casts.
#include <cairn/dtype.hpp>

#include "tree/quote.hpp"

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace cairn {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 15> kTable = {{
    {DType::boolean, "bool", 1},
    {DType::int8, "int8", 1},
    {DType::int16, "int16", 2},
    {DType::int32, "int32", 4},
    {DType::int64, "int64", 8},
    {DType::uint8, "uint8", 1},
    {DType::uint16, "uint16", 2},
    {DType::uint32, "uint32", 4},
    {DType::uint64, "uint64", 8},
    {DType::float16, "float16", 2},
    {DType::bfloat16, "bfloat16", 2},
    {DType::float32, "float32", 4},
    {DType::float64, "float64", 8},
    {DType::complex64, "complex64", 8},
    {DType::complex128, "complex128", 16},
}};

constexpr std::array<DType, 15> kAll = [] {
  std::array<DType, 15> all{};
  for (std::size_t i = 0; i < kTable.size(); ++i) all[i] = kTable[i].dtype;
  return all;
}();

const DTypeInfo* info(DType dtype) noexcept {
  const auto index = static_cast<std::size_t>(dtype);
  return index < kTable.size() ? &kTable[index] : nullptr;
}

// ---- small IEEE-style floats (binary16: 5 exponent bits, bfloat16: 8) ----------------------

// Rounds x >= 0 to the nearest integer, ties to even, independent of the FP rounding mode.
double round_half_even(double x) noexcept {
  const double floor = std::floor(x);
  const double frac = x - floor;  // exact: x is below 2^53 wherever this is called
  if (frac > 0.5) return floor + 1.0;
  if (frac < 0.5) return floor;
  return std::fmod(floor, 2.0) == 0.0 ? floor : floor + 1.0;
}

std::uint16_t encode_small(double value, int ebits, int mbits) noexcept {
  const std::uint32_t sign = std::signbit(value) ? (1u << (ebits + mbits)) : 0u;
  const std::uint32_t exp_all = (1u << ebits) - 1u;
  if (std::isnan(value))
    return static_cast<std::uint16_t>(sign | (exp_all << mbits) | (1u << (mbits - 1)));
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return static_cast<std::uint16_t>(sign | (exp_all << mbits));
  if (magnitude == 0.0) return static_cast<std::uint16_t>(sign);
  const int bias = (1 << (ebits - 1)) - 1;
  const int emin = 1 - bias;
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  --exponent;  // magnitude = 1.f * 2^exponent
  if (exponent < emin) {
    // Subnormal: count quanta of 2^(emin - mbits). Rounding up to 2^mbits quanta carries into
    // the exponent field and yields the smallest normal number, as it should.
    const double q = round_half_even(std::ldexp(magnitude, mbits - emin));
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(q));
  }
  double q = round_half_even(std::ldexp(magnitude, mbits - exponent));  // [2^m, 2^(m+1)]
  if (q == std::ldexp(1.0, mbits + 1)) {
    q /= 2;
    ++exponent;
  }
  if (exponent > bias) return static_cast<std::uint16_t>(sign | (exp_all << mbits));
  const auto mantissa = static_cast<std::uint32_t>(q) - (1u << mbits);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent + bias) << mbits) |
                                    mantissa);
}

double decode_small(std::uint16_t bits, int ebits, int mbits) noexcept {
  const bool negative = (bits >> (ebits + mbits)) & 1u;
  const std::uint32_t exp_all = (1u << ebits) - 1u;
  const std::uint32_t exp_field = (bits >> mbits) & exp_all;
  const std::uint32_t mantissa = bits & ((1u << mbits) - 1u);
  const int bias = (1 << (ebits - 1)) - 1;
  double magnitude = 0;
  if (exp_field == exp_all) {
    magnitude = mantissa != 0 ? std::numeric_limits<double>::quiet_NaN()
                              : std::numeric_limits<double>::infinity();
  } else if (exp_field == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - mbits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa | (1u << mbits)),
                           static_cast<int>(exp_field) - bias - mbits);
  }
  return negative ? -magnitude : magnitude;
}

// An integer magnitude rounded (ties to even) to `bits` significant bits, as an exact double.
// Converting that double to a format with `bits` significant bits is then exact, so integer
// -> float16/bfloat16 rounds once, like a direct hardware conversion.
double round_integer(std::uint64_t magnitude, int bits) noexcept {
  const int width = 64 - std::countl_zero(magnitude);
  if (width <= bits) return static_cast<double>(magnitude);
  const int shift = width - bits;
  std::uint64_t q = magnitude >> shift;
  const std::uint64_t rest = magnitude & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return std::ldexp(static_cast<double>(q), shift);
}

// ---- element storage types and the canonical value they load into --------------------------

struct Bool8 {
  std::uint8_t byte;
};
struct Half {
  std::uint16_t bits;
};
struct BHalf {
  std::uint16_t bits;
};

enum class Cat { boolean, sint, uint, real, complex };

struct Value {
  Cat cat = Cat::boolean;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0;
  double im = 0;
};

std::string format_double(double x) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

std::string format_value(const Value& v) {
  switch (v.cat) {
    case Cat::boolean: return v.u != 0 ? "true" : "false";
    case Cat::sint: return std::to_string(v.i);
    case Cat::uint: return std::to_string(v.u);
    case Cat::real: return format_double(v.re);
    case Cat::complex: return "(" + format_double(v.re) + ", " + format_double(v.im) + ")";
  }
  return "?";
}

struct CastContext {
  DType from;
  DType to;
  std::string_view what;
  std::size_t index = 0;

  [[noreturn]] void fail(const std::string& problem) const {
    std::string message = "cannot cast element " + std::to_string(index);
    if (!what.empty()) message += " of " + std::string(what);
    message += " from " + std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)) +
               ": " + problem +
               "; silent truncation is not allowed, so restore into a dtype that can hold the "
               "value or fix the data";
    throw InvalidArgument(std::move(message));
  }
  [[noreturn]] void does_not_fit(const Value& v, const char* why) const {
    fail("value " + format_value(v) + " does not fit (" + why + ")");
  }
};

template <class S>
Value load(const std::byte* p, const CastContext& ctx) {
  S s;
  std::memcpy(&s, p, sizeof s);
  Value v;
  if constexpr (std::is_same_v<S, Bool8>) {
    if (s.byte > 1) ctx.fail("the source bool byte is " + std::to_string(s.byte) + ", not 0 or 1");
    v.cat = Cat::boolean;
    v.u = s.byte;
  } else if constexpr (std::is_same_v<S, Half>) {
    v.cat = Cat::real;
    v.re = decode_small(s.bits, 5, 10);
  } else if constexpr (std::is_same_v<S, BHalf>) {
    v.cat = Cat::real;
    v.re = decode_small(s.bits, 8, 7);
  } else if constexpr (std::is_floating_point_v<S>) {
    v.cat = Cat::real;
    v.re = s;
  } else if constexpr (std::is_signed_v<S>) {
    v.cat = Cat::sint;
    v.i = s;
  } else if constexpr (std::is_unsigned_v<S>) {
    v.cat = Cat::uint;
    v.u = s;
  } else {
    v.cat = Cat::complex;
    v.re = s.real();
    v.im = s.imag();
  }
  return v;
}

// The real part of v as a floating value with `bits` significant bits of the target (used for
// integer sources so that they round exactly once).
double real_for(const Value& v, int bits) noexcept {
  switch (v.cat) {
    case Cat::boolean: return static_cast<double>(v.u);
    case Cat::sint: {
      const std::uint64_t magnitude = v.i < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v.i)
                                              : static_cast<std::uint64_t>(v.i);
      const double r = round_integer(magnitude, bits);
      return v.i < 0 ? -r : r;
    }
    case Cat::uint: return round_integer(v.u, bits);
    case Cat::real:
    case Cat::complex: return v.re;
  }
  return 0;
}

// Stores one floating component; `source` is the exact (or once-rounded) value.
template <class F>
F store_float(double source, const Value& v, const CastContext& ctx) {
  F out{};
  if constexpr (std::is_same_v<F, double>) {
    out = source;
  } else if constexpr (std::is_same_v<F, float>) {
    out = static_cast<float>(source);
    if (std::isinf(out) && std::isfinite(source)) ctx.does_not_fit(v, "beyond the float32 range");
  } else if constexpr (std::is_same_v<F, Half>) {
    out.bits = float16_from_double(source);
    if ((out.bits & 0x7fffu) == 0x7c00u && std::isfinite(source))
      ctx.does_not_fit(v, "beyond the float16 range of +-65504");
  } else {
    static_assert(std::is_same_v<F, BHalf>);
    out.bits = bfloat16_from_double(source);
    if ((out.bits & 0x7fffu) == 0x7f80u && std::isfinite(source))
      ctx.does_not_fit(v, "beyond the bfloat16 range");
  }
  return out;
}

template <class F>
constexpr int significant_bits() {
  if constexpr (std::is_same_v<F, Half>) return 11;
  else if constexpr (std::is_same_v<F, BHalf>) return 8;
  else return std::numeric_limits<F>::digits;
}

template <class D>
D store(const Value& v, const CastContext& ctx) {
  if constexpr (std::is_same_v<D, Bool8>) {
    bool ok = false;
    switch (v.cat) {
      case Cat::boolean: ok = true; break;
      case Cat::sint: ok = v.i == 0 || v.i == 1; break;
      case Cat::uint: ok = v.u <= 1; break;
      case Cat::real: ok = v.re == 0.0 || v.re == 1.0; break;
      case Cat::complex: break;
    }
    if (!ok) ctx.does_not_fit(v, "bool holds only 0 and 1");
    const bool truth = v.cat == Cat::sint ? v.i != 0 : v.cat == Cat::real ? v.re != 0 : v.u != 0;
    return Bool8{static_cast<std::uint8_t>(truth)};
  } else if constexpr (std::is_integral_v<D>) {
    constexpr auto lo = std::numeric_limits<D>::min();
    constexpr auto hi = std::numeric_limits<D>::max();
    switch (v.cat) {
      case Cat::boolean: return static_cast<D>(v.u);
      case Cat::sint:
        if (v.i < 0 ? (std::is_unsigned_v<D> || v.i < static_cast<std::int64_t>(lo))
                    : static_cast<std::uint64_t>(v.i) > static_cast<std::uint64_t>(hi))
          ctx.does_not_fit(v, "outside the integer range");
        return static_cast<D>(v.i);
      case Cat::uint:
        if (v.u > static_cast<std::uint64_t>(hi)) ctx.does_not_fit(v, "outside the integer range");
        return static_cast<D>(v.u);
      case Cat::real: {
        if (!std::isfinite(v.re)) ctx.does_not_fit(v, "not a finite number");
        if (std::trunc(v.re) != v.re) ctx.does_not_fit(v, "not a whole number");
        // 2^digits is exactly representable; lo is 0 or -2^digits.
        const double upper = std::ldexp(1.0, std::numeric_limits<D>::digits);
        if (v.re < static_cast<double>(lo) || v.re >= upper)
          ctx.does_not_fit(v, "outside the integer range");
        return static_cast<D>(v.re);
      }
      case Cat::complex: break;
    }
    ctx.fail("complex values cannot be cast to integers");
  } else if constexpr (std::is_same_v<D, std::complex<float>> ||
                       std::is_same_v<D, std::complex<double>>) {
    using F = typename D::value_type;
    const F re = store_float<F>(real_for(v, significant_bits<F>()), v, ctx);
    const F im = v.cat == Cat::complex ? store_float<F>(v.im, v, ctx) : F{0};
    return D(re, im);
  } else {
    if (v.cat == Cat::complex) ctx.fail("the imaginary part would be lost");
    return store_float<D>(real_for(v, significant_bits<D>()), v, ctx);
  }
}

template <class S, class D>
void convert_loop(const std::byte* src, std::byte* dst, std::size_t count, CastContext& ctx) {
  for (std::size_t k = 0; k < count; ++k) {
    ctx.index = k;
    const D out = store<D>(load<S>(src + k * sizeof(S), ctx), ctx);
    std::memcpy(dst + k * sizeof(D), &out, sizeof(D));
  }
}

template <class T>
struct Tag {
  using type = T;
};

template <class F>
void visit_storage(DType dtype, F&& f) {
  switch (dtype) {
    case DType::boolean: return f(Tag<Bool8>{});
    case DType::int8: return f(Tag<std::int8_t>{});
    case DType::int16: return f(Tag<std::int16_t>{});
    case DType::int32: return f(Tag<std::int32_t>{});
    case DType::int64: return f(Tag<std::int64_t>{});
    case DType::uint8: return f(Tag<std::uint8_t>{});
    case DType::uint16: return f(Tag<std::uint16_t>{});
    case DType::uint32: return f(Tag<std::uint32_t>{});
    case DType::uint64: return f(Tag<std::uint64_t>{});
    case DType::float16: return f(Tag<Half>{});
    case DType::bfloat16: return f(Tag<BHalf>{});
    case DType::float32: return f(Tag<float>{});
    case DType::float64: return f(Tag<double>{});
    case DType::complex64: return f(Tag<std::complex<float>>{});
    case DType::complex128: return f(Tag<std::complex<double>>{});
  }
  throw InvalidArgument("invalid dtype enumerator " + std::to_string(static_cast<int>(dtype)) +
                        " passed to cairn::convert");
}

}  // namespace

std::span<const DType> all_dtypes() noexcept { return kAll; }

std::size_t dtype_size(DType dtype) noexcept {
  const DTypeInfo* i = info(dtype);
  return i != nullptr ? i->size : 0;
}

std::string_view dtype_name(DType dtype) noexcept {
  const DTypeInfo* i = info(dtype);
  return i != nullptr ? i->name : std::string_view("invalid");
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const DTypeInfo& i : kTable) {
    if (i.name == name) return i.dtype;
  }
  return std::nullopt;
}

DType parse_dtype(std::string_view name) {
  if (const auto dtype = dtype_from_name(name)) return *dtype;
  std::string valid;
  for (const DTypeInfo& i : kTable) {
    if (!valid.empty()) valid += ", ";
    valid += i.name;
  }
  throw InvalidArgument("unknown dtype name " + tree_detail::quote(name) +
                        "; use one of: " + valid);
}

bool is_signed_integer(DType dtype) noexcept {
  return dtype == DType::int8 || dtype == DType::int16 || dtype == DType::int32 ||
         dtype == DType::int64;
}

bool is_unsigned_integer(DType dtype) noexcept {
  return dtype == DType::uint8 || dtype == DType::uint16 || dtype == DType::uint32 ||
         dtype == DType::uint64;
}

bool is_floating(DType dtype) noexcept {
  return dtype == DType::float16 || dtype == DType::bfloat16 || dtype == DType::float32 ||
         dtype == DType::float64;
}

bool is_complex(DType dtype) noexcept {
  return dtype == DType::complex64 || dtype == DType::complex128;
}

bool cast_allowed(DType from, DType to) noexcept {
  if (info(from) == nullptr || info(to) == nullptr) return false;
  return !is_complex(from) || is_complex(to);
}

void convert(DType from, const void* src, DType to, void* dst, std::size_t count,
             std::string_view what) {
  CastContext ctx{from, to, what};
  if (info(from) == nullptr || info(to) == nullptr) {
    throw InvalidArgument("cairn::convert got an invalid dtype enumerator" +
                          (what.empty() ? std::string() : " for " + std::string(what)));
  }
  if (!cast_allowed(from, to)) {
    throw InvalidArgument("cannot cast " +
                          (what.empty() ? std::string("values") : std::string(what)) + " from " +
                          std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)) +
                          ": the imaginary part would be lost; restore into a complex dtype");
  }
  if (count == 0) return;
  if (from == to) {
    std::memcpy(dst, src, count * dtype_size(from));
    return;
  }
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  visit_storage(from, [&](auto s) {
    visit_storage(to, [&](auto d) {
      convert_loop<typename decltype(s)::type, typename decltype(d)::type>(in, out, count, ctx);
    });
  });
}

std::uint16_t float16_from_double(double value) noexcept { return encode_small(value, 5, 10); }
double float16_to_double(std::uint16_t bits) noexcept { return decode_small(bits, 5, 10); }
std::uint16_t bfloat16_from_double(double value) noexcept { return encode_small(value, 8, 7); }
double bfloat16_to_double(std::uint16_t bits) noexcept { return decode_small(bits, 8, 7); }

}  // namespace cairn
