#include "storage/engine/shard_source.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "base/first_error.hpp"
#include "base/log.hpp"
#include "storage/format/format_table.hpp"
#include "storage/stream/checksum.hpp"
#include "storage/stream/compress.hpp"

namespace cairn::storage {

std::vector<ChunkMismatch> bad_chunks(const LeafRecord& leaf, const ShardRecord& shard,
                                      std::uint64_t first, std::span<const std::byte> data) {
  std::vector<ChunkMismatch> out;
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  for (std::uint64_t at = first; at < first + data.size(); at += chunk) {
    const std::uint64_t end = std::min(at + chunk, shard.bytes);
    const auto k = static_cast<std::size_t>(at / chunk);
    if (end > first + data.size() || k >= shard.checksums.size()) break;  // not wholly here
    const std::uint64_t sum = checksum_of(
        data.subspan(static_cast<std::size_t>(at - first), static_cast<std::size_t>(end - at)));
    if (sum != shard.checksums[k]) {
      out.push_back(
          {.chunk = k, .begin = at, .end = end, .stored = shard.checksums[k], .computed = sum});
    }
  }
  return out;
}

std::vector<ChunkMismatch> bad_chunks(const LeafRecord& leaf, const ShardRecord& shard,
                                      std::uint64_t first, ScatterList pieces) {
  if (pieces.size() == 1) return bad_chunks(leaf, shard, first, pieces.front());
  std::vector<ChunkMismatch> out;
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const std::uint64_t last = first + scatter_bytes(pieces);
  Checksum sum;
  for (std::uint64_t at = first; at < last; at += chunk) {
    const std::uint64_t end = std::min(at + chunk, shard.bytes);
    const auto k = static_cast<std::size_t>(at / chunk);
    if (end > last || k >= shard.checksums.size()) break;  // not wholly here
    sum.reset();
    for (const auto& part : scatter_slice(pieces, at - first, end - at)) sum.update(part);
    const std::uint64_t computed = sum.digest();
    if (computed != shard.checksums[k]) {
      out.push_back({.chunk = k,
                     .begin = at,
                     .end = end,
                     .stored = shard.checksums[k],
                     .computed = computed});
    }
  }
  return out;
}

std::string describe_mismatch(const std::filesystem::path& dir, const LeafRecord& leaf,
                              const ShardRecord& shard, const ChunkMismatch& bad,
                              std::string_view file_range) {
  const std::string where = file_range.empty() ? std::string() : fmt::format(", {}", file_range);
  // A chunk of an incremental save may lie in a linked file of an earlier save: name that one.
  const bool referenced =
      bad.chunk < shard.chunk_refs.size() && shard.chunk_refs[bad.chunk].referenced();
  const std::string& file =
      referenced ? shard.ref_files.at(shard.chunk_refs[bad.chunk].file) : shard.file;
  return fmt::format(
      "checksum mismatch in '{}' for leaf '{}' (shard of rank {}, box {}): {}bytes [{}, {}) of the "
      "shard (chunk {} of {}{}): stored {}, computed {}",
      (dir / file).string(), leaf.path, shard.rank, to_string(shard.box),
      shard.compressed() ? "compressed " : "", bad.begin, bad.end, bad.chunk,
      shard.checksums.size(), where, checksum_to_hex(bad.stored), checksum_to_hex(bad.computed));
}

ShardSource::ShardSource(const Comm& comm, std::filesystem::path dir, bool verify,
                         std::size_t window_bytes)
    : comm_(comm),
      dir_(std::move(dir)),
      verify_(verify),
      window_bytes_(std::max<std::size_t>(window_bytes, 4096)) {}

ShardSource::~ShardSource() {
  if (readers_.empty()) return;
  try {
    close();
  } catch (const std::exception& e) {
    base::log::warn("storage.close", "dir=\"{}\" error=\"{}\"", dir_.string(), e.what());
  }
}

void ShardSource::open(std::span<const LeafRecord* const> leaves) {
  std::map<StorageFormat, std::vector<const LeafRecord*>> by_format;
  for (const LeafRecord* leaf : leaves) {
    if (leaf->kind == LeafKind::array) by_format[leaf->format].push_back(leaf);
  }
  for (const auto& [format, list] : by_format) {
    open_reader(format);
    readers_.at(format)->open(list);
  }
}

void ShardSource::open_reader(StorageFormat format) {
  auto& reader = readers_[format];
  if (reader) return;
  try {
    reader = format_row(format).open_reader(comm_, dir_);
  } catch (...) {
    readers_.erase(format);
    throw;
  }
}

void ShardSource::close() {
  // Every reader is closed (a collective step) even after one failed.
  base::FirstError failure;
  for (auto& [format, reader] : readers_) {
    try {
      reader->close();
    } catch (const std::exception& e) {
      failure.record(e);
    }
  }
  readers_.clear();
  buffer_ = {};
  failure.throw_if_failed();
}

std::string ShardSource::describe(const LeafRecord& leaf, const ShardRecord& shard,
                                  const ChunkMismatch& bad) const {
  const auto it = readers_.find(leaf.format);
  const std::string range =
      it == readers_.end() ? std::string()
                           : it->second->file_range(leaf, shard, bad.begin, bad.end - bad.begin);
  return describe_mismatch(dir_, leaf, shard, bad, range);
}

ShardReader& ShardSource::reader(StorageFormat format) {
  const auto it = readers_.find(format);
  if (it == readers_.end()) {
    throw InvalidArgument(
        fmt::format("no {} reader is open for '{}'", storage_format_name(format), dir_.string()));
  }
  return *it->second;
}

std::uint64_t ShardSource::step(const LeafRecord& leaf, const ShardRecord& shard) const {
  const std::uint64_t unit = verify_ ? leaf.chunk_bytes_of(shard) : dtype_size(leaf.dtype);
  return std::max<std::uint64_t>(window_bytes_ / unit, 1) * unit;
}

void ShardSource::prefetch_window(ShardReader& from, const LeafRecord& leaf,
                                  const ShardRecord& shard, std::uint64_t at, std::uint64_t last,
                                  std::uint64_t stride) {
  if (at < last) from.prefetch(leaf, shard, at, std::min(stride, last - at));
}

void ShardSource::check(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                        ScatterList pieces) const {
  if (!verify_) return;
  const auto bad = bad_chunks(leaf, shard, first, pieces);
  if (bad.empty()) return;
  throw FormatError((dir_ / shard.file).string(), leaf.path,
                    fmt::format("{}. The file is damaged; restore an earlier checkpoint",
                                describe(leaf, shard, bad.front())));
}

void ShardSource::for_each_window(const LeafRecord& leaf, const ShardRecord& shard,
                                  std::uint64_t first, std::uint64_t last, const WindowFn& fn) {
  if (shard.compressed()) {
    for_each_chunk(leaf, shard, first, last, fn);
    return;
  }
  if (verify_) {
    const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
    first = first / chunk * chunk;
    last = std::min((last + chunk - 1) / chunk * chunk, shard.bytes);
  }
  ShardReader& from = reader(leaf.format);
  const std::uint64_t stride = step(leaf, shard);
  prefetch_window(from, leaf, shard, first, last, stride);
  for (std::uint64_t at = first; at < last; at += stride) {
    const auto n = static_cast<std::size_t>(std::min(stride, last - at));
    prefetch_window(from, leaf, shard, at + n, last, stride);
    if (buffer_.size() < n)
      buffer_.resize(std::max<std::size_t>(n, std::min<std::size_t>(stride, window_bytes_)));
    from.read(leaf, shard, at, n, buffer_.data());
    const std::span<std::byte> data(buffer_.data(), n);
    check(leaf, shard, at, {&data, 1});
    fn(at, data);
  }
}

void ShardSource::for_each_chunk(const LeafRecord& leaf, const ShardRecord& shard,
                                 std::uint64_t first, std::uint64_t last, const WindowFn& fn) {
  ShardReader& from = reader(leaf.format);
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const auto k_first = static_cast<std::size_t>(first / chunk);
  std::uint64_t at = 0;  // stored offset of chunk k
  for (std::size_t k = 0; k < k_first && k < shard.chunk_sizes.size(); ++k) {
    at += shard.chunk_sizes[k];
  }
  const std::string file = (dir_ / shard.file).string();
  for (std::size_t k = k_first; k < shard.chunk_sizes.size() && k * chunk < last; ++k) {
    const std::uint64_t raw_begin = k * chunk;
    const std::uint64_t raw_end = std::min(raw_begin + chunk, shard.bytes);
    const auto stored = static_cast<std::size_t>(shard.chunk_sizes[k]);
    if (buffer_.size() < stored) buffer_.resize(stored);
    from.read(leaf, shard, at, stored, buffer_.data());
    const std::span<const std::byte> bytes(buffer_.data(), stored);
    if (const std::uint64_t sum = checksum_of(bytes); sum != shard.checksums[k]) {
      const ChunkMismatch bad{.chunk = k,
                              .begin = at,
                              .end = at + stored,
                              .stored = shard.checksums[k],
                              .computed = sum};
      throw FormatError(file, leaf.path,
                        fmt::format("{}. The file is damaged; restore an earlier checkpoint",
                                    describe(leaf, shard, bad)));
    }
    raw_.resize(static_cast<std::size_t>(raw_end - raw_begin));
    decompress_chunk(leaf.compression, leaf.dtype, bytes, raw_, file, leaf.path);
    const std::uint64_t lo = std::max(first, raw_begin);
    const std::uint64_t hi = std::min(last, raw_end);
    if (lo < hi) {
      fn(lo, std::span<const std::byte>(raw_).subspan(static_cast<std::size_t>(lo - raw_begin),
                                                      static_cast<std::size_t>(hi - lo)));
    }
    at += stored;
  }
}

std::vector<ChunkMismatch> ShardSource::scan_stored(const LeafRecord& leaf,
                                                    const ShardRecord& shard) {
  ShardReader& from = reader(leaf.format);
  std::vector<ChunkMismatch> bad;
  std::uint64_t at = 0;
  for (std::size_t k = 0; k < shard.chunk_sizes.size(); ++k) {
    const auto stored = static_cast<std::size_t>(shard.chunk_sizes[k]);
    if (buffer_.size() < stored) buffer_.resize(stored);
    from.read(leaf, shard, at, stored, buffer_.data());
    const std::uint64_t sum = checksum_of({buffer_.data(), stored});
    if (sum != shard.checksums[k]) {
      bad.push_back({.chunk = k,
                     .begin = at,
                     .end = at + stored,
                     .stored = shard.checksums[k],
                     .computed = sum});
    }
    at += stored;
  }
  return bad;
}

std::vector<ChunkMismatch> ShardSource::scan(const LeafRecord& leaf, const ShardRecord& shard) {
  if (shard.compressed()) return scan_stored(leaf, shard);
  ShardReader& from = reader(leaf.format);
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const std::uint64_t stride = std::max<std::uint64_t>(window_bytes_ / chunk, 1) * chunk;
  std::vector<ChunkMismatch> bad;
  prefetch_window(from, leaf, shard, 0, shard.bytes, stride);
  for (std::uint64_t at = 0; at < shard.bytes; at += stride) {
    const auto n = static_cast<std::size_t>(std::min(stride, shard.bytes - at));
    prefetch_window(from, leaf, shard, at + n, shard.bytes, stride);
    if (buffer_.size() < n) buffer_.resize(n);
    from.read(leaf, shard, at, n, buffer_.data());
    auto found = bad_chunks(leaf, shard, at, {buffer_.data(), n});
    bad.insert(bad.end(), found.begin(), found.end());
  }
  return bad;
}

void ShardSource::read_range(const LeafRecord& leaf, const ShardRecord& shard, std::uint64_t first,
                             ScatterList pieces) {
  const std::uint64_t last = first + scatter_bytes(pieces);
  if (shard.compressed()) {
    for_each_chunk(leaf, shard, first, last,
                   [&](std::uint64_t at, std::span<const std::byte> data) {
                     std::uint64_t done = 0;
                     for (const auto& part : scatter_slice(pieces, at - first, data.size())) {
                       std::copy_n(data.data() + done, part.size(), part.data());
                       done += part.size();
                     }
                   });
    return;
  }
  if (verify_) {
    const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
    if (first % chunk != 0 || (last % chunk != 0 && last != shard.bytes)) {
      throw InvalidArgument(fmt::format(
          "leaf '{}': bytes [{}, {}) of a shard are not whole checksum chunks of {} bytes",
          leaf.path, first, last, chunk));
    }
  }
  ShardReader& from = reader(leaf.format);
  const std::uint64_t stride = step(leaf, shard);
  prefetch_window(from, leaf, shard, first, last, stride);
  for (std::uint64_t at = first; at < last; at += stride) {
    const std::uint64_t n = std::min(stride, last - at);
    prefetch_window(from, leaf, shard, at + n, last, stride);
    const auto window = scatter_slice(pieces, at - first, n);
    from.read_scattered(leaf, shard, at, window);
    check(leaf, shard, at, window);
  }
}

}  // namespace cairn::storage
