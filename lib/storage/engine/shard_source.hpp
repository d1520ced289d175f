// cairn — the read path of the storage engine (internal): byte ranges of saved shards read
// through each format's ShardReader in windows of a bounded buffer, with every checksum chunk
// read verified. Restore (restore_tree.cpp) and verify (verify_tree.cpp) use it; it does not
// know which format it reads.
#pragma once

#include <cairn/comm.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/format/shard_reader.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// One checksum chunk whose bytes do not match the index.
struct ChunkMismatch {
  std::size_t chunk = 0;  ///< its number in the shard
  /// Its bytes [begin, end) of the shard's stream, or of its stored chunks when the shard is
  /// stored compressed (ShardRecord::compressed()).
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t stored = 0;  ///< checksum in the index
  std::uint64_t computed = 0;
};

/// The chunks of `shard` lying wholly in `data`, which holds bytes [first, first + size) of
/// its stream (`first` on a chunk boundary), whose checksums differ from the index. Not
/// collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::vector<ChunkMismatch> bad_chunks(const LeafRecord& leaf,
                                                    const ShardRecord& shard, std::uint64_t first,
                                                    std::span<const std::byte> data);

/// As above, for bytes that lie in `pieces` one after the other (a scattered read). Not
/// collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::vector<ChunkMismatch> bad_chunks(const LeafRecord& leaf,
                                                    const ShardRecord& shard, std::uint64_t first,
                                                    ScatterList pieces);

/// "checksum mismatch in '<file>' for leaf '<leaf>' (shard of rank r, box b): bytes [x, y) of
/// the shard (chunk k of n, <file_range>) stored ..., computed ..." for an error or report;
/// `file_range` as ShardReader::file_range() gives it (may be empty). Not collective; never
/// throws beyond std::bad_alloc.
[[nodiscard]] std::string describe_mismatch(const std::filesystem::path& dir,
                                            const LeafRecord& leaf, const ShardRecord& shard,
                                            const ChunkMismatch& bad, std::string_view file_range);

/// The readers of one item directory and one read buffer. Opening and closing are
/// collective; reads are local; one thread at a time.
class ShardSource {
 public:
  /// `verify`: check the chunks read. `window_bytes`: the most bytes read at once (at least
  /// 4 KiB is used; a window holds at least one chunk when verifying). Not collective.
  ShardSource(const Comm& comm, std::filesystem::path dir, bool verify, std::size_t window_bytes);
  /// Closes open readers without throwing (collective when a format's file is shared: destroy
  /// sources on every rank).
  ~ShardSource();
  ShardSource(const ShardSource&) = delete;
  ShardSource& operator=(const ShardSource&) = delete;

  /// Opens the readers of the formats of `leaves` and prepares the leaves. Collective: every
  /// rank passes the same list. Throws as a format row's open_reader (format_table.hpp) and
  /// ShardReader::open().
  void open(std::span<const LeafRecord* const> leaves);
  /// Opens the reader of `format` alone, if not open yet. Collective. Throws as
  /// its format row's open_reader.
  void open_reader(StorageFormat format);
  /// Closes every reader. Collective. Throws IoError naming the file.
  void close();

  /// Receives a window: bytes [first, first + data.size()) of a shard's stream.
  using WindowFn = std::function<void(std::uint64_t first, std::span<const std::byte> data)>;
  /// Reads bytes [first, last) of `shard`'s stream (widened to whole checksum chunks when
  /// verifying) window by window through the buffer, verifies every chunk, and hands each
  /// window to `fn`. A shard stored compressed is read chunk by chunk, each checked (whatever
  /// `verify`) and decompressed, `fn` getting the part of each in [first, last). Local. Throws
  /// FormatError naming the file, the leaf and the byte range of a damaged chunk, and what the
  /// reader or `fn` throws.
  void for_each_window(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                       std::uint64_t last, const WindowFn& fn);
  /// Reads bytes [first, first + scatter_bytes(pieces)) of `shard`'s stream straight into
  /// `pieces`, one after the other, without the buffer, verifying every chunk; when verifying,
  /// the range must be whole chunks (its end may be the shard's end). Local. Throws
  /// InvalidArgument for a range that is not, and as for_each_window().
  void read_range(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                  ScatterList pieces);

  /// Reads the whole stream of `shard` window by window and returns every chunk whose
  /// checksum differs from the index (verify_tree's check); of a shard stored compressed, the
  /// stored chunks, without decompressing them. Local. Throws what the reader
  /// throws.
  [[nodiscard]] std::vector<ChunkMismatch> scan(const LeafRecord& leaf, const ShardRecord& shard);

  /// describe_mismatch() for `bad`, with the file range the format's reader gives. Local;
  /// never throws beyond std::bad_alloc.
  [[nodiscard]] std::string describe(const LeafRecord& leaf, const ShardRecord& shard,
                                     const ChunkMismatch& bad) const;
  /// The reader of `format` (opened by open()). Throws InvalidArgument when it is not open.
  [[nodiscard]] ShardReader& reader(StorageFormat format);
  [[nodiscard]] bool verify() const noexcept { return verify_; }
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }

 private:
  // Every window is prefetched (ShardReader::prefetch) before it is read, and the next one
  // while it is read, so that storage works on one window while the engine checks and copies
  // the other: hints window [at, min(at + stride, last)), if any.
  static void prefetch_window(ShardReader& from, const LeafRecord& leaf, const ShardRecord& shard,
                              std::uint64_t at, std::uint64_t last, std::uint64_t stride);
  // Throws FormatError for the first bad chunk of the window, if any.
  void check(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
             ScatterList pieces) const;
  // for_each_window() of a shard stored as compressed chunks: reads each chunk covering
  // [first, last), checks the checksum of its stored bytes (always: only verified bytes are
  // decompressed), decompresses it and hands the part in [first, last) to `fn`.
  void for_each_chunk(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                      std::uint64_t last, const WindowFn& fn);
  // scan() of a shard stored as compressed chunks: the stored bytes only.
  [[nodiscard]] std::vector<ChunkMismatch> scan_stored(const LeafRecord& leaf,
                                                       const ShardRecord& shard);
  // Bytes read per window for `leaf`'s `shard`: a multiple of its chunk when verifying, of its
  // element otherwise.
  [[nodiscard]] std::uint64_t step(const LeafRecord& leaf, const ShardRecord& shard) const;

  const Comm& comm_;
  std::filesystem::path dir_;
  bool verify_;
  std::size_t window_bytes_;
  std::map<StorageFormat, std::unique_ptr<ShardReader>> readers_;
  std::vector<std::byte> buffer_;
  std::vector<std::byte> raw_;  // one decompressed chunk
};

}  // namespace cairn::storage
