// cairn — the posix storage format (internal): each rank writes its shards into one file,
// shards/p<rank>.bin, or into its region of its group's file, shards/a<k>.bin (aggregation.hpp),
// at 4 KiB-aligned offsets; the index says where each shard is.
#pragma once

#include <cairn/tree.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/posix_file.hpp"
#include "storage/format/posix/aggregation.hpp"
#include "storage/format/shard_reader.hpp"
#include "storage/format/shard_writer.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn::storage {

/// Places this rank's shards one after the other in the file and region of `target` under
/// `item_dir` (shards/p<rank>.bin, created by the first place(); or a group's file, created by
/// its aggregator and opened by the first place()), each at a 4 KiB-aligned offset. When the
/// group ships (`ring`), a member copies its bytes into the ring instead and never opens the
/// file; the aggregator writes them, between its own writes and in flush(). Nothing here is
/// collective.
class PosixShardWriter final : public ShardWriter {
 public:
  /// `arrays` as the format row's open_writer takes them; `ring` the group's shared memory when
  /// target.shipping (the aggregator's or this member's view); `write_behind_bytes` (0: none)
  /// what PosixFile::write_behind() is given for the file. Never throws beyond
  /// std::bad_alloc.
  PosixShardWriter(std::filesystem::path item_dir, int rank, PosixTarget target,
                   std::span<const ArrayToWrite> arrays, std::unique_ptr<ShippingRing> ring,
                   std::uint64_t write_behind_bytes = 0);

  /// The next aligned offset of this rank's file. Throws as ShardWriter::place().
  ShardPlacement place(std::size_t index, std::uint64_t bytes) override;
  /// One pwrite at the shard's offset plus `first`. Throws as ShardWriter::write().
  void write(std::size_t index, std::uint64_t first, std::span<const std::byte> data) override;
  /// True for an array with compression: its chunks are appended, the next shard placed after
  /// them. Never throws.
  [[nodiscard]] bool stores_compressed_chunks(std::size_t index) const noexcept override {
    return index < compressed_.size() && compressed_[index];
  }
  /// fsyncs (when `fsync`) and closes the file, if one was created. A shipping member hands
  /// over its last bytes, without waiting; the aggregator first writes every member's bytes,
  /// waiting until each has finished. Throws IoError, TimeoutError (a member that ships
  /// nothing more and does not finish within the Comm's barrier_timeout).
  void flush(bool fsync) override;
  /// The ranks share only the directory shards/: when `fsync`, the ranks agree that all have
  /// closed their files, then the primary fsyncs the directory. Collective. Throws
  /// CollectiveMismatch on every rank when some rank does not close, IoError naming the
  /// directory on the primary.
  void close(const Comm& comm, bool fsync) override;

 private:
  struct Placed {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
  };
  // Throws IoError naming the file and this rank when `end` passes the end of its region.
  void check_region(std::uint64_t end) const;
  // Stores `data` at byte `offset` of this rank's region: written, or shipped to the
  // aggregator. Throws IoError, TimeoutError.
  void store(std::uint64_t offset, std::span<const std::byte> data);
  // The file, opened by the first use (write_existing for a group's file).
  base::PosixFile& file();
  // The aggregator writes what its members have shipped so far (all of it with `wait`).
  void serve_members(bool wait);
  // This rank ships its bytes to its group's aggregator.
  [[nodiscard]] bool ships() const noexcept;
  // This rank is an aggregator that still writes what its members ship.
  [[nodiscard]] bool serves() const noexcept;

  std::filesystem::path dir_;
  int rank_ = 0;
  PosixTarget target_;
  std::string name_;
  std::vector<std::optional<Placed>> placed_;  // by array index
  std::vector<std::uint64_t> box_bytes_;       // by array index; 0 without a shard
  std::vector<std::string> paths_;             // by array index, for messages
  std::vector<bool> compressed_;               // by array index: stored compressed
  std::optional<base::PosixFile> file_;
  std::unique_ptr<ShippingRing> ring_;  // the group ships its shards (target_.shipping)
  std::uint64_t write_behind_bytes_ = 0;
  bool serving_failed_ = false;  // the aggregator stopped writing its members' bytes
  std::uint64_t end_ = 0;        // aligned end of the shards placed so far
  std::uint64_t end_gap_ = 0;    // bytes from the end of the last compressed shard to end_
};

/// Reads shards of posix leaves, keeping each file open once. Nothing here is collective.
class PosixShardReader final : public ShardReader {
 public:
  explicit PosixShardReader(std::filesystem::path item_dir) : dir_(std::move(item_dir)) {}

  /// Nothing to prepare: each file is opened by its first read. Never throws.
  void open(std::span<const LeafRecord* const>) override {}
  /// Reads bytes [first, first + bytes) of what `shard` stores in its file (contiguously at
  /// its byte_offset: the stream, or its compressed chunks back to back) into `dst`. Throws
  /// NotFound (missing file), FormatError (file too short) or IoError, naming the file.
  void read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
            std::uint64_t bytes, std::byte* dst) override;
  /// One preadv per IOV_MAX pieces at the shard's offset plus `first`. Throws as read().
  void read_scattered(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                      ScatterList pieces) override;
  /// Checks the range and opens the file, and leaves reading ahead to the kernel (a shard is
  /// contiguous in its file). Throws as read() for a range outside the shard or a missing
  /// file.
  /// "file offsets [a, b)": a posix shard is stored contiguously at its byte_offset; a shard
  /// of an incremental save names the file and offsets of each chunk in the range.
  [[nodiscard]] std::string file_range(const LeafRecord& leaf, const ShardRecord& shard,
                                       std::uint64_t first, std::uint64_t bytes) const override;
  void prefetch(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                std::uint64_t bytes) override;
  /// Closes the files. Local. Never throws.
  void close() override { files_.clear(); }

 private:
  // The file of `shard`, opened by the first use; throws InvalidArgument when bytes
  // [first, first + bytes) are outside the shard, NotFound or IoError when it cannot be opened.
  const base::PosixFile& file_of(const LeafRecord& leaf, const ShardRecord& shard,
                                 std::uint64_t first, std::uint64_t bytes);

  // A data file of the item that a shard of `leaf` names, opened by the first use. Throws
  // FormatError naming the index when `name` is not a posix data file name, NotFound or
  // IoError.
  const base::PosixFile& open_file(const LeafRecord& leaf, const std::string& name);

  std::filesystem::path dir_;
  std::map<std::string, base::PosixFile> files_;
};

/// Whether `file` (relative to the item directory) is a name the posix format gives its data
/// files: "shards/p<rank>.bin", an aggregated "shards/a<group>.bin" or an incremental save's
/// link "shards/r<k>.bin", with at most nine decimal digits. Never throws.
[[nodiscard]] bool is_posix_data_file(std::string_view file) noexcept;

/// Opens the posix writer of the item directory `dir` for `arrays`, grouping files by
/// `aggregation` (validated) with a shared-memory ring of `ring_bytes` per group when shards
/// are shipped to an aggregator; the files start their writeback every `write_behind_bytes`
/// (0: only at the fsync). Collective over `comm` (the primary creates shards/). Throws as a
/// format row's open_writer documents.
[[nodiscard]] std::unique_ptr<ShardWriter> open_posix_writer(const Comm& comm,
                                                             const std::filesystem::path& dir,
                                                             std::span<const ArrayToWrite> arrays,
                                                             const PosixAggregation& aggregation,
                                                             std::size_t ring_bytes,
                                                             std::uint64_t write_behind_bytes = 0);
/// Opens the posix reader of the item directory `dir`; files are opened by the first read of
/// each. Not collective; never throws beyond std::bad_alloc.
[[nodiscard]] std::unique_ptr<ShardReader> open_posix_reader(const std::filesystem::path& dir);

}  // namespace cairn::storage
