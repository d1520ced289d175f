#include "storage/stream/compress.hpp"

#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "storage/stream/checksum.hpp"

#if CAIRN_HAVE_ZSTD
#include <zstd.h>
#endif
#if CAIRN_HAVE_ZFP
#include <zfp.h>
#endif

namespace cairn::storage {

namespace {

#if CAIRN_HAVE_ZFP
// The zfp tolerance of a chunk: the absolute bound, or the relative bound times the largest
// finite magnitude among its `count` elements at `data`.
template <typename T>
double zfp_tolerance(const Compression& c, const void* data, std::size_t count) {
  if (c.absolute_error > 0) return c.absolute_error;
  double largest = 0;
  const auto* values = static_cast<const T*>(data);
  for (std::size_t i = 0; i < count; ++i) {
    const double v = std::fabs(static_cast<double>(values[i]));
    if (std::isfinite(v)) largest = std::max(largest, v);
  }
  return c.relative_error * largest;
}

// The zfp stream and bit stream of one chunk, closed on every path.
struct ZfpStreams {
  zfp_field* field = nullptr;
  zfp_stream* zfp = nullptr;
  bitstream* bits = nullptr;
  ZfpStreams() = default;
  ZfpStreams(const ZfpStreams&) = delete;
  ZfpStreams& operator=(const ZfpStreams&) = delete;
  ~ZfpStreams() {
    if (bits != nullptr) stream_close(bits);
    if (zfp != nullptr) zfp_stream_close(zfp);
    if (field != nullptr) zfp_field_free(field);
  }
};

zfp_type zfp_type_of(DType dtype) {
  return dtype == DType::float32 ? zfp_type_float : zfp_type_double;
}

void zfp_compress_chunk(const Compression& c, DType dtype, std::span<const std::byte> raw,
                        std::vector<std::byte>& out, std::string_view what) {
  const std::size_t count = raw.size() / dtype_size(dtype);
  const double tolerance = dtype == DType::float32 ? zfp_tolerance<float>(c, raw.data(), count)
                                                   : zfp_tolerance<double>(c, raw.data(), count);
  ZfpStreams s;
  // zfp only reads the field's data while compressing.
  s.field = zfp_field_1d(const_cast<std::byte*>(raw.data()), zfp_type_of(dtype), count);
  s.zfp = zfp_stream_open(nullptr);
  if (s.field == nullptr || s.zfp == nullptr) throw std::bad_alloc();
  // A tolerance of 0 (a chunk of zeros) asks zfp for its finest accuracy.
  zfp_stream_set_accuracy(s.zfp, tolerance > 0 ? tolerance : 0);
  out.resize(zfp_stream_maximum_size(s.zfp, s.field));
  s.bits = stream_open(out.data(), out.size());
  if (s.bits == nullptr) throw std::bad_alloc();
  zfp_stream_set_bit_stream(s.zfp, s.bits);
  zfp_stream_rewind(s.zfp);
  if (zfp_write_header(s.zfp, s.field, ZFP_HEADER_FULL) == 0) {
    throw IoError("", fmt::format("{}: zfp could not write a chunk header", what));
  }
  const std::size_t size = zfp_compress(s.zfp, s.field);
  if (size == 0) throw IoError("", fmt::format("{}: zfp could not compress a chunk", what));
  out.resize(size);
}

// The bound depends on the field and the precision, not on the tolerance.
std::uint64_t zfp_bound(DType dtype, std::uint64_t raw) {
  ZfpStreams s;
  s.field =
      zfp_field_1d(nullptr, zfp_type_of(dtype), static_cast<std::size_t>(raw) / dtype_size(dtype));
  s.zfp = zfp_stream_open(nullptr);
  if (s.field == nullptr || s.zfp == nullptr) throw std::bad_alloc();
  zfp_stream_set_accuracy(s.zfp, 1);
  return zfp_stream_maximum_size(s.zfp, s.field);
}

void zfp_decompress_chunk(const Compression& /*c*/, DType dtype, std::span<const std::byte> stored,
                          std::span<std::byte> raw, const std::string& file,
                          const std::string& what) {
  const std::size_t count = raw.size() / dtype_size(dtype);
  const auto damaged = [&](std::string_view why) {
    return FormatError(
        file, what,
        fmt::format("'{}': leaf '{}': a zfp chunk {}; the file is damaged", file, what, why));
  };
  ZfpStreams s;
  s.field = zfp_field_alloc();
  s.zfp = zfp_stream_open(nullptr);
  // zfp reads the stored bytes only; the bit stream needs a word-aligned buffer of whole
  // words, so the bytes are copied into one.
  std::vector<std::uint64_t> words((stored.size() + 7) / 8 + 1, 0);
  std::copy(stored.begin(), stored.end(), reinterpret_cast<std::byte*>(words.data()));
  s.bits = stream_open(words.data(), words.size() * sizeof(std::uint64_t));
  if (s.field == nullptr || s.zfp == nullptr || s.bits == nullptr) throw std::bad_alloc();
  zfp_stream_set_bit_stream(s.zfp, s.bits);
  zfp_stream_rewind(s.zfp);
  if (zfp_read_header(s.zfp, s.field, ZFP_HEADER_FULL) == 0) throw damaged("has no valid header");
  if (s.field->type != zfp_type_of(dtype) || zfp_field_dimensionality(s.field) != 1 ||
      zfp_field_size(s.field, nullptr) != count) {
    throw damaged(fmt::format("does not hold {} elements of {}", count, dtype_name(dtype)));
  }
  zfp_field_set_pointer(s.field, raw.data());
  if (zfp_decompress(s.zfp, s.field) == 0) throw damaged("does not decompress");
}
#endif

// The shuffle of `raw` (whole elements of `width` bytes) into `out`: byte k of element i at
// k * count + i, as HDF5's shuffle filter lays out a chunk.
void shuffle_bytes(std::span<const std::byte> raw, std::size_t width, std::byte* out) {
  const std::size_t count = raw.size() / width;
  const std::byte* in = raw.data();
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t k = 0; k < width; ++k) out[k * count + i] = in[i * width + k];
  }
}

// The inverse of shuffle_bytes: `shuffled` back into element order in `raw`.
void unshuffle_bytes(const std::byte* shuffled, std::size_t width, std::span<std::byte> raw) {
  const std::size_t count = raw.size() / width;
  std::byte* out = raw.data();
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t k = 0; k < width; ++k) out[i * width + k] = shuffled[k * count + i];
  }
}

// A buffer of this thread for the shuffled bytes of one chunk (chunks are compressed on the
// saving thread and the writer threads alike).
std::vector<std::byte>& shuffle_buffer(std::size_t bytes) {
  thread_local std::vector<std::byte> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer;
}

// Whether chunks of `dtype` compressed with `c` are shuffled: zstd with shuffle on, on
// elements wider than a byte.
bool shuffled(const Compression& c, DType dtype) {
  return c.kind == Compression::Kind::zstd && c.shuffle && dtype_size(dtype) > 1;
}

#if CAIRN_HAVE_ZSTD
void zstd_compress_chunk(const Compression& c, DType dtype, std::span<const std::byte> raw,
                         std::vector<std::byte>& out, std::string_view what) {
  if (shuffled(c, dtype)) {
    std::vector<std::byte>& buffer = shuffle_buffer(raw.size());
    shuffle_bytes(raw, dtype_size(dtype), buffer.data());
    raw = std::span<const std::byte>(buffer.data(), raw.size());
  }
  out.resize(ZSTD_compressBound(raw.size()));
  const std::size_t size = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(),
                                         c.level == 0 ? Compression::kDefaultZstdLevel : c.level);
  if (ZSTD_isError(size) != 0) {
    throw IoError("", fmt::format("{}: zstd: {}", what, ZSTD_getErrorName(size)));
  }
  out.resize(size);
}

std::uint64_t zstd_bound(DType /*dtype*/, std::uint64_t raw) {
  return ZSTD_compressBound(static_cast<std::size_t>(raw));
}

void zstd_decompress_chunk(const Compression& c, DType dtype, std::span<const std::byte> stored,
                           std::span<std::byte> raw, const std::string& file,
                           const std::string& what) {
  const bool shuffle = shuffled(c, dtype);
  std::byte* target = shuffle ? shuffle_buffer(raw.size()).data() : raw.data();
  const std::size_t size = ZSTD_decompress(target, raw.size(), stored.data(), stored.size());
  if (ZSTD_isError(size) != 0 || size != raw.size()) {
    throw FormatError(file, what,
                      fmt::format("'{}': leaf '{}': a zstd chunk does not decompress to {} bytes "
                                  "({}); the file is damaged",
                                  file, what, raw.size(),
                                  ZSTD_isError(size) != 0 ? ZSTD_getErrorName(size) : "short"));
  }
  if (shuffle) unshuffle_bytes(target, dtype_size(dtype), raw);
}
#endif

// How one compressor of this build compresses and decompresses a chunk.
struct Codec {
  /// The most bytes a chunk of `raw` bytes of `dtype` can take once compressed.
  std::uint64_t (*bound)(DType dtype, std::uint64_t raw);
  void (*compress)(const Compression&, DType, std::span<const std::byte>, std::vector<std::byte>&,
                   std::string_view);
  void (*decompress)(const Compression&, DType, std::span<const std::byte>, std::span<std::byte>,
                     const std::string&, const std::string&);
};

// The codec of `kind`, or nullptr when this build lacks it (or for none).
const Codec* codec_of(Compression::Kind kind) noexcept {
#if CAIRN_HAVE_ZSTD
  static constexpr Codec zstd{zstd_bound, zstd_compress_chunk, zstd_decompress_chunk};
  if (kind == Compression::Kind::zstd) return &zstd;
#endif
#if CAIRN_HAVE_ZFP
  static constexpr Codec zfp{zfp_bound, zfp_compress_chunk, zfp_decompress_chunk};
  if (kind == Compression::Kind::zfp) return &zfp;
#endif
  (void)kind;
  return nullptr;
}

}  // namespace

std::string_view compression_kind_name(Compression::Kind kind) noexcept {
  switch (kind) {
    case Compression::Kind::none: return "none";
    case Compression::Kind::zstd: return "zstd";
    case Compression::Kind::zfp: return "zfp";
  }
  return "unknown";
}

std::string describe_compression(const Compression& c) {
  switch (c.kind) {
    case Compression::Kind::none: return "none";
    case Compression::Kind::zstd:
      return fmt::format("{}zstd level {}", c.shuffle ? "shuffle + " : "",
                         c.level == 0 ? 3 : c.level);
    case Compression::Kind::zfp:
      return c.absolute_error > 0 ? fmt::format("zfp absolute error {}", c.absolute_error)
                                  : fmt::format("zfp relative error {}", c.relative_error);
  }
  return "unknown";
}

void compress_chunk(const Compression& c, DType dtype, std::span<const std::byte> raw,
                    std::vector<std::byte>& out, std::string_view what) {
  if (c.kind == Compression::Kind::none) {
    out.assign(raw.begin(), raw.end());
    return;
  }
  const Codec* codec = codec_of(c.kind);
  if (codec == nullptr) {
    throw Unsupported(fmt::format("{}: this build of cairn cannot compress with {}", what,
                                  compression_kind_name(c.kind)));
  }
  codec->compress(c, dtype, raw, out, what);
}

std::uint64_t max_stored_bytes(const Compression& compression, DType dtype, std::uint64_t raw_bytes,
                               std::uint64_t chunk_bytes) {
  if (compression.kind == Compression::Kind::none || raw_bytes == 0) return raw_bytes;
  const Codec* codec = codec_of(compression.kind);
  if (codec == nullptr) {
    throw Unsupported(fmt::format("this build of cairn cannot compress with {}",
                                  compression_kind_name(compression.kind)));
  }
  const std::uint64_t chunk = std::max<std::uint64_t>(chunk_bytes, 1);
  const std::uint64_t whole = raw_bytes / chunk;
  const std::uint64_t rest = raw_bytes % chunk;
  std::uint64_t bound = whole > 0 ? whole * codec->bound(dtype, chunk) : 0;
  if (rest > 0) bound += codec->bound(dtype, rest);
  return bound;
}

void decompress_chunk(const Compression& c, DType dtype, std::span<const std::byte> stored,
                      std::span<std::byte> raw, const std::string& file, const std::string& what) {
  const Codec* codec = codec_of(c.kind);
  if (codec == nullptr) {
    throw Unsupported(fmt::format("leaf '{}' in '{}': this build of cairn cannot decompress {}",
                                  what, file, compression_kind_name(c.kind)));
  }
  codec->decompress(c, dtype, stored, raw, file, what);
}

ChunkCompressor::ChunkCompressor(Compression compression, DType dtype, std::uint64_t chunk_bytes,
                                 std::string what, Write write, Skip skip)
    : compression_(compression),
      dtype_(dtype),
      what_(std::move(what)),
      write_(std::move(write)),
      skip_(std::move(skip)),
      cutter_(chunk_bytes, [this](std::size_t chunk, std::uint64_t /*first*/,
                                  std::span<const std::byte> raw) { emit(chunk, raw); }) {}

void ChunkCompressor::emit(std::size_t chunk, std::span<const std::byte> raw) {
  compress_chunk(compression_, dtype_, raw, out_, what_);
  const std::uint64_t sum = checksum_of(out_);
  if (!skip_ || !skip_(chunk, sum, out_.size())) write_(out_);
  sizes_.push_back(out_.size());
  sums_.push_back(sum);
  stored_ += out_.size();
}

void ChunkCompressor::update(std::span<const std::byte> raw) { cutter_.update(raw); }

void ChunkCompressor::finish() { cutter_.finish(); }

}  // namespace cairn::storage
