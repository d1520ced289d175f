// TreeWriter, the write pipeline: this rank's shards staged (device, strided, cast), cut into
// checksum chunks and handed to their format through a ShardSink.
#include "storage/engine/tree_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "cuda/staged_copy.hpp"
#include "storage/engine/shard_sink.hpp"
#include "storage/stream/shard_stream.hpp"

namespace cairn::storage {

void TreeWriter::cast_piece(const ArrayJob& job, std::span<const std::byte> piece,
                            std::vector<std::byte>& buffer, const RunSink& store) const {
  const DType from = job.leaf->as_array().dtype;
  const std::size_t from_size = dtype_size(from);
  const std::size_t to_size = dtype_size(job.dtype);
  const std::size_t block = std::max<std::size_t>(run_bytes_ / std::max(from_size, to_size), 1);
  const std::size_t count = piece.size() / from_size;
  buffer.resize(std::min(block, count) * to_size);
  const std::string what =
      fmt::format("leaf '{}' (saved as {})", job.leaf->path(), dtype_name(job.dtype));
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t n = std::min(block, count - first);
    convert(from, piece.data() + first * from_size, job.dtype, buffer.data(), n, what);
    store(std::span<const std::byte>(buffer).first(n * to_size));
  }
}

void TreeWriter::copy_to_host(std::size_t index, const void* device, void* dst) {
  const ArrayJob& job = arrays_.at(index);
  const std::string what = fmt::format("leaf '{}'", job.leaf->path());
  std::lock_guard lock(copier_mutex_);
  copier(what).to_host(device, static_cast<std::size_t>(job.bytes), dst, what);
}

cuda::StagedCopier& TreeWriter::copier(std::string_view what) {
  cuda::use_device(device_, what);  // this may be the background thread
  if (!copier_) {
    copier_ = std::make_unique<cuda::StagedCopier>(run_bytes_, what);
  }
  return *copier_;
}

void TreeWriter::stream_runs(std::size_t index, const void* data, const RunSink& sink) {
  const ArrayJob& job = arrays_.at(index);
  const ArrayShard& shard = job.leaf->as_array();
  const std::size_t elem_size = dtype_size(shard.dtype);
  const std::vector<Box> runs =
      split_into_runs(shard.box, static_cast<std::int64_t>(run_bytes_ / elem_size));
  if (data != nullptr) {  // device memory, through the pinned buffers
    std::vector<std::size_t> lengths;
    lengths.reserve(runs.size());
    for (const Box& run : runs) {
      lengths.push_back(static_cast<std::size_t>(volume(run)) * elem_size);
    }
    const std::string what = fmt::format("leaf '{}'", job.leaf->path());
    std::lock_guard lock(copier_mutex_);
    copier(what).to_host(data, lengths, sink, what);
    return;
  }
  std::vector<std::byte> packed(std::min<std::size_t>(run_bytes_, job.bytes));
  for (const Box& run : runs) {
    copy_region(elem_size, shard.data, shard.box, shard.strides, packed.data(), run, run);
    sink(std::span(packed).first(static_cast<std::size_t>(volume(run)) * elem_size));
  }
}

void TreeWriter::write_stream(std::size_t index,
                              const std::function<void(const RunSink&)>& produce) {
  const ArrayJob& job = arrays_.at(index);
  if (!job.writes || failed()) return;
  try {
    ShardWriter& writer = *std::find_if(writers_.begin(), writers_.end(), [&](const auto& w) {
                             return w.first == job.format;
                           })->second;
    const ShardPlacement placement = writer.place(job.format_index, job.stored_bytes);
    // An incremental save checksums each whole chunk before it is written, and writes only
    // those that differ from the base's.
    const BaseShard* base = base_ ? base_->shard_of(index) : nullptr;
    std::optional<ChunkMatcher> matcher;
    if (base != nullptr) matcher.emplace(*base);
    const std::unique_ptr<ShardSink> sink =
        make_shard_sink(writer, job, matcher ? &*matcher : nullptr);
    std::uint64_t delivered = 0;
    std::vector<std::byte> cast_buffer;  // used only by a leaf with a save-time cast
    const RunSink store = [&](std::span<const std::byte> stored) {
      if (options_.write_bytes_per_second == 0) {
        sink->update(stored);
        return;
      }
      // A paced save (a drain) hands its bytes over in pieces, each once its time has come.
      constexpr std::size_t kPacedPiece = std::size_t{4} << 20;
      for (std::size_t at = 0; at < stored.size(); at += kPacedPiece) {
        const auto part = stored.subspan(at, std::min(kPacedPiece, stored.size() - at));
        pace(part.size());
        sink->update(part);
      }
    };
    produce([&](std::span<const std::byte> piece) {
      if (delivered + piece.size() > job.bytes) {
        throw InvalidArgument(fmt::format("leaf '{}': pieces exceed this rank's shard of {} bytes",
                                          job.leaf->path(), job.bytes));
      }
      delivered += piece.size();
      if (job.cast) {
        cast_piece(job, piece, cast_buffer, store);
      } else {
        store(piece);
      }
    });
    if (delivered != job.bytes) {
      throw InvalidArgument(fmt::format("leaf '{}': {} of this rank's {} bytes were delivered",
                                        job.leaf->path(), delivered, job.bytes));
    }
    sink->finish();
    ShardRecord record{.rank = rank_,
                       .box = job.leaf->as_array().box,
                       .file = placement.file,
                       .byte_offset = placement.byte_offset,
                       .bytes = job.stored_bytes,
                       .checksums = sink->checksums(),
                       .chunk_sizes = sink->chunk_sizes(),
                       .stats = sink->stats()};
    if (matcher) matcher->fill(record, record.checksums.size());
    std::lock_guard lock(mutex_);
    records_.emplace_back(index, std::move(record));
    bytes_written_ += sink->written_bytes();
  } catch (const std::exception& e) {
    fail(e);
  }
}

void TreeWriter::pace(std::size_t bytes) {
  std::chrono::steady_clock::time_point due;
  {
    std::lock_guard lock(mutex_);
    if (paced_bytes_ == 0) paced_since_ = std::chrono::steady_clock::now();
    // The bytes handed over before these set their time: the first piece goes at once.
    due = paced_since_ +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(static_cast<double>(paced_bytes_) /
                                            static_cast<double>(options_.write_bytes_per_second)));
    paced_bytes_ += bytes;
  }
  std::this_thread::sleep_until(due);
}

void TreeWriter::write_leaf(std::size_t index) {
  const ArrayJob& job = arrays_.at(index);
  const ArrayShard& shard = job.leaf->as_array();
  if (job.writes && job.bytes > 0 && job.memory == MemoryKind::host && !shard.contiguous()) {
    write_stream(index, [&](const RunSink& sink) { stream_runs(index, nullptr, sink); });
  } else {
    write(index, job.writes ? shard.data : nullptr, job.memory);
  }
}

void TreeWriter::write(std::size_t index, const void* data, MemoryKind memory) {
  const ArrayJob& job = arrays_.at(index);
  if (memory == MemoryKind::cuda_device && data != nullptr && job.writes && job.bytes > 0) {
    write_stream(index, [&](const RunSink& sink) { stream_runs(index, data, sink); });
    return;
  }
  write_stream(index, [&](const RunSink& sink) {
    sink({static_cast<const std::byte*>(data), static_cast<std::size_t>(job.bytes)});
  });
}

}  // namespace cairn::storage
