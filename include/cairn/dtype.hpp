// cairn — element types of array leaves: the dtype table, stable names, C++ type mapping and
// value-checked numeric casts (IEEE float16 and bfloat16 included).
//
// Nothing in this header is collective and nothing talks to MPI or the file system.
#pragma once

#include <cairn/error.hpp>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace cairn {

/// Element type of an array or scalar leaf. The names returned by dtype_name() are stable: they
/// are written to checkpoint metadata. The numeric values are not part of any format.
enum class DType : std::uint8_t {
  boolean,     ///< "bool": one byte, 0 or 1
  int8,        ///< "int8"
  int16,       ///< "int16"
  int32,       ///< "int32"
  int64,       ///< "int64"
  uint8,       ///< "uint8"
  uint16,      ///< "uint16"
  uint32,      ///< "uint32"
  uint64,      ///< "uint64"
  float16,     ///< "float16": IEEE 754 binary16, stored as its 16-bit pattern
  bfloat16,    ///< "bfloat16": the upper 16 bits of an IEEE binary32
  float32,     ///< "float32"
  float64,     ///< "float64"
  complex64,   ///< "complex64": two float32 (real, imaginary), std::complex<float>
  complex128,  ///< "complex128": two float64 (real, imaginary), std::complex<double>
};

/// Every dtype, in the order of the enumeration. Not collective; never throws.
[[nodiscard]] std::span<const DType> all_dtypes() noexcept;

/// Size of one element in bytes (1 for bool). Not collective; never throws.
[[nodiscard]] std::size_t dtype_size(DType dtype) noexcept;

/// Stable metadata name of `dtype` ("bool", "int8", ..., "complex128"). Not collective; never
/// throws (an out-of-range enumerator yields "invalid").
[[nodiscard]] std::string_view dtype_name(DType dtype) noexcept;

/// The dtype whose dtype_name() is `name` (exact, case-sensitive), or std::nullopt. Safe on
/// any input (use it when reading metadata and report a FormatError yourself). Not
/// collective; never throws.
[[nodiscard]] std::optional<DType> dtype_from_name(std::string_view name) noexcept;

/// The dtype whose dtype_name() is `name`. Not collective. Throws InvalidArgument quoting the
/// bad string (escaped, shortened when long) and listing the valid names.
[[nodiscard]] DType parse_dtype(std::string_view name);

/// Whether `dtype` is int8..int64. Not collective; never throws.
[[nodiscard]] bool is_signed_integer(DType dtype) noexcept;
/// Whether `dtype` is uint8..uint64. Not collective; never throws.
[[nodiscard]] bool is_unsigned_integer(DType dtype) noexcept;
/// Whether `dtype` is float16, bfloat16, float32 or float64. Not collective; never throws.
[[nodiscard]] bool is_floating(DType dtype) noexcept;
/// Whether `dtype` is complex64 or complex128. Not collective; never throws.
[[nodiscard]] bool is_complex(DType dtype) noexcept;

/// Whether `T` has a dtype: bool, the integer types other than bool (by size and signedness:
/// int8_t..int64_t, uint8_t..uint64_t, also long long, char and friends), float, double,
/// std::complex<float> and std::complex<double>.
template <class T>
inline constexpr bool has_dtype_v =
    std::is_same_v<T, bool> ||
    (std::is_integral_v<T> &&
     (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)) ||
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// Concept form of has_dtype_v (after removing cv-qualifiers).
template <class T>
concept HasDType = has_dtype_v<std::remove_cv_t<T>>;

/// The dtype of the C++ type `T` (see has_dtype_v). Compile-time; not collective.
template <HasDType T>
[[nodiscard]] consteval DType dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return DType::boolean;
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1) return DType::int8;
    else if constexpr (sizeof(U) == 2) return DType::int16;
    else if constexpr (sizeof(U) == 4) return DType::int32;
    else return DType::int64;
  } else if constexpr (std::is_integral_v<U>) {
    if constexpr (sizeof(U) == 1) return DType::uint8;
    else if constexpr (sizeof(U) == 2) return DType::uint16;
    else if constexpr (sizeof(U) == 4) return DType::uint32;
    else return DType::uint64;
  } else if constexpr (std::is_same_v<U, float>) {
    return DType::float32;
  } else if constexpr (std::is_same_v<U, double>) {
    return DType::float64;
  } else if constexpr (std::is_same_v<U, std::complex<float>>) {
    return DType::complex64;
  } else {
    return DType::complex128;
  }
}

/// Whether convert() accepts casting `from` into `to`. Every pair of numeric dtypes is
/// allowed except complex -> real (bool, integer or floating), which would drop the imaginary
/// part. Whether a given *value* fits is checked by convert(). Not collective; never throws.
[[nodiscard]] bool cast_allowed(DType from, DType to) noexcept;

/// Casts `count` elements from `src` (dtype `from`) to `dst` (dtype `to`). Buffers are
/// contiguous, may be unaligned, and must not overlap. Rounding is round-to-nearest-even.
///
/// Silent truncation is not allowed: convert() checks every value and throws InvalidArgument
/// naming `what` (e.g. the leaf path), the element index, the value and both dtypes when a
/// value does not fit the target:
///  - an integer outside the target integer range (300 -> int8, -1 -> uint8);
///  - a floating value that is NaN, infinite, not a whole number, or out of range, cast to an
///    integer type;
///  - anything other than 0 or 1 cast to bool, or a source bool byte that is not 0 or 1;
///  - a finite value whose magnitude overflows a floating target (70000 -> float16,
///    1e300 -> float32). Losing precision to rounding, underflow to zero and carrying NaN or
///    infinity between floating types are allowed, as in any floating-point cast.
/// `to` may be equal to `from` (a plain copy). Not collective. Throws InvalidArgument when
/// !cast_allowed(from, to) or a value does not fit; `dst` is then partly written.
void convert(DType from, const void* src, DType to, void* dst, std::size_t count,
             std::string_view what = {});

/// IEEE binary16 bit pattern nearest to `value` (round-to-nearest-even; overflow gives
/// infinity, NaN stays NaN). Not collective; never throws.
[[nodiscard]] std::uint16_t float16_from_double(double value) noexcept;
/// The value of an IEEE binary16 bit pattern (exact). Not collective; never throws.
[[nodiscard]] double float16_to_double(std::uint16_t bits) noexcept;
/// bfloat16 bit pattern nearest to `value` (round-to-nearest-even; overflow gives infinity,
/// NaN stays NaN). Not collective; never throws.
[[nodiscard]] std::uint16_t bfloat16_from_double(double value) noexcept;
/// The value of a bfloat16 bit pattern (exact). Not collective; never throws.
[[nodiscard]] double bfloat16_to_double(std::uint16_t bits) noexcept;

}  // namespace cairn
