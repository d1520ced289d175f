// cairn — the first failure of a multi-step local operation, kept until every rank reports
// (internal). Layers that must keep taking part in collective steps after a local failure
// remember it here and share it with Comm::all_ok() at the end.
#pragma once

#include <cairn/error.hpp>

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cairn::base {

class FirstError {
 public:
  /// Remembers `error` unless a failure is already remembered. Never throws.
  void record(const std::exception& error) noexcept {
    if (error_) return;
    try {
      error_.emplace(error_code_of(error), error.what());
    } catch (...) {
      // Out of memory: report() still sees a failure through failed_.
    }
    failed_ = true;
  }
  /// Whether a failure was remembered. Never throws.
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// Throws the remembered failure (as an Error of its code) on this rank alone; nothing
  /// when none was remembered.
  void throw_if_failed() const {
    if (!failed_) return;
    if (!error_) throw std::bad_alloc();
    throw Error(error_->first, error_->second);
  }
  /// Shares the verdict: throws on every rank of `comm` (a cairn::Comm; any type with its
  /// all_ok()) when any rank remembered a failure, its message prefixed by `prefix`.
  /// Collective.
  template <class Communicator>
  void report(const Communicator& comm, std::string_view prefix = {}) const {
    const std::string message =
        error_ ? std::string(prefix) + error_->second : std::string("out of memory");
    comm.all_ok(!failed_, failed_ ? message : std::string(),
                error_ ? error_->first : ErrorCode::internal);
  }

 private:
  std::optional<std::pair<ErrorCode, std::string>> error_;
  bool failed_ = false;
};

}  // namespace cairn::base
