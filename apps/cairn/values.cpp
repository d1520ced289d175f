#include "values.hpp"

#include <boost/json.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace cairn_tool {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// An integer of the slice syntax, or std::nullopt when `s` is not one.
std::optional<std::int64_t> parse_int(std::string_view s) {
  s = trim(s);
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

template <class T>
T load(const std::byte* p) noexcept {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Calls `f` with the element at `p` as std::int64_t (bool, signed), std::uint64_t
// (unsigned), double (floating) or std::complex<double>.
template <class F>
void visit(cairn::DType dtype, const std::byte* p, F&& f) {
  using cairn::DType;
  switch (dtype) {
    case DType::boolean: f(static_cast<std::int64_t>(load<std::uint8_t>(p))); break;
    case DType::int8: f(static_cast<std::int64_t>(load<std::int8_t>(p))); break;
    case DType::int16: f(static_cast<std::int64_t>(load<std::int16_t>(p))); break;
    case DType::int32: f(static_cast<std::int64_t>(load<std::int32_t>(p))); break;
    case DType::int64: f(load<std::int64_t>(p)); break;
    case DType::uint8: f(static_cast<std::uint64_t>(load<std::uint8_t>(p))); break;
    case DType::uint16: f(static_cast<std::uint64_t>(load<std::uint16_t>(p))); break;
    case DType::uint32: f(static_cast<std::uint64_t>(load<std::uint32_t>(p))); break;
    case DType::uint64: f(load<std::uint64_t>(p)); break;
    case DType::float16: f(cairn::float16_to_double(load<std::uint16_t>(p))); break;
    case DType::bfloat16: f(cairn::bfloat16_to_double(load<std::uint16_t>(p))); break;
    case DType::float32: f(static_cast<double>(load<float>(p))); break;
    case DType::float64: f(load<double>(p)); break;
    case DType::complex64: {
      const auto z = load<std::complex<float>>(p);
      f(std::complex<double>(z.real(), z.imag()));
      break;
    }
    case DType::complex128: f(load<std::complex<double>>(p)); break;
  }
}

// Shortest exact text of a float32 value (as float, not as the double it widens to).
std::string real_text(cairn::DType dtype, double v) {
  if (dtype == cairn::DType::float64 || dtype == cairn::DType::complex128) {
    return fmt::format("{}", v);
  }
  return fmt::format("{}", static_cast<float>(v));
}

}  // namespace

cairn::Box parse_slice(std::string_view text, const std::vector<std::int64_t>& shape,
                       const std::string& leaf) {
  cairn::Box box{std::vector<std::int64_t>(shape.size(), 0), shape};
  if (trim(text).empty()) return box;
  const auto bad = [&](std::size_t dim, std::string_view entry, std::string_view why) {
    return cairn::InvalidArgument(
        fmt::format("--slice '{}' of leaf '{}' (shape {}): dimension {} ('{}') {}", text, leaf,
                    cairn::shape_to_string(shape), dim, entry, why));
  };
  std::size_t dim = 0;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    if (dim >= shape.size()) {
      throw cairn::InvalidArgument(
          fmt::format("--slice '{}' names {} dimensions or more; leaf "
                      "'{}' has {} (shape {})",
                      text, dim + 1, leaf, shape.size(), cairn::shape_to_string(shape)));
    }
    const std::int64_t n = shape[dim];
    const auto resolve = [&](std::int64_t v) { return v < 0 ? v + n : v; };
    const auto colon = entry.find(':');
    std::int64_t start = 0;
    std::int64_t stop = n;
    if (colon == std::string_view::npos) {
      const auto index = parse_int(entry);
      if (!index) throw bad(dim, entry, "is not an index or start:stop");
      start = resolve(*index);
      if (start < 0 || start >= n) {
        throw bad(dim, entry, fmt::format("is outside [0, {}) (or [-{}, 0))", n, n));
      }
      stop = start + 1;
    } else {
      const auto first = trim(entry.substr(0, colon));
      const auto last = trim(entry.substr(colon + 1));
      const auto a = first.empty() ? std::optional<std::int64_t>(0) : parse_int(first);
      const auto b = last.empty() ? std::optional<std::int64_t>(n) : parse_int(last);
      if (!a || !b) throw bad(dim, entry, "is not start:stop with integers");
      start = resolve(*a);
      stop = resolve(*b);
      if (start < 0 || stop > n || start > n || stop < 0) {
        throw bad(dim, entry, fmt::format("reaches outside [0, {}]", n));
      }
      if (start >= stop) throw bad(dim, entry, "selects no element");
    }
    box.offset[dim] = start;
    box.extent[dim] = stop - start;
    ++dim;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return box;
}

std::string element_text(cairn::DType dtype, const std::byte* p) {
  std::string out;
  visit(dtype, p, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, std::complex<double>>) {
      const std::string im = real_text(dtype, v.imag());
      out = fmt::format("({}{}{}j)", real_text(dtype, v.real()),
                        im.starts_with('-') || im.starts_with('+') ? "" : "+", im);
    } else if constexpr (std::is_same_v<T, double>) {
      out = real_text(dtype, v);
    } else if (dtype == cairn::DType::boolean) {
      out = v != 0 ? "true" : "false";
    } else {
      out = fmt::format("{}", v);
    }
  });
  return out;
}

boost::json::value element_json(cairn::DType dtype, const std::byte* p) {
  // The double nearest to the shortest text of the value: 0.1f is 0.1, not the
  // 0.10000000149011612 it widens to.
  const auto real = [dtype](double v) {
    return std::isfinite(v) ? boost::json::value(std::strtod(real_text(dtype, v).c_str(), nullptr))
                            : boost::json::value(nullptr);
  };
  boost::json::value out;
  visit(dtype, p, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, std::complex<double>>) {
      out = boost::json::array{real(v.real()), real(v.imag())};
    } else if constexpr (std::is_same_v<T, double>) {
      out = real(v);
    } else if (dtype == cairn::DType::boolean) {
      out = v != 0;
    } else {
      out = v;
    }
  });
  return out;
}

void Stats::add(cairn::DType dtype, const std::byte* p, std::int64_t n) noexcept {
  const std::size_t size = cairn::dtype_size(dtype);
  for (std::int64_t i = 0; i < n; ++i) {
    visit(dtype, p + i * static_cast<std::int64_t>(size), [&](auto v) {
      using T = decltype(v);
      if constexpr (std::is_same_v<T, std::int64_t>) {
        imin = count == 0 ? v : std::min(imin, v);
        imax = count == 0 ? v : std::max(imax, v);
        sum += static_cast<long double>(v);
      } else if constexpr (std::is_same_v<T, std::uint64_t>) {
        umin = count == 0 ? v : std::min(umin, v);
        umax = count == 0 ? v : std::max(umax, v);
        sum += static_cast<long double>(v);
      } else {
        double x = 0;
        if constexpr (std::is_same_v<T, double>) {
          x = v;
        } else {
          x = std::abs(v);
        }
        if (std::isnan(x)) {
          ++nan;
          return;
        }
        dmin = count == 0 ? x : std::min(dmin, x);
        dmax = count == 0 ? x : std::max(dmax, x);
        sum += static_cast<long double>(x);
      }
      ++count;
    });
  }
}

void Stats::merge(cairn::DType dtype, const Stats& other) noexcept {
  (void)dtype;
  if (other.count > 0) {
    if (count == 0) {
      imin = other.imin, imax = other.imax, umin = other.umin, umax = other.umax;
      dmin = other.dmin, dmax = other.dmax;
    } else {
      imin = std::min(imin, other.imin), imax = std::max(imax, other.imax);
      umin = std::min(umin, other.umin), umax = std::max(umax, other.umax);
      dmin = std::min(dmin, other.dmin), dmax = std::max(dmax, other.dmax);
    }
  }
  count += other.count;
  nan += other.nan;
  sum += other.sum;
}

boost::json::object Stats::json(cairn::DType dtype) const {
  const auto real = [](double v) {
    return std::isfinite(v) ? boost::json::value(v) : boost::json::value(nullptr);
  };
  boost::json::object out = {{"count", count}, {"nan", nan}};
  if (count == 0) {
    out["min"] = nullptr;
    out["max"] = nullptr;
    out["mean"] = nullptr;
  } else if (cairn::is_unsigned_integer(dtype)) {
    out["min"] = umin;
    out["max"] = umax;
  } else if (cairn::is_signed_integer(dtype) || dtype == cairn::DType::boolean) {
    out["min"] = imin;
    out["max"] = imax;
  } else {
    out["min"] = real(dmin);
    out["max"] = real(dmax);
  }
  if (count > 0) out["mean"] = real(static_cast<double>(sum / static_cast<long double>(count)));
  if (cairn::is_complex(dtype)) out["of"] = "abs";
  return out;
}

}  // namespace cairn_tool
