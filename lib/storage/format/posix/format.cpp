#include "storage/format/posix/format.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/log.hpp"

namespace cairn::storage {

PosixShardWriter::PosixShardWriter(std::filesystem::path item_dir, int rank, PosixTarget target,
                                   std::span<const ArrayToWrite> arrays,
                                   std::unique_ptr<ShippingRing> ring,
                                   std::uint64_t write_behind_bytes)
    : dir_(std::move(item_dir)),
      rank_(rank),
      target_(std::move(target)),
      name_(target_.file),
      placed_(arrays.size()),
      ring_(std::move(ring)),
      write_behind_bytes_(write_behind_bytes) {
  for (const ArrayToWrite& a : arrays) {
    box_bytes_.push_back(a.box ? static_cast<std::uint64_t>(volume(*a.box)) * dtype_size(a.dtype)
                               : 0);
    paths_.push_back(a.path);
    compressed_.push_back(a.compression.kind != Compression::Kind::none);
  }
}

base::PosixFile& PosixShardWriter::file() {
  if (!file_) {
    file_.emplace(dir_ / name_, target_.shared ? base::PosixFile::Mode::write_existing
                                               : base::PosixFile::Mode::write_new);
    file_->write_behind(write_behind_bytes_);
  }
  return *file_;
}

bool PosixShardWriter::ships() const noexcept { return ring_ && target_.member >= 0; }

bool PosixShardWriter::serves() const noexcept {
  return ring_ && target_.member < 0 && !serving_failed_;
}

void PosixShardWriter::store(std::uint64_t offset, std::span<const std::byte> data) {
  if (ships()) {
    ring_->ship(offset, data);
    return;
  }
  if (!serves()) {
    file().write_at(offset, data);
    return;
  }
  // The aggregator writes its own bytes a ring's worth at a time and drains its members in
  // between, so that none waits on a full ring for the whole of a large shard.
  const std::size_t piece = 4 * ring_->slot_bytes();
  try {
    while (!data.empty()) {
      const std::size_t n = std::min(piece, data.size());
      file().write_at(offset, data.first(n));
      offset += n;
      data = data.subspan(n);
      serve_members(false);
    }
  } catch (...) {
    // This save fails: the members stop shipping at their next wait, and flush() no longer
    // waits for them.
    ring_->fail();
    serving_failed_ = true;
    throw;
  }
}

void PosixShardWriter::serve_members(bool wait) {
  const ShippingRing::Sink sink = [&](int rank, std::uint64_t offset,
                                      std::span<const std::byte> data) {
    try {
      base::fault::point("storage.posix_ship");
    } catch (const IoError& e) {
      throw IoError((dir_ / name_).string(),
                    fmt::format("aggregator rank {} writing the shards of rank {} into '{}': {}",
                                rank_, rank, (dir_ / name_).string(), e.what()));
    }
    file().write_at(offset, data);
  };
  try {
    if (wait) {
      ring_->drain_all(sink);
    } else {
      (void)ring_->drain(sink);
    }
  } catch (...) {
    serving_failed_ = true;  // the members have been told; no more waiting for them
    throw;
  }
}

void PosixShardWriter::check_region(std::uint64_t end) const {
  if (end > target_.limit) {
    throw IoError((dir_ / name_).string(),
                  fmt::format("rank {}: its shards pass the end of its region of {} bytes", rank_,
                              target_.limit));
  }
}

ShardPlacement PosixShardWriter::place(std::size_t index, std::uint64_t bytes) {
  if (index >= placed_.size() || placed_[index] || bytes != box_bytes_[index]) {
    throw InvalidArgument(fmt::format(
        "shard of array {} in '{}': placed twice, unknown, or {} bytes where its box holds {}",
        index, (dir_ / name_).string(), bytes, index < box_bytes_.size() ? box_bytes_[index] : 0));
  }
  try {
    base::fault::point("storage.posix_write");
  } catch (const IoError& e) {
    throw IoError((dir_ / name_).string(), fmt::format("rank {} writing its shards into '{}': {}",
                                                       rank_, (dir_ / name_).string(), e.what()));
  }
  if (!ships()) (void)file();  // a missing directory fails here, before any byte
  if (serves()) serve_members(false);
  // A compressed shard grows with its writes (write() moves end_).
  const std::uint64_t reserved = compressed_[index] ? 0 : bytes;
  check_region(end_ + reserved);
  placed_[index] = Placed{.offset = end_, .bytes = reserved};
  end_gap_ = 0;
  end_ += (reserved + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  return {.file = name_, .byte_offset = target_.base + placed_[index]->offset};
}

void PosixShardWriter::write(std::size_t index, std::uint64_t first,
                             std::span<const std::byte> data) {
  if (index < placed_.size() && placed_[index] && compressed_[index] &&
      first >= placed_[index]->bytes &&
      placed_[index]->offset + placed_[index]->bytes == end_ - end_gap_) {
    // The next compressed chunks of the shard placed last, appended; after a gap where an
    // incremental save skipped chunks that lie in an earlier save's file.
    check_region(placed_[index]->offset + first + data.size());
    store(target_.base + placed_[index]->offset + first, data);
    placed_[index]->bytes = first + data.size();
    const std::uint64_t end = placed_[index]->offset + placed_[index]->bytes;
    end_ = (end + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
    end_gap_ = end_ - end;
    return;
  }
  if (index >= placed_.size() || !placed_[index] || first > placed_[index]->bytes ||
      data.size() > placed_[index]->bytes - first) {
    throw InvalidArgument(
        fmt::format("leaf '{}' in '{}': bytes [{}, {}) written outside its "
                    "placed shard",
                    index < paths_.size() ? paths_[index] : "?", (dir_ / name_).string(), first,
                    first + data.size()));
  }
  store(target_.base + placed_[index]->offset + first, data);
}

void PosixShardWriter::flush(bool fsync) {
  if (ships()) {  // a member: its bytes go to the aggregator, which makes them durable
    ring_->finish();
    return;
  }
  if (serves()) serve_members(true);
  if (!file_) return;
  if (fsync) file_->sync();
  file_->close();
  file_.reset();
}

void PosixShardWriter::close(const Comm& comm, bool fsync) {
  if (!fsync) return;
  // Once every rank has created and closed its file (flush()), the primary makes their names
  // durable.
  comm.agree({.operation = "posix writer close", .step = -1});
  if (comm.is_primary()) base::sync_directory(dir_ / "shards");
}

namespace {

// The aggregator `rank` creates (or truncates) its group's file.
void create_group_file(int rank, const std::filesystem::path& file) {
  try {
    base::fault::point("storage.posix_aggregate");
  } catch (const IoError& e) {
    throw IoError(file.string(), fmt::format("aggregator rank {} creating '{}': {}", rank,
                                             file.string(), e.what()));
  }
  base::PosixFile(file, base::PosixFile::Mode::write_new).close();
}

}  // namespace

std::unique_ptr<ShardWriter> open_posix_writer(const Comm& comm, const std::filesystem::path& dir,
                                               std::span<const ArrayToWrite> arrays,
                                               const PosixAggregation& aggregation,
                                               std::size_t ring_bytes,
                                               std::uint64_t write_behind_bytes) {
  // The primary creates shards/; the verdict doubles as the barrier before any rank's file.
  // With aggregation each rank also sizes its region.
  std::uint64_t region = 0;
  comm.run_all(fmt::format("posix writer: creating '{}':", (dir / "shards").string()), [&] {
    if (comm.is_primary()) base::create_directories(dir / "shards");
    if (aggregation.kind != PosixAggregation::Kind::per_rank) region = posix_region_bytes(arrays);
  });
  PosixTarget target = plan_posix_target(comm, aggregation, region, dir);
  std::unique_ptr<ShippingRing> ring;
  bool no_memory = false;  // this aggregator could not get its shared memory
  if (target.shared) {
    // Each group's aggregator creates its file, and its shared memory when the group ships;
    // the verdict is the barrier before the other ranks of the group open them.
    comm.run_all(
        fmt::format("posix writer: creating the aggregated shard files of '{}':", dir.string()),
        [&] {
          if (!target.creates) return;
          create_group_file(comm.rank(), dir / target.file);
          if (!target.shipping) return;
          try {
            ring = ShippingRing::create(*target.shipping, ring_bytes);
          } catch (const IoError& e) {
            // A full (or missing) /dev/shm: the group's file is laid out the same whoever
            // writes it, so every rank writes its own region instead.
            no_memory = true;
            base::log::warn("storage.shipping_fallback",
                            "dir=\"{}\" rank={} error=\"{}\" writers=every_rank", dir.string(),
                            comm.rank(), e.what());
          }
        });
  }
  if (target.shared && aggregation.writers == PosixAggregation::Writers::aggregator &&
      comm.any(no_memory)) {
    // One way for the whole save: every group falls back when one has no shared memory.
    if (ring) ring->unlink();
    ring.reset();
    target.shipping.reset();
    target.member = -1;
  } else if (target.shared && aggregation.writers == PosixAggregation::Writers::aggregator) {
    // Every member maps its group's memory; then its name goes, so that nothing is left in
    // /dev/shm however the save ends.
    comm.run_all(fmt::format("posix writer: mapping the shared memory of the aggregators of '{}':",
                             dir.string()),
                 [&] {
                   if (target.shipping && target.member >= 0) {
                     ring = ShippingRing::attach(*target.shipping, target.member);
                   }
                 });
    if (ring && target.member < 0) ring->unlink();
  }
  return std::make_unique<PosixShardWriter>(dir, comm.rank(), std::move(target), arrays,
                                            std::move(ring), write_behind_bytes);
}

const base::PosixFile& PosixShardReader::file_of(const LeafRecord& leaf, const ShardRecord& shard,
                                                 std::uint64_t first, std::uint64_t bytes) {
  const std::uint64_t stored = shard.stored_bytes();
  if (first > stored || bytes > stored - first) {
    throw InvalidArgument(fmt::format("leaf '{}': bytes [{}, {}) are outside its shard of {} bytes",
                                      leaf.path, first, first + bytes, stored));
  }
  return open_file(leaf, shard.file);
}

namespace {

// A part of one chunk of a shard whose chunks lie in several files (ShardRecord::chunk_refs).
struct ChunkPiece {
  const std::string* file = nullptr;  // nullptr: the shard's own file
  std::uint64_t file_offset = 0;
  std::uint64_t first = 0;  // in the shard's stored bytes
  std::uint64_t bytes = 0;
};

// Calls `each` with the part of every chunk of `shard` that holds bytes [first, first + bytes)
// of its stored bytes, in order.
template <class Each>
void for_each_chunk_piece(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                          std::uint64_t bytes, Each&& each) {
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const std::uint64_t end = first + bytes;
  // Raw chunks have one size: start at the first chunk of the range.
  std::size_t c = shard.compressed() ? 0 : static_cast<std::size_t>(first / chunk);
  std::uint64_t begin = shard.compressed() ? 0 : c * chunk;
  for (; c < shard.chunk_refs.size() && begin < end; ++c) {
    const std::uint64_t size = shard.chunk_stored_size(c, chunk);
    const std::uint64_t lo = std::max(begin, first);
    const std::uint64_t hi = std::min(begin + size, end);
    if (lo < hi) {
      const ChunkRef& ref = shard.chunk_refs[c];
      each(ref.referenced()
               ? ChunkPiece{.file = &shard.ref_files.at(ref.file),
                            .file_offset = ref.byte_offset + (lo - begin),
                            .first = lo,
                            .bytes = hi - lo}
               : ChunkPiece{.file_offset = shard.byte_offset + lo, .first = lo, .bytes = hi - lo});
    }
    begin += size;
  }
}

}  // namespace

const base::PosixFile& PosixShardReader::open_file(const LeafRecord& leaf,
                                                   const std::string& name) {
  auto it = files_.find(name);
  if (it == files_.end()) {
    if (!is_posix_data_file(name)) {
      const std::filesystem::path index = dir_ / kTreeIndexBinaryFile;
      throw FormatError(index.string(), leaf.path,
                        fmt::format("'{}' (leaf '{}'): a shard names '{}', which is not a data "
                                    "file of format posix; the index is damaged",
                                    index.string(), leaf.path, name));
    }
    it = files_.emplace(name, base::PosixFile(dir_ / name, base::PosixFile::Mode::read)).first;
  }
  return it->second;
}

void PosixShardReader::read(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                            std::uint64_t bytes, std::byte* dst) {
  const base::PosixFile& own = file_of(leaf, shard, first, bytes);
  if (!shard.has_refs()) {
    own.read_at(shard.byte_offset + first, {dst, static_cast<std::size_t>(bytes)});
    return;
  }
  // An incremental save's shard: chunk by chunk, each from where it lies.
  for_each_chunk_piece(leaf, shard, first, bytes, [&](const ChunkPiece& piece) {
    const base::PosixFile& from = piece.file == nullptr ? own : open_file(leaf, *piece.file);
    from.read_at(piece.file_offset,
                 {dst + (piece.first - first), static_cast<std::size_t>(piece.bytes)});
  });
}

void PosixShardReader::read_scattered(const LeafRecord& leaf, const ShardRecord& shard,
                                      std::uint64_t first, ScatterList pieces) {
  if (shard.has_refs()) {
    ShardReader::read_scattered(leaf, shard, first, pieces);
    return;
  }
  file_of(leaf, shard, first, scatter_bytes(pieces)).read_at(shard.byte_offset + first, pieces);
}

void PosixShardReader::prefetch(const LeafRecord& leaf, const ShardRecord& shard,
                                std::uint64_t first, std::uint64_t bytes) {
  // A shard is one contiguous range of its file, read in order: the kernel's readahead
  // already reads ahead of the preads, and WILLNEED advice on top of it made such reads
  // slower where measured (Linux 6.18, ext4). Only the file is opened.
  (void)file_of(leaf, shard, first, bytes);
}

std::string PosixShardReader::file_range(const LeafRecord& leaf, const ShardRecord& shard,
                                         std::uint64_t first, std::uint64_t bytes) const {
  if (shard.has_refs()) {  // an incremental save: the file and offsets of each chunk's part
    std::string where;
    for_each_chunk_piece(leaf, shard, first, bytes, [&](const ChunkPiece& piece) {
      where += fmt::format("{}'{}' offsets [{}, {})", where.empty() ? "" : ", ",
                           piece.file == nullptr ? shard.file : *piece.file, piece.file_offset,
                           piece.file_offset + piece.bytes);
    });
    return where;
  }
  return fmt::format("file offsets [{}, {})", shard.byte_offset + first,
                     shard.byte_offset + first + bytes);
}

bool is_posix_data_file(std::string_view file) noexcept {
  constexpr std::string_view suffix = ".bin";
  constexpr std::size_t prefix = std::string_view("shards/p").size();
  if (file.size() <= prefix + suffix.size() || !file.ends_with(suffix)) return false;
  if (!(file.starts_with("shards/p") || file.starts_with("shards/a") ||
        file.starts_with("shards/r"))) {
    return false;
  }
  const auto digits = file.substr(prefix, file.size() - prefix - suffix.size());
  return digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

std::unique_ptr<ShardReader> open_posix_reader(const std::filesystem::path& dir) {
  return std::make_unique<PosixShardReader>(dir);
}

}  // namespace cairn::storage
