// cairn — the posix storage format (internal): each rank writes its shards into one file,
// shards/p<rank>.bin, at 4 KiB-aligned offsets; the index says where each shard is.
#pragma once

#include <cairn/tree.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "storage/index.hpp"
#include "storage/posix_file.hpp"
#include "storage/shard_reader.hpp"

namespace cairn::storage {

/// Appends this rank's shards to `item_dir`/shards/p<rank>.bin (created on the first write).
/// Not collective; one thread at a time.
class PosixShardWriter {
 public:
  PosixShardWriter(std::filesystem::path item_dir, int rank);

  /// Writes `bytes` contiguous bytes of the shard `box` at the next aligned offset and
  /// returns its record (with the XXH3-64 checksum of each `chunk_bytes`-byte chunk). Throws
  /// IoError naming the file.
  ShardRecord write(const Box& box, const void* data, std::uint64_t bytes,
                    std::uint64_t chunk_bytes);
  /// Receives consecutive pieces of a shard.
  using Sink = std::function<void(std::span<const std::byte>)>;
  /// As write(), for a shard that arrives in pieces (device memory staged through the host):
  /// `produce` hands every piece, in order, to the sink it is given; each piece is written
  /// and checksummed before the sink returns. Throws IoError naming the file, what `produce`
  /// throws, or InvalidArgument when the pieces do not add up to `bytes`.
  ShardRecord write_pieces(const Box& box, std::uint64_t bytes, std::uint64_t chunk_bytes,
                           const std::function<void(const Sink&)>& produce);
  /// fsyncs (when `fsync`) and closes the file, if one was created. Throws IoError.
  void close(bool fsync);

 private:
  std::filesystem::path dir_;
  int rank_;
  std::string name_;
  std::optional<PosixFile> file_;
  std::uint64_t offset_ = 0;
};

/// Reads shards of posix leaves, keeping each file open once. Nothing here is collective.
class PosixShardReader final : public ShardReader {
 public:
  explicit PosixShardReader(std::filesystem::path item_dir) : dir_(std::move(item_dir)) {}

  /// Nothing to prepare: each file is opened by its first read. Never throws.
  void open(std::span<const LeafRecord* const>) override {}
  /// Reads bytes [first, first + bytes) of `shard`'s stream (stored contiguously at its
  /// byte_offset) into `dst`. Throws NotFound (missing file), FormatError (file too short) or
  /// IoError, naming the file.
  void read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
            std::uint64_t bytes, std::byte* dst) override;
  /// Closes the files. Local. Never throws.
  void close() override { files_.clear(); }

 private:
  std::filesystem::path dir_;
  std::map<std::string, PosixFile> files_;
};

}  // namespace cairn::storage
