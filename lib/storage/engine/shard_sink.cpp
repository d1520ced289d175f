#include "storage/engine/shard_sink.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "storage/stream/checksum.hpp"
#include "storage/stream/compress.hpp"

namespace cairn::storage {

namespace {

// Bytes checksummed before the statistics read them: well inside a core's L2 cache.
constexpr std::size_t kStatsBlock = std::size_t{64} << 10;

class PlainSink final : public ShardSink {
 public:
  PlainSink(ShardWriter& writer, const ArrayJob& job)
      : ShardSink(job.dtype),
        writer_(writer),
        index_(job.format_index),
        checksum_(job.chunk_bytes) {}
  void update(std::span<const std::byte> stored) override {
    writer_.write(index_, checksum_.bytes(), stored);
    // The statistics read each block right after the checksum, while it is in the cache.
    for (std::size_t at = 0; at < stored.size(); at += kStatsBlock) {
      const auto block = stored.subspan(at, std::min(kStatsBlock, stored.size() - at));
      checksum_.update(block);
      count(block);
    }
  }
  void finish() override {}
  [[nodiscard]] std::vector<std::uint64_t> checksums() const override {
    return checksum_.digests();
  }
  [[nodiscard]] std::uint64_t written_bytes() const noexcept override { return checksum_.bytes(); }

 private:
  ShardWriter& writer_;
  std::size_t index_;
  ChunkedChecksum checksum_;
};

class CompressedSink final : public ShardSink {
 public:
  CompressedSink(ShardWriter& writer, const ArrayJob& job, ChunkMatcher* matcher)
      : ShardSink(job.dtype),
        compressor_(
            job.compression, job.dtype, job.chunk_bytes, fmt::format("leaf '{}'", job.leaf->path()),
            [&writer, index = job.format_index, this](std::span<const std::byte> stored) {
              writer.write(index, compressor_.stored_bytes(), stored);
            },
            matcher == nullptr
                ? ChunkCompressor::Skip{}
                : [matcher](std::size_t c, std::uint64_t sum,
                            std::uint64_t size) { return matcher->refer(c, sum, size); }),
        matcher_(matcher) {}
  void update(std::span<const std::byte> stored) override {
    count(stored);
    compressor_.update(stored);
  }
  void finish() override { compressor_.finish(); }
  [[nodiscard]] std::vector<std::uint64_t> checksums() const override {
    return compressor_.checksums();
  }
  [[nodiscard]] std::vector<std::uint64_t> chunk_sizes() const override {
    return compressor_.chunk_sizes();
  }
  [[nodiscard]] std::uint64_t written_bytes() const noexcept override {
    return compressor_.stored_bytes() - (matcher_ != nullptr ? matcher_->referred_bytes() : 0);
  }

 private:
  ChunkCompressor compressor_;
  ChunkMatcher* matcher_;
};

class ReferringSink final : public ShardSink {
 public:
  ReferringSink(ShardWriter& writer, const ArrayJob& job, ChunkMatcher& matcher)
      : ShardSink(job.dtype),
        matcher_(matcher),
        cutter_(job.chunk_bytes,
                [&writer, &matcher, index = job.format_index, this](
                    std::size_t c, std::uint64_t first, std::span<const std::byte> chunk) {
                  sums_.push_back(checksum_of(chunk));
                  count(chunk);
                  cut_ += chunk.size();
                  if (!matcher.refer(c, sums_.back(), chunk.size())) {
                    writer.write(index, first, chunk);
                  }
                }) {}
  void update(std::span<const std::byte> stored) override { cutter_.update(stored); }
  void finish() override { cutter_.finish(); }
  [[nodiscard]] std::vector<std::uint64_t> checksums() const override { return sums_; }
  [[nodiscard]] std::uint64_t written_bytes() const noexcept override {
    return cut_ - matcher_.referred_bytes();
  }

 private:
  ChunkMatcher& matcher_;
  std::vector<std::uint64_t> sums_;
  std::uint64_t cut_ = 0;
  ChunkCutter cutter_;
};

}  // namespace

std::unique_ptr<ShardSink> make_shard_sink(ShardWriter& writer, const ArrayJob& job,
                                           ChunkMatcher* matcher) {
  if (writer.stores_compressed_chunks(job.format_index)) {
    return std::make_unique<CompressedSink>(writer, job, matcher);
  }
  if (matcher != nullptr) return std::make_unique<ReferringSink>(writer, job, *matcher);
  return std::make_unique<PlainSink>(writer, job);
}

}  // namespace cairn::storage
