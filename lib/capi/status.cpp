// cairn C ABI — status codes, the thread-local error message, the error mode, version and
// memory release.
#include <cairn/cairn.h>
#include <cairn/error.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "capi/status.hpp"

namespace cairn::capi {
namespace {

// The calling thread's last failure message (cairn_last_error).
thread_local std::string last_error;

// What a failing call does (cairn_set_error_mode), for every thread of the process.
std::atomic<int> error_mode{CAIRN_ERRORS_RETURN};

// The numeric values of ErrorCode are the C status values; check that they stay so.
static_assert(static_cast<int>(ErrorCode::invalid_argument) == CAIRN_ERR_INVALID_ARGUMENT);
static_assert(static_cast<int>(ErrorCode::io) == CAIRN_ERR_IO);
static_assert(static_cast<int>(ErrorCode::format) == CAIRN_ERR_FORMAT);
static_assert(static_cast<int>(ErrorCode::collective_mismatch) == CAIRN_ERR_COLLECTIVE_MISMATCH);
static_assert(static_cast<int>(ErrorCode::timeout) == CAIRN_ERR_TIMEOUT);
static_assert(static_cast<int>(ErrorCode::not_found) == CAIRN_ERR_NOT_FOUND);
static_assert(static_cast<int>(ErrorCode::unsupported) == CAIRN_ERR_UNSUPPORTED);
static_assert(static_cast<int>(ErrorCode::internal) == CAIRN_ERR_INTERNAL);

// CAIRN_ERRORS_FATAL: prints the calling thread's message with the rank, then ends the job.
[[noreturn]] void abort_job(cairn_status status) noexcept {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  const bool mpi = initialized != 0 && finalized == 0;
  int rank = -1;
  if (mpi) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank >= 0) {
    std::fprintf(stderr, "cairn (rank %d): %s\n", rank, last_error.c_str());
  } else {
    std::fprintf(stderr, "cairn: %s\n", last_error.c_str());
  }
  std::fflush(stderr);
  if (mpi) MPI_Abort(MPI_COMM_WORLD, status);
  std::abort();  // MPI_Abort returned, or there is no MPI job to end
}

cairn_status record(const char* function, cairn_status status, const char* message) noexcept {
  try {
    last_error.clear();
    if (function != nullptr) {
      last_error.assign(function);
      last_error.append(": ");
    }
    last_error.append(message);
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  if (error_mode.load(std::memory_order_relaxed) == CAIRN_ERRORS_FATAL) abort_job(status);
  return status;
}

}  // namespace

cairn_status fail(const char* function, std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const Error& e) {
    return record(function, static_cast<cairn_status>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return record(function, CAIRN_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return record(function, CAIRN_ERR_INTERNAL, e.what());
  } catch (...) {
    return record(function, CAIRN_ERR_INTERNAL, "unknown exception");
  }
}

}  // namespace cairn::capi

extern "C" {

const char* cairn_version(int* major, int* minor, int* patch) {
  if (major != nullptr) *major = CAIRN_VERSION_MAJOR;
  if (minor != nullptr) *minor = CAIRN_VERSION_MINOR;
  if (patch != nullptr) *patch = CAIRN_VERSION_PATCH;
  return CAIRN_VERSION_STRING;
}

cairn_status cairn_set_error_mode(int mode) {
  return cairn::capi::guarded(__func__, [&] {
    if (mode != CAIRN_ERRORS_RETURN && mode != CAIRN_ERRORS_FATAL) {
      throw cairn::InvalidArgument(
          "mode " + std::to_string(mode) +
          " is neither CAIRN_ERRORS_RETURN (0) nor CAIRN_ERRORS_FATAL (1)");
    }
    cairn::capi::error_mode.store(mode, std::memory_order_relaxed);
  });
}

cairn_status cairn_report_error(cairn_status status, const char* message) {
  if (status == CAIRN_OK) return CAIRN_OK;
  return cairn::capi::record(nullptr, status, message != nullptr ? message : "");
}

const char* cairn_last_error(void) { return cairn::capi::last_error.c_str(); }

const char* cairn_status_name(cairn_status status) {
  switch (status) {
    case CAIRN_OK: return "ok";
    case CAIRN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CAIRN_ERR_IO: return "I/O error";
    case CAIRN_ERR_FORMAT: return "format error";
    case CAIRN_ERR_COLLECTIVE_MISMATCH: return "collective mismatch";
    case CAIRN_ERR_TIMEOUT: return "timeout";
    case CAIRN_ERR_NOT_FOUND: return "not found";
    case CAIRN_ERR_UNSUPPORTED: return "unsupported";
    case CAIRN_ERR_INTERNAL: return "internal error";
    case CAIRN_ERR_NO_MEMORY: return "out of memory";
    default: return "unknown status";
  }
}

void cairn_free(void* memory) { std::free(memory); }

}  // extern "C"
