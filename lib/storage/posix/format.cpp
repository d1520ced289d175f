#include "storage/posix/format.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include "comm/fault.hpp"
#include "storage/checksum.hpp"

namespace cairn::storage {

PosixShardWriter::PosixShardWriter(std::filesystem::path item_dir, int rank)
    : dir_(std::move(item_dir)), rank_(rank), name_(shard_file_name(rank)) {}

ShardRecord PosixShardWriter::write(const Box& box, const void* data, std::uint64_t bytes,
                                    std::uint64_t chunk_bytes) {
  fault::point("storage.posix_write");
  if (!file_) file_.emplace(dir_ / name_, PosixFile::Mode::write_new);
  const std::span<const std::byte> span{static_cast<const std::byte*>(data),
                                        static_cast<std::size_t>(bytes)};
  ShardRecord record;
  record.rank = rank_;
  record.box = box;
  record.file = name_;
  record.byte_offset = offset_;
  record.bytes = bytes;
  record.checksums = chunk_checksums_of(span, chunk_bytes);
  file_->write_at(offset_, span);
  offset_ += (bytes + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  return record;
}

ShardRecord PosixShardWriter::write_pieces(const Box& box, std::uint64_t bytes,
                                           std::uint64_t chunk_bytes,
                                           const std::function<void(const Sink&)>& produce) {
  fault::point("storage.posix_write");
  if (!file_) file_.emplace(dir_ / name_, PosixFile::Mode::write_new);
  ChunkedChecksum checksum(chunk_bytes);
  std::uint64_t done = 0;
  produce([&](std::span<const std::byte> piece) {
    if (done + piece.size() > bytes) {
      throw InvalidArgument(fmt::format("shard for '{}': pieces exceed the shard's {} bytes",
                                        (dir_ / name_).string(), bytes));
    }
    checksum.update(piece);
    file_->write_at(offset_ + done, piece);
    done += piece.size();
  });
  if (done != bytes) {
    throw InvalidArgument(fmt::format("shard for '{}': {} of its {} bytes were delivered",
                                      (dir_ / name_).string(), done, bytes));
  }
  ShardRecord record;
  record.rank = rank_;
  record.box = box;
  record.file = name_;
  record.byte_offset = offset_;
  record.bytes = bytes;
  record.checksums = checksum.digests();
  offset_ += (bytes + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  return record;
}

void PosixShardWriter::close(bool fsync) {
  if (!file_) return;
  if (fsync) file_->sync();
  file_->close();
  file_.reset();
}

void PosixShardReader::read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                            std::uint64_t bytes, std::byte* dst) {
  if (first > shard.bytes || bytes > shard.bytes - first) {
    throw InvalidArgument(fmt::format("leaf '{}': bytes [{}, {}) are outside its shard of {} bytes",
                                      leaf.path, first, first + bytes, shard.bytes));
  }
  auto it = files_.find(shard.file);
  if (it == files_.end()) {
    it = files_.emplace(shard.file, PosixFile(dir_ / shard.file, PosixFile::Mode::read)).first;
  }
  it->second.read_at(shard.byte_offset + first, {dst, static_cast<std::size_t>(bytes)});
}

std::unique_ptr<ShardReader> open_posix_reader(const std::filesystem::path& dir) {
  return std::make_unique<PosixShardReader>(dir);
}

}  // namespace cairn::storage
