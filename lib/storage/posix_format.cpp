#include "storage/posix_format.hpp"

#include <fmt/format.h>

#include "storage/checksum.hpp"

namespace cairn::storage {

std::vector<ShardRecord> write_posix_shards(const std::filesystem::path& item_dir, int rank,
                                            std::span<const PosixShardToWrite> shards, bool fsync) {
  std::vector<ShardRecord> records;
  if (shards.empty()) return records;
  const std::string name = shard_file_name(rank);
  PosixFile file(item_dir / name, PosixFile::Mode::write_new);
  std::uint64_t offset = 0;
  std::vector<std::byte> packed;
  for (const auto& item : shards) {
    const ArrayShard& shard = *item.shard;
    if (shard.memory != MemoryKind::host) {
      throw Unsupported(fmt::format("leaf '{}': saving {} memory is not supported by this build",
                                    *item.path, memory_kind_name(shard.memory)));
    }
    const auto bytes = static_cast<std::size_t>(shard.local_bytes());
    std::span<const std::byte> data{static_cast<const std::byte*>(shard.data), bytes};
    if (!shard.contiguous()) {
      // A strided view is packed into one buffer of the shard's size.
      packed.resize(bytes);
      pack_strided(dtype_size(shard.dtype), shard.data, shard.box.extent, shard.strides,
                   packed.data());
      data = packed;
    }
    ShardRecord record;
    record.rank = rank;
    record.box = shard.box;
    record.file = name;
    record.byte_offset = offset;
    record.bytes = bytes;
    record.checksum = checksum_of(data);
    file.write_at(offset, data);
    records.push_back(std::move(record));
    offset += (bytes + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  }
  if (fsync) file.sync();
  file.close();
  return records;
}

void PosixShardReader::read(const ShardRecord& shard, std::uint64_t offset, std::uint64_t bytes,
                            void* dst) {
  auto it = files_.find(shard.file);
  if (it == files_.end()) {
    it = files_.emplace(shard.file, PosixFile(dir_ / shard.file, PosixFile::Mode::read)).first;
  }
  it->second.read_at(shard.byte_offset + offset,
                     {static_cast<std::byte*>(dst), static_cast<std::size_t>(bytes)});
}

}  // namespace cairn::storage
