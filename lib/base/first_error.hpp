// cairn — "remember the first local failure, then agree" (internal). A rank that fails in a
// multi-step operation must keep taking part in its collective steps, or the other ranks
// wait forever: it remembers the first failure here, goes on, and shares it with
// Comm::all_ok() at the end (report()), so that every rank throws alike.
#pragma once

#include <cairn/error.hpp>

#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cairn::base {

/// The first failure of a local operation. Thread-safe: writer threads and the caller's
/// thread may record at once. Neither copyable nor movable.
class FirstError {
 public:
  FirstError() = default;
  FirstError(const FirstError&) = delete;
  FirstError& operator=(const FirstError&) = delete;

  /// Remembers `error` unless a failure is already remembered. Never throws.
  void record(const std::exception& error) noexcept {
    remember(error_code_of(error), error.what());
  }
  /// Remembers the exception being handled (call it inside a catch block); one that is not a
  /// std::exception counts as an internal error. Never throws.
  void record_current() noexcept {
    try {
      throw;
    } catch (const std::exception& e) {
      record(e);
    } catch (...) {
      remember(ErrorCode::internal, "unknown exception");
    }
  }
  /// Whether a failure was remembered. Never throws.
  [[nodiscard]] bool failed() const noexcept {
    const std::lock_guard lock(mutex_);
    return failed_;
  }
  /// Throws the remembered failure (as an Error of its code) on this rank alone; nothing
  /// when none was remembered.
  void throw_if_failed() const {
    const auto [failed, error] = snapshot();
    if (!failed) return;
    if (!error) throw std::bad_alloc();
    throw Error(error->first, error->second);
  }
  /// Shares the verdict: throws on every rank of `comm` (a cairn::Comm; any type with its
  /// all_ok()) when any rank remembered a failure, its message prefixed by `prefix`.
  /// Collective.
  template <class Communicator>
  void report(const Communicator& comm, std::string_view prefix = {}) const {
    const auto [failed, error] = snapshot();
    if (!failed) {
      comm.all_ok(true, {}, ErrorCode::internal);
      return;
    }
    comm.all_ok(false, error ? std::string(prefix) + error->second : std::string("out of memory"),
                error ? error->first : ErrorCode::internal);
  }

 private:
  using Remembered = std::optional<std::pair<ErrorCode, std::string>>;
  void remember(ErrorCode code, const char* message) noexcept {
    const std::lock_guard lock(mutex_);
    if (failed_) return;
    failed_ = true;
    try {
      error_.emplace(code, message);
    } catch (...) {
      // Out of memory: failed_ still reports a failure ("out of memory").
    }
  }
  std::pair<bool, Remembered> snapshot() const {
    const std::lock_guard lock(mutex_);
    return {failed_, error_};
  }

  mutable std::mutex mutex_;
  Remembered error_;
  bool failed_ = false;
};

}  // namespace cairn::base
