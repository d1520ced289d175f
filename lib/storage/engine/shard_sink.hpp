// cairn — where the stored bytes of one shard go on their way into its format (internal):
// exactly one of three paths, chosen per shard by make_shard_sink().
//   plain:       written as they come, checksummed chunk by chunk;
//   compressed:  compressed chunk by chunk (a format that stores compressed chunks), each
//                checksummed, and skipped when an incremental save's base has it;
//   referring:   an incremental save of an uncompressed shard: cut into whole chunks, each
//                checksummed, and written only when the base does not hold it.
// Each path also gathers the statistics of the stored values (ValueStats) from the bytes it
// checksums, block by block while they are in the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/engine/array_job.hpp"
#include "storage/engine/incremental.hpp"
#include "storage/format/shard_writer.hpp"
#include "storage/stream/value_stats.hpp"

namespace cairn::storage {

/// Takes the stored bytes of one shard, in order, and hands them to its format's writer.
class ShardSink {
 public:
  /// A sink of values stored as `stored`. Never throws.
  explicit ShardSink(DType stored) noexcept {
    if (ValueStats::kept_for(stored)) stats_.emplace(stored);
  }
  virtual ~ShardSink() = default;
  /// Takes the next stored bytes of the shard. Local. Throws what the writer or a codec
  /// throws.
  virtual void update(std::span<const std::byte> stored) = 0;
  /// Ends the shard (the last, possibly shorter, chunk). Local. Throws as update().
  virtual void finish() = 0;
  /// After finish(): one XXH3-64 per chunk of what was stored. Never throws beyond
  /// std::bad_alloc.
  [[nodiscard]] virtual std::vector<std::uint64_t> checksums() const = 0;
  /// After finish(): the stored size of each chunk when the chunks are compressed, else empty.
  /// Never throws beyond std::bad_alloc.
  [[nodiscard]] virtual std::vector<std::uint64_t> chunk_sizes() const { return {}; }
  /// Bytes handed to the writer so far (not those an incremental save referred to). Never
  /// throws.
  [[nodiscard]] virtual std::uint64_t written_bytes() const noexcept = 0;
  /// After finish(): the statistics of the stored values, or none for a dtype without
  /// (ValueStats::kept_for()). Never throws.
  [[nodiscard]] std::optional<LeafStats> stats() const noexcept {
    if (!stats_) return std::nullopt;
    return stats_->result();
  }

 protected:
  /// Adds stored bytes to the statistics. Never throws.
  void count(std::span<const std::byte> stored) noexcept {
    if (stats_) stats_->update(stored);
  }

 private:
  std::optional<ValueStats> stats_;
};

/// The sink of this rank's shard of `job` (`index` in its format's writer is
/// job.format_index): compressed when `writer` stores compressed chunks, referring when
/// `matcher` is given (an incremental save with a base shard of the same box), plain
/// otherwise. `writer` and `matcher` must outlive the sink. Never throws beyond
/// std::bad_alloc.
[[nodiscard]] std::unique_ptr<ShardSink> make_shard_sink(ShardWriter& writer, const ArrayJob& job,
                                                         ChunkMatcher* matcher);

}  // namespace cairn::storage
