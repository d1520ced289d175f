// cairn — type handlers: how a C++ value becomes leaves of an ArrayTree and back.
//
// ArrayTree::add(path, value) calls TypeHandler<T>::to_leaves and ArrayTree::extract(path,
// value) calls TypeHandler<T>::from_leaves. cairn ships handlers for numbers, std::string,
// boost::json::value and std::vector of numbers; teach it your own type by specializing
// cairn::TypeHandler in your code (no change to cairn needed), before the first add/extract
// of that type:
//
//   struct Particles { std::vector<double> x, v; int n; };
//   template <>
//   struct cairn::TypeHandler<Particles> {
//     static void to_leaves(const Particles& p, std::string_view prefix, cairn::ArrayTree& t) {
//       t.add(cairn::join_path(prefix, "x"), p.x);
//       t.add(cairn::join_path(prefix, "v"), p.v);
//       t.add(cairn::join_path(prefix, "n"), p.n);
//     }
//     static void from_leaves(const cairn::ArrayTree& t, std::string_view prefix, Particles& p) {
//       t.extract(cairn::join_path(prefix, "x"), p.x);
//       t.extract(cairn::join_path(prefix, "v"), p.v);
//       t.extract(cairn::join_path(prefix, "n"), p.n);
//     }
//   };
//
// A handler may add array leaves that are shards of a distributed array (each rank its box),
// which is how a domain-decomposed container is saved; the built-in std::vector handler
// instead saves a replicated array (every rank the same whole vector).
//
// Nothing in this header is collective.
#pragma once

#include <cairn/tree.hpp>

#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cairn {

/// Whether TypeHandler<T> is complete with both functions (checked where it is used).
template <class T>
concept Handled = requires(const T& c, T& m, std::string_view p, ArrayTree& t,
                           const ArrayTree& ct) {
  TypeHandler<T>::to_leaves(c, p, t);
  TypeHandler<T>::from_leaves(ct, p, m);
};

/// Copies the elements of the array leaf `leaf` (its box, in row-major order, gathering a
/// strided view) into `dst` as `dtype`, with the checks of convert(). `dst` holds
/// leaf.as_array().local_volume() elements. For handlers. Not collective. Throws
/// InvalidArgument naming the path when the leaf is not an array or a value does not fit,
/// Unsupported when the leaf is in device memory.
void read_array_leaf(const Leaf& leaf, DType dtype, void* dst);

/// Reads the scalar leaf, or one-element array leaf, `leaf` into `out` as `dtype` with the
/// checks of convert(). For handlers. Not collective. Throws InvalidArgument naming the path
/// for other leaves and for a value that does not fit; Unsupported for device memory.
void read_scalar_leaf(const Leaf& leaf, DType dtype, void* out);

/// The length of the 1-d array leaf `leaf` when it holds its whole global array. For
/// handlers. Not collective. Throws InvalidArgument naming the path when the leaf is not an
/// array, not 1-d, or holds only part of the global array.
[[nodiscard]] std::int64_t whole_1d_length(const Leaf& leaf);

/// Numbers (bool, integers, float, double, std::complex): one scalar leaf. from_leaves also
/// accepts a one-element array leaf and converts with the checks of convert() (a saved int64
/// 300 restores into int8 as an InvalidArgument, never as a truncated value).
template <HasDType T>
struct TypeHandler<T> {
  /// Adds a scalar leaf at `prefix`. Throws InvalidArgument for a bad or duplicate path.
  static void to_leaves(const T& value, std::string_view prefix, ArrayTree& tree) {
    tree.add_scalar(prefix, Scalar(value));
  }
  /// Reads the leaf at `prefix`. Throws NotFound, InvalidArgument (see read_scalar_leaf()).
  static void from_leaves(const ArrayTree& tree, std::string_view prefix, T& value) {
    read_scalar_leaf(tree.at(prefix), dtype_of<T>(), &value);
  }
};

/// std::string: one string leaf.
template <>
struct TypeHandler<std::string> {
  /// Adds a string leaf at `prefix`. Throws InvalidArgument for a bad or duplicate path.
  static void to_leaves(const std::string& value, std::string_view prefix, ArrayTree& tree) {
    tree.add_string(prefix, value);
  }
  /// Reads the string leaf at `prefix`. Throws NotFound, InvalidArgument (wrong kind).
  static void from_leaves(const ArrayTree& tree, std::string_view prefix, std::string& value) {
    value = tree.at(prefix).as_string();
  }
};

/// boost::json::value: one JSON leaf.
template <>
struct TypeHandler<boost::json::value> {
  /// Adds a JSON leaf at `prefix`. Throws InvalidArgument for a bad or duplicate path.
  static void to_leaves(const boost::json::value& value, std::string_view prefix, ArrayTree& tree) {
    tree.add_json(prefix, value);
  }
  /// Reads the JSON leaf at `prefix`. Throws NotFound, InvalidArgument (wrong kind).
  static void from_leaves(const ArrayTree& tree, std::string_view prefix,
                          boost::json::value& value) {
    value = tree.at(prefix).as_json();
  }
};

/// std::vector of numbers: a replicated 1-d array leaf that is a *view* of the vector's
/// elements, not a copy: the vector must stay alive and unchanged until the save that uses
/// the tree has taken its data (for an async save, until save() returns). Every rank must
/// add the same whole vector (a replicated leaf); for a vector that is a shard of a
/// distributed array, add an ArrayShard with the rank's box instead. from_leaves resizes the
/// vector to the saved length and converts with the checks of convert(). There is no handler
/// for std::vector<bool> (it packs bits and has no element pointer): use std::uint8_t.
template <HasDType T>
requires(!std::is_same_v<std::remove_cv_t<T>, bool>) struct TypeHandler<std::vector<T>> {
  /// Adds a replicated 1-d array leaf viewing `value`. Throws InvalidArgument for a bad or
  /// duplicate path.
  static void to_leaves(const std::vector<T>& value, std::string_view prefix, ArrayTree& tree) {
    tree.add_array(prefix,
                   ArrayShard::host(value.data(), {static_cast<std::int64_t>(value.size())}, {},
                                    /*replicated=*/true));
  }
  /// Reads the whole 1-d array leaf at `prefix`. Throws NotFound, InvalidArgument (not a
  /// whole 1-d array, or a value that does not fit T), Unsupported (device memory).
  static void from_leaves(const ArrayTree& tree, std::string_view prefix, std::vector<T>& value) {
    const Leaf& leaf = tree.at(prefix);
    value.resize(static_cast<std::size_t>(whole_1d_length(leaf)));
    read_array_leaf(leaf, dtype_of<T>(), value.data());
  }
};

}  // namespace cairn
