// cairn — scalar leaves: construction from bytes and the JSON form.
#include <cairn/tree.hpp>

#include "tree/quote.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <limits>

namespace cairn {
namespace {

namespace json = boost::json;

json::value float_to_json(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

struct ScalarReader {
  std::string_view source;
  std::string field;

  [[noreturn]] void fail(const std::string& problem) const {
    std::string message = "invalid scalar";
    if (!source.empty()) message += " in " + tree_detail::quote(source, 200);
    message += ": field '" + field + "' " + problem +
               "; the metadata is damaged or was not written by cairn";
    throw FormatError(std::string(source), field, std::move(message));
  }

  double real(const json::value& v) const {
    if (v.is_double()) return v.get_double();
    if (v.is_int64()) return static_cast<double>(v.get_int64());
    if (v.is_uint64()) return static_cast<double>(v.get_uint64());
    if (v.is_string()) {
      const json::string& s = v.get_string();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail("must be a number or one of \"nan\", \"inf\", \"-inf\"");
  }

  // Converts one value into `dtype` with convert()'s range checks, as a FormatError.
  void store(DType from, const void* src, DType to, void* dst) const {
    try {
      convert(from, src, to, dst, 1, "field '" + field + "'");
    } catch (const InvalidArgument& e) {
      fail(std::string("does not fit its dtype: ") + e.what());
    }
  }
};

}  // namespace

Scalar::Scalar(DType dtype, const void* bytes) : dtype_(dtype) {
  const std::size_t size = dtype_size(dtype);
  if (size == 0) {
    throw InvalidArgument("Scalar: invalid dtype enumerator " +
                          std::to_string(static_cast<int>(dtype)));
  }
  if (bytes == nullptr) throw InvalidArgument("Scalar: the value pointer is null");
  std::memcpy(bytes_.data(), bytes, size);
}

json::value Scalar::to_json() const {
  json::object o;
  o["dtype"] = dtype_name(dtype_);
  if (dtype_ == DType::boolean) {
    o["value"] = std::to_integer<int>(bytes_[0]) != 0;
  } else if (is_signed_integer(dtype_)) {
    o["value"] = as<std::int64_t>();
  } else if (is_unsigned_integer(dtype_)) {
    o["value"] = as<std::uint64_t>();
  } else if (is_complex(dtype_)) {
    const auto c = as<std::complex<double>>();
    o["value"] = json::array{float_to_json(c.real()), float_to_json(c.imag())};
  } else {
    o["value"] = float_to_json(as<double>());
  }
  return o;
}

Scalar Scalar::from_json(const json::value& value, std::string_view source,
                         std::string_view field) {
  const std::string prefix = field.empty() ? std::string() : std::string(field) + ".";
  ScalarReader r{source, std::string(field)};
  const json::object* o = value.if_object();
  if (o == nullptr) r.fail("must be a JSON object");

  r.field = prefix + "dtype";
  const json::value* name = o->if_contains("dtype");
  if (name == nullptr) r.fail("is missing");
  if (!name->is_string()) r.fail("must be a string");
  const auto dtype = dtype_from_name(name->get_string());
  if (!dtype) r.fail("names an unknown dtype " + tree_detail::quote(name->get_string()));

  r.field = prefix + "value";
  const json::value* v = o->if_contains("value");
  if (v == nullptr) r.fail("is missing");
  Scalar out;
  out.dtype_ = *dtype;
  if (*dtype == DType::boolean) {
    if (!v->is_bool()) r.fail("must be true or false");
    out.bytes_[0] = std::byte{static_cast<unsigned char>(v->get_bool() ? 1 : 0)};
  } else if (is_signed_integer(*dtype) || is_unsigned_integer(*dtype)) {
    if (v->is_int64()) {
      const std::int64_t i = v->get_int64();
      r.store(DType::int64, &i, *dtype, out.bytes_.data());
    } else if (v->is_uint64()) {
      const std::uint64_t u = v->get_uint64();
      r.store(DType::uint64, &u, *dtype, out.bytes_.data());
    } else {
      r.fail("must be an integer");
    }
  } else if (is_complex(*dtype)) {
    const json::array* a = v->if_array();
    if (a == nullptr || a->size() != 2) r.fail("must be an array [real, imaginary]");
    const std::complex<double> c(r.real((*a)[0]), r.real((*a)[1]));
    r.store(DType::complex128, &c, *dtype, out.bytes_.data());
  } else {
    const double x = r.real(*v);
    r.store(DType::float64, &x, *dtype, out.bytes_.data());
  }
  return out;
}

}  // namespace cairn
