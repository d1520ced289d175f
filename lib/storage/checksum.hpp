// cairn — shard checksums (internal): XXH3-64 from libxxhash, printed as 16 hex digits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cairn::storage {

/// Incremental XXH3-64 over a shard written or read in pieces. Not thread-safe.
class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(std::span<const std::byte> data);
  [[nodiscard]] std::uint64_t digest() const;

 private:
  void* state_;
};

/// XXH3-64 of one buffer.
[[nodiscard]] std::uint64_t checksum_of(std::span<const std::byte> data);
/// "0123456789abcdef".
[[nodiscard]] std::string checksum_to_hex(std::uint64_t value);
/// Parses 16 lower-case hex digits; std::nullopt on anything else.
[[nodiscard]] std::optional<std::uint64_t> checksum_from_hex(std::string_view text);

}  // namespace cairn::storage
