// cairn — the error model shared by every layer.
//
// Every failure cairn reports is a cairn::Error. Its code() says which kind it is (the C ABI
// maps codes to status values one to one); the concrete subclasses carry what the message
// names (a path, a field, a rank). Messages say what happened, where, and what to do.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

/// Kind of a cairn error. The numeric values are stable: the C ABI returns them as status.
enum class ErrorCode : int {
  invalid_argument = 1,     ///< the caller passed something cairn cannot accept
  io = 2,                   ///< an operating-system, MPI-IO or HDF5 call failed
  format = 3,               ///< a file cairn reads is damaged or not what cairn wrote
  collective_mismatch = 4,  ///< ranks disagree about a collective call
  timeout = 5,              ///< a collective step missed its deadline
  not_found = 6,            ///< a step, item, leaf or file does not exist
  unsupported = 7,          ///< valid request that this build or machine cannot serve
  internal = 8,             ///< a bug in cairn; please report it with the message
};

/// Stable lower-case name of an error code ("invalid argument", "I/O error", ...).
/// Not collective; never throws.
[[nodiscard]] std::string_view to_string(ErrorCode code) noexcept;

/// Base of every exception cairn throws. Not collective.
class Error : public std::exception {
 public:
  /// Builds an error of kind `code` whose what() is `message`. Never throws beyond
  /// std::bad_alloc.
  Error(ErrorCode code, std::string message);

  /// The full message. Never throws.
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  /// The kind of error. Never throws.
  [[nodiscard]] ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
  std::string message_;
};

/// The caller passed an argument cairn cannot accept (bad shape, unknown dtype, ...).
class InvalidArgument : public Error {
 public:
  /// `message` says which argument and why.
  explicit InvalidArgument(std::string message);
};

/// An operating-system, MPI-IO or HDF5 call failed on `path`.
class IoError : public Error {
 public:
  /// `path` is the file or directory involved (may be empty when none is).
  IoError(std::string path, std::string message);
  /// The file or directory involved (may be empty). Never throws.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// A file cairn reads is damaged, truncated or not in a format cairn understands.
class FormatError : public Error {
 public:
  /// `path` is the file; `field` the field, leaf or byte range that is wrong.
  FormatError(std::string path, std::string field, std::string message);
  /// The damaged file. Never throws.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The field, leaf or byte range that is wrong. Never throws.
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

 private:
  std::string path_;
  std::string field_;
};

/// The ranks of a communicator disagree about a collective call (different operation,
/// step, item names or tree structure). Thrown on every rank of the call.
class CollectiveMismatch : public Error {
 public:
  /// `rank` is the first rank that differs from the reference rank; `field` names what
  /// differs ("operation", "step", "structure", ...).
  CollectiveMismatch(int rank, std::string field, std::string message);
  /// The first rank that differs from the reference rank. Never throws.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// What differs ("operation", "step", "structure", ...). Never throws.
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

 private:
  int rank_;
  std::string field_;
};

/// A collective step did not complete before its deadline.
class TimeoutError : public Error {
 public:
  /// `missing_ranks` are the ranks known not to have arrived (empty when unknown).
  TimeoutError(std::vector<int> missing_ranks, std::string message);
  /// The ranks known not to have arrived (empty when unknown). Never throws.
  [[nodiscard]] const std::vector<int>& missing_ranks() const noexcept { return missing_; }

 private:
  std::vector<int> missing_;
};

/// A requested step, item, leaf or file does not exist.
class NotFound : public Error {
 public:
  /// `what` is the name or path that was not found.
  NotFound(std::string what, std::string message);
  /// The name or path that was not found. Never throws.
  [[nodiscard]] const std::string& what_missing() const noexcept { return what_; }

 private:
  std::string what_;
};

/// The request is valid but this build or machine cannot serve it (e.g. a CUDA pointer in a
/// build without CUDA).
class Unsupported : public Error {
 public:
  /// `message` says what is unsupported and why (the missing build option or device).
  explicit Unsupported(std::string message);
};

/// Throws the subclass of Error that matches `code`, with `message`. Used to re-raise on
/// every rank an error that happened on one rank. Not collective.
[[noreturn]] void throw_error(ErrorCode code, std::string message);

/// Returns the ErrorCode that describes the exception `e` (ErrorCode::internal for
/// exceptions that are not cairn::Error). Not collective; never throws.
[[nodiscard]] ErrorCode error_code_of(const std::exception& e) noexcept;

}  // namespace cairn
