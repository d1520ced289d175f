// cairn — the posix storage format (internal): each rank writes its shards into one file,
// shards/p<rank>.bin, at 4 KiB-aligned offsets; the index says where each shard is.
#pragma once

#include <cairn/tree.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/index.hpp"
#include "storage/posix_file.hpp"

namespace cairn::storage {

/// One shard this rank writes.
struct PosixShardToWrite {
  const std::string* path = nullptr;
  const ArrayShard* shard = nullptr;
};

/// Writes `shards` (in order) into `item_dir`/shards/p<rank>.bin and fsyncs it when `fsync`.
/// Returns one record per shard. Not collective. Throws IoError naming the file,
/// Unsupported for device memory.
std::vector<ShardRecord> write_posix_shards(const std::filesystem::path& item_dir, int rank,
                                            std::span<const PosixShardToWrite> shards, bool fsync);

/// Reads shards of posix leaves, keeping each file open once. Not collective.
class PosixShardReader {
 public:
  explicit PosixShardReader(std::filesystem::path item_dir) : dir_(std::move(item_dir)) {}

  /// Reads `bytes` bytes starting `offset` bytes into `shard` into `dst`. Throws NotFound
  /// (missing file), FormatError (file too short) or IoError, naming the file.
  void read(const ShardRecord& shard, std::uint64_t offset, std::uint64_t bytes, void* dst);

 private:
  std::filesystem::path dir_;
  std::map<std::string, PosixFile> files_;
};

}  // namespace cairn::storage
