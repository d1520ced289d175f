// cairn — numbers and strings packed into bytes that one rank writes and others read in the
// same order (internal): the hdf5 format's primary verdicts, the shard records a save sends
// to the owners of their sections and the summaries of those sections. Numbers take one byte per
// seven bits (LEB128), so that the small ones (ranks, counts, indices) take one or two; checksums
// keep their 8 bytes. Native byte order: the bytes never leave the job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::base {

/// Bytes written by one rank and read, in the same order, by another (Unpacked).
class Packed {
 public:
  /// Appends `value` in 1 to 10 bytes. Never throws beyond std::bad_alloc.
  void put(std::uint64_t value);
  /// Appends the length of `text`, then its bytes. Never throws beyond std::bad_alloc.
  void put(std::string_view text);
  /// Appends `values` as they lie in memory, 8 bytes each, no length (checksums). Never
  /// throws beyond std::bad_alloc.
  void put_all(std::span<const std::uint64_t> values);
  /// Appends one byte. Never throws beyond std::bad_alloc.
  void put_byte(std::uint8_t value) { bytes_.push_back(static_cast<std::byte>(value)); }
  /// What was packed so far. Never throws.
  [[nodiscard]] std::vector<std::byte>& bytes() noexcept { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

/// Reads what Packed wrote. Every take throws Error(internal) when the bytes end early: the
/// ranks of one job send what the others read, so a cut message is cairn's bug.
class Unpacked {
 public:
  /// Reads `bytes`, which must outlive this object. Never throws.
  explicit Unpacked(std::span<const std::byte> bytes) : in_(bytes) {}
  /// What Packed::put(std::uint64_t) wrote.
  [[nodiscard]] std::uint64_t take();
  /// What Packed::put(std::string_view) wrote.
  [[nodiscard]] std::string take_text();
  /// `count` numbers that Packed::put_all() wrote.
  [[nodiscard]] std::vector<std::uint64_t> take_all(std::uint64_t count);
  /// What Packed::put_byte() wrote.
  [[nodiscard]] std::uint8_t take_byte();
  /// Whether every byte was read. Never throws.
  [[nodiscard]] bool done() const noexcept { return in_.empty(); }
  /// Bytes not read yet: a bound on the count of anything that takes a byte or more. Never
  /// throws.
  [[nodiscard]] std::size_t remaining() const noexcept { return in_.size(); }

 private:
  std::span<const std::byte> take_bytes(std::uint64_t count);
  std::span<const std::byte> in_;
};

}  // namespace cairn::base
