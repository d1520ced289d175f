// cairn C ABI — the one place where C++ exceptions become C status codes.
//
// Every C entry point runs its body through guarded(): the body checks its arguments and
// calls the C++ API; whatever it throws is turned into a cairn_status and the calling
// thread's message (cairn_last_error), and nothing crosses the ABI as an exception.
#pragma once

#include <cairn/cairn.h>

#include <exception>
#include <utility>

namespace cairn::capi {

/// Records the exception `error` as the calling thread's last error, prefixed with the
/// name of the C function, and returns its status. Never throws.
cairn_status fail(const char* function, std::exception_ptr error) noexcept;

/// Runs `body`; returns CAIRN_OK, or the status of what it threw (see fail()). Never throws.
template <class Body>
cairn_status guarded(const char* function, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return CAIRN_OK;
  } catch (...) {
    return fail(function, std::current_exception());
  }
}

}  // namespace cairn::capi
