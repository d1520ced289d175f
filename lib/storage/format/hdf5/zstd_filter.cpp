#include "storage/format/hdf5/zstd_filter.hpp"

#include <zstd.h>

#include <cstdlib>

namespace cairn::storage::h5 {
namespace {

/// The filter function (H5Z_func_t): compresses `nbytes` bytes of `*buf` into one zstd frame,
/// or with H5Z_FLAG_REVERSE decompresses a frame; replaces `*buf` (freed) and `*buf_size` by
/// the new buffer and returns its length. Returns 0 on failure, which HDF5 reports as a filter
/// failure (the chunk is not written, or not read). Never throws.
size_t zstd_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                   size_t* buf_size, void** buf) noexcept {
  void* out = nullptr;
  size_t out_size = 0;
  if ((flags & H5Z_FLAG_REVERSE) != 0) {
    const unsigned long long content = ZSTD_getFrameContentSize(*buf, nbytes);
    if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN) return 0;
    out_size = static_cast<size_t>(content);
    out = std::malloc(out_size > 0 ? out_size : 1);
    if (out == nullptr) return 0;
    const size_t got = ZSTD_decompress(out, out_size, *buf, nbytes);
    if (ZSTD_isError(got) != 0 || got != out_size) {
      std::free(out);
      return 0;
    }
  } else {
    const int level = cd_nelmts > 0 ? static_cast<int>(cd_values[0]) : 0;
    const size_t bound = ZSTD_compressBound(nbytes);
    out = std::malloc(bound);
    if (out == nullptr) return 0;
    out_size = ZSTD_compress(out, bound, *buf, nbytes, level);
    if (ZSTD_isError(out_size) != 0) {
      std::free(out);
      return 0;
    }
  }
  std::free(*buf);
  *buf = out;
  *buf_size = out_size > 0 ? out_size : 1;
  return out_size;
}

}  // namespace

const H5Z_class2_t kZstdFilterClass = {
    H5Z_CLASS_T_VERS,  // version
    kZstdFilterId,     // id
    1,                 // encoder_present
    1,                 // decoder_present
    "zstd (cairn)",    // name
    nullptr,           // can_apply
    nullptr,           // set_local
    zstd_filter,       // filter
};

}  // namespace cairn::storage::h5
