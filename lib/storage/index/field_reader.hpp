// cairn — reading the fields of the index's JSON (internal): each bad field is a FormatError
// naming the file and the field's path ("tree.leaves[3].section.length").
#pragma once

#include <cairn/error.hpp>
#include <cairn/tree.hpp>
#include <fmt/format.h>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::storage {

/// Reads fields of one JSON object of `source` at the field path `field` and reports the first
/// bad one as a FormatError naming the file and the field. Holds a reference to `source`,
/// which must outlive it. Not thread-safe.
class FieldReader {
 public:
  /// Reads fields under `field` of `source`. Never throws beyond std::bad_alloc.
  FieldReader(const std::filesystem::path& source, std::string field)
      : source_(source), field_(std::move(field)) {}

  /// Throws the FormatError of field `name` (empty: this object) with `problem`.
  [[noreturn]] void fail(std::string_view name, std::string_view problem) const {
    const std::string where = name.empty() ? field_ : field_ + "." + std::string(name);
    throw FormatError(source_.string(), where,
                      fmt::format("{}: field '{}' {}; the file is damaged or was not written "
                                  "by this version of cairn",
                                  source_.string(), where, problem));
  }

  /// `v` as an object; throws as fail() when it is not one.
  const boost::json::object& object(const boost::json::value& v) const {
    if (!v.is_object()) fail("", "is not a JSON object");
    return v.get_object();
  }

  /// Member `name` of `o`; throws as fail() when it is missing.
  const boost::json::value& member(const boost::json::object& o, std::string_view name) const {
    const auto* v = o.if_contains(name);
    if (v == nullptr) fail(name, "is missing");
    return *v;
  }

  /// Integer member `name` of `o` in [min, max]; throws as fail() otherwise.
  std::int64_t integer(const boost::json::object& o, std::string_view name, std::int64_t min,
                       std::int64_t max) const {
    const boost::json::value& v = member(o, name);
    std::int64_t n = 0;
    if (v.is_int64()) {
      n = v.get_int64();
    } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(max)) {
      n = static_cast<std::int64_t>(v.get_uint64());
    } else {
      fail(name, "is not an integer in range");
    }
    if (n < min || n > max) fail(name, fmt::format("is {}, outside [{}, {}]", n, min, max));
    return n;
  }

  /// String member `name` of `o`; throws as fail() otherwise.
  const std::string_view string(const boost::json::object& o, std::string_view name) const {
    const boost::json::value& v = member(o, name);
    if (!v.is_string()) fail(name, "is not a string");
    return v.get_string();
  }

  /// Boolean member `name` of `o`; throws as fail() otherwise.
  bool boolean(const boost::json::object& o, std::string_view name) const {
    const boost::json::value& v = member(o, name);
    if (!v.is_bool()) fail(name, "is not true or false");
    return v.get_bool();
  }

  /// Member `name` of `o` as at most kMaxDims integers >= 0; throws as fail() otherwise.
  std::vector<std::int64_t> dims(const boost::json::object& o, std::string_view name) const {
    const boost::json::value& v = member(o, name);
    if (!v.is_array()) fail(name, "is not an array of integers");
    const auto& a = v.get_array();
    if (a.size() > kMaxDims) fail(name, fmt::format("has more than {} dimensions", kMaxDims));
    std::vector<std::int64_t> out;
    for (const auto& e : a) {
      if (!e.is_int64() || e.get_int64() < 0)
        fail(name, "holds a value that is not an integer >= 0");
      out.push_back(e.get_int64());
    }
    return out;
  }

  /// A reader of the object at member `name` of this one.
  FieldReader at(std::string_view name) const {
    return FieldReader(source_, field_ + "." + std::string(name));
  }
  /// A reader of element `i` of the array at member `name` of this one.
  FieldReader at(std::string_view name, std::size_t i) const {
    return FieldReader(source_, fmt::format("{}.{}[{}]", field_, name, i));
  }
  /// The path of this object's field.
  const std::string& field() const { return field_; }

 private:
  const std::filesystem::path& source_;
  std::string field_;
};

}  // namespace cairn::storage
