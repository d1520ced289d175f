#include "storage/format/hdf5/zfp_filter.hpp"

#include <zfp.h>

#include <cstdlib>
#include <memory>

namespace cairn::storage::h5 {
namespace {

// H5Z-ZFP's own version in cd_values[0] (1.1.0); readers check only zfp's version and codec.
constexpr unsigned kPluginVersion = 0x0110;
// cd_values that H5Z-ZFP reads at most.
constexpr std::size_t kMaxCdValues = 32;

struct StreamCloser {
  void operator()(zfp_stream* z) const noexcept { zfp_stream_close(z); }
};
struct BitsCloser {
  void operator()(bitstream* b) const noexcept { stream_close(b); }
};
struct FieldFree {
  void operator()(zfp_field* f) const noexcept { zfp_field_free(f); }
};
using Stream = std::unique_ptr<zfp_stream, StreamCloser>;
using Bits = std::unique_ptr<bitstream, BitsCloser>;
using Field = std::unique_ptr<zfp_field, FieldFree>;

/// Reads the mode and field metadata from cd_values[1..]. False when they do not hold a zfp
/// header.
bool read_header(std::size_t cd_nelmts, const unsigned cd_values[], std::uint64_t& mode,
                 std::uint64_t& meta) noexcept {
  if (cd_nelmts < 2 || cd_nelmts > kMaxCdValues) return false;
  unsigned copy[kMaxCdValues] = {};
  for (std::size_t k = 1; k < cd_nelmts; ++k) copy[k - 1] = cd_values[k];
  const Bits bits(stream_open(copy, sizeof(unsigned) * (cd_nelmts - 1)));
  if (!bits) return false;
  const Stream stream(zfp_stream_open(bits.get()));
  const Field field(zfp_field_alloc());
  if (!stream || !field || zfp_read_header(stream.get(), field.get(), ZFP_HEADER_FULL) == 0) {
    return false;
  }
  mode = zfp_stream_mode(stream.get());
  meta = zfp_field_metadata(field.get());
  return true;
}

/// The filter function (H5Z_func_t): compresses a chunk with the mode and field of cd_values,
/// or with H5Z_FLAG_REVERSE decompresses one; replaces `*buf` (freed) and `*buf_size`. Returns
/// the new length, 0 on failure. Never throws.
size_t zfp_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                  size_t* buf_size, void** buf) noexcept {
  std::uint64_t mode = 0;
  std::uint64_t meta = 0;
  if (!read_header(cd_nelmts, cd_values, mode, meta)) return 0;
  const Field field(zfp_field_alloc());
  const Stream stream(zfp_stream_open(nullptr));
  if (!field || !stream || zfp_field_set_metadata(field.get(), meta) == 0 ||
      zfp_stream_set_mode(stream.get(), mode) == zfp_mode_null) {
    return 0;
  }
  const std::size_t raw = zfp_field_size_bytes(field.get());
  const bool reverse = (flags & H5Z_FLAG_REVERSE) != 0;
  const std::size_t out_size = reverse ? raw : zfp_stream_maximum_size(stream.get(), field.get());
  void* out = std::malloc(out_size > 0 ? out_size : 1);
  if (out == nullptr) return 0;
  const Bits bits(stream_open(reverse ? *buf : out, reverse ? nbytes : out_size));
  if (!bits) {
    std::free(out);
    return 0;
  }
  zfp_stream_set_bit_stream(stream.get(), bits.get());
  zfp_field_set_pointer(field.get(), reverse ? out : *buf);
  const std::size_t done =
      reverse ? zfp_decompress(stream.get(), field.get()) : zfp_compress(stream.get(), field.get());
  if (done == 0 || (!reverse && nbytes < raw)) {
    std::free(out);
    return 0;
  }
  std::free(*buf);
  *buf = out;
  *buf_size = reverse ? raw : done;
  return *buf_size;
}

}  // namespace

const H5Z_class2_t kZfpFilterClass = {
    H5Z_CLASS_T_VERS,  // version
    kZfpFilterId,      // id
    1,                 // encoder_present
    1,                 // decoder_present
    "zfp (cairn, H5Z-ZFP format)",
    nullptr,     // can_apply
    nullptr,     // set_local
    zfp_filter,  // filter
};

std::vector<unsigned> zfp_cd_values(std::span<const std::int64_t> chunk, std::size_t element_bytes,
                                    double tolerance) {
  // zfp's dimensions: the chunk's extents above 1, fastest varying first.
  std::vector<std::size_t> used;
  for (auto it = chunk.rbegin(); it != chunk.rend(); ++it) {
    if (*it > 1) used.push_back(static_cast<std::size_t>(*it));
  }
  if (used.empty()) used.push_back(1);
  if (used.size() > 4) return {};
  const zfp_type type = element_bytes == 4 ? zfp_type_float : zfp_type_double;
  Field field;
  switch (used.size()) {
    case 1: field.reset(zfp_field_1d(nullptr, type, used[0])); break;
    case 2: field.reset(zfp_field_2d(nullptr, type, used[0], used[1])); break;
    case 3: field.reset(zfp_field_3d(nullptr, type, used[0], used[1], used[2])); break;
    default: field.reset(zfp_field_4d(nullptr, type, used[0], used[1], used[2], used[3])); break;
  }
  std::vector<unsigned> values(kMaxCdValues, 0);
  values[0] = (static_cast<unsigned>(ZFP_VERSION) << 16) |
              (static_cast<unsigned>(ZFP_CODEC) << 12) | kPluginVersion;
  const Bits bits(stream_open(values.data() + 1, sizeof(unsigned) * (kMaxCdValues - 1)));
  const Stream stream(zfp_stream_open(bits.get()));
  if (!field || !bits || !stream) return {};
  zfp_stream_set_accuracy(stream.get(), tolerance);
  const std::size_t header_bits = zfp_write_header(stream.get(), field.get(), ZFP_HEADER_FULL);
  zfp_stream_flush(stream.get());
  if (header_bits == 0) return {};
  const std::size_t header_bytes = (header_bits + 7) / 8;
  values.resize(1 + (header_bytes + sizeof(unsigned) - 1) / sizeof(unsigned));
  return values;
}

}  // namespace cairn::storage::h5
