// cairn C ABI — dtypes and communicators.
#include <array>
#include <string>

#include "capi/handles.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;

namespace {

cairn_status create_comm(const char* function, MPI_Comm comm, cairn_comm** out) {
  return guarded(function, [&] {
    out_param(out, "out");
    *out = nullptr;
    if (comm == MPI_COMM_NULL) throw cairn::InvalidArgument("comm is MPI_COMM_NULL");
    auto handle = std::make_unique<cairn_comm>();
    handle->comm = std::make_shared<cairn::Comm>(comm);
    *out = handle.release();
  });
}

}  // namespace

extern "C" {

cairn_status cairn_dtype_size(int dtype, size_t* size) {
  return guarded(__func__, [&] {
    *out_param(size, "size") = cairn::dtype_size(cairn::capi::dtype_from_c(dtype));
  });
}

const char* cairn_dtype_name(int dtype) {
  if (dtype < CAIRN_BOOL || dtype > CAIRN_COMPLEX128) return nullptr;
  // NUL-terminated copies of the metadata names, made once (thread-safe static init).
  static const auto names = [] {
    std::array<std::string, CAIRN_COMPLEX128 + 1> result;
    for (int d = CAIRN_BOOL; d <= CAIRN_COMPLEX128; ++d) {
      result[static_cast<std::size_t>(d)] = cairn::dtype_name(cairn::capi::dtype_from_c(d));
    }
    return result;
  }();
  return names[static_cast<std::size_t>(dtype)].c_str();
}

cairn_status cairn_comm_create(MPI_Comm comm, cairn_comm** out) {
  return create_comm(__func__, comm, out);
}

cairn_status cairn_comm_create_f(MPI_Fint comm, cairn_comm** out) {
  return create_comm(__func__, MPI_Comm_f2c(comm), out);
}

cairn_status cairn_comm_rank(const cairn_comm* comm, int* rank) {
  return guarded(__func__, [&] { *out_param(rank, "rank") = deref(comm, "comm").comm->rank(); });
}

cairn_status cairn_comm_size(const cairn_comm* comm, int* size) {
  return guarded(__func__, [&] { *out_param(size, "size") = deref(comm, "comm").comm->size(); });
}

void cairn_comm_free(cairn_comm* comm) { delete comm; }

}  // extern "C"
