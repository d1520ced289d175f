// cairn — turning MPI error codes into cairn errors (internal).
#pragma once

#include <mpi.h>

#include <cairn/error.hpp>

#include <string>
#include <string_view>

namespace cairn::detail {

/// The text MPI gives for an error code. Never throws beyond std::bad_alloc.
std::string mpi_error_string(int code);

/// Throws IoError naming `what` when `code` is not MPI_SUCCESS. Not collective.
inline void check_mpi(int code, std::string_view what) {
  if (code != MPI_SUCCESS) {
    throw IoError("", std::string(what) + " failed: " + mpi_error_string(code));
  }
}

}  // namespace cairn::detail
