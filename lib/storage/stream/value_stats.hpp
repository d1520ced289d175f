// cairn — the statistics of a shard's stored values (internal): min and max of the finite
// values, NaN and infinity counts, computed from the stored bytes as they pass on their way to
// the checksums (shard_sink.hpp), and combined per leaf by the owner of its index section.
#pragma once

#include <cairn/dtype.hpp>
#include <cairn/storage.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace cairn::storage {

/// Statistics (LeafStats) of the elements of one dtype, arriving as row-major bytes in pieces
/// of any size (an element may be cut between two pieces). Not thread-safe.
class ValueStats {
 public:
  /// Whether values of `dtype` get statistics: integer and floating dtypes, not bool or
  /// complex. Never throws.
  [[nodiscard]] static bool kept_for(DType dtype) noexcept;
  /// Statistics of values of `dtype`; kept_for(dtype) must hold. Never throws.
  explicit ValueStats(DType dtype) noexcept;

  /// Adds the next bytes. Never throws.
  void update(std::span<const std::byte> bytes) noexcept;
  /// The statistics of the whole elements so far. Never throws.
  [[nodiscard]] LeafStats result() const noexcept;

 private:
  void scan(const std::byte* data, std::size_t count) noexcept;

  DType dtype_;
  std::size_t size_;  // of an element
  bool any_ = false;  // a finite value has been seen
  LeafStatValue min_{};
  LeafStatValue max_{};
  std::uint64_t nan_ = 0;
  std::uint64_t inf_ = 0;
  std::array<std::byte, 16> carry_{};  // the start of an element cut between pieces
  std::size_t carried_ = 0;
};

/// The statistics of a leaf made of two parts with statistics `a` and `b` (of one dtype).
/// Never throws.
[[nodiscard]] LeafStats merge_stats(const LeafStats& a, const LeafStats& b) noexcept;

}  // namespace cairn::storage
