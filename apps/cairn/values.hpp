// cairn (the command-line tool) — element values of array leaves for `cairn dump`: the
// --slice syntax, each dtype as text and JSON, and min/max/mean.
#pragma once

#include <boost/json/value.hpp>
#include <cairn/box.hpp>
#include <cairn/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn_tool {

/// The part of an array of `shape` that `text` selects: comma-separated, one entry per
/// dimension from the first, each `start:stop` (either may be left out), `:` or an index;
/// negative numbers count from the end; dimensions not named are whole. An empty text
/// selects everything (no element for an array with a dimension of extent 0). Throws
/// cairn::InvalidArgument naming `leaf`, the dimension and its extent for a malformed entry, one
/// out of range, or a selection of no element.
[[nodiscard]] cairn::Box parse_slice(std::string_view text, const std::vector<std::int64_t>& shape,
                                     const std::string& leaf);

/// One element of `dtype` at `p` as text: numbers in their shortest exact form, bools as
/// true/false, complex numbers as (re+imj). Never throws beyond std::bad_alloc.
[[nodiscard]] std::string element_text(cairn::DType dtype, const std::byte* p);

/// One element as JSON: a number, a bool, [re, im] for complex; null for NaN and infinities
/// (which JSON cannot hold). Never throws beyond std::bad_alloc.
[[nodiscard]] boost::json::value element_json(cairn::DType dtype, const std::byte* p);

/// Running min/max/mean of elements of one dtype (of |z| for complex ones). NaN is counted
/// apart and left out of the rest. Trivially copyable: ranks exchange it as bytes.
struct Stats {
  std::int64_t count = 0;            ///< elements in min/max/mean
  std::int64_t nan = 0;              ///< NaN elements
  std::int64_t imin = 0, imax = 0;   ///< bool and signed integer dtypes: exact
  std::uint64_t umin = 0, umax = 0;  ///< unsigned integer dtypes: exact
  double dmin = 0, dmax = 0;         ///< floating dtypes (complex: |z|)
  long double sum = 0;

  /// Adds `n` elements of `dtype` at `p`. Never throws.
  void add(cairn::DType dtype, const std::byte* p, std::int64_t n) noexcept;
  /// Adds what another rank counted (of the same dtype). Never throws.
  void merge(cairn::DType dtype, const Stats& other) noexcept;
  /// {"count", "nan", "min", "max", "mean"} (min/max/mean null without elements; "of":
  /// "abs" for complex dtypes). Never throws beyond std::bad_alloc.
  [[nodiscard]] boost::json::object json(cairn::DType dtype) const;
};

}  // namespace cairn_tool
