// cairn — the one 64-bit hash of structures and names (internal): FNV-1a with the standard
// offset basis 0xcbf29ce484222325 and prime 0x100000001b3, over a byte stream in which every
// integer is 8 bytes in little-endian order and every string is preceded by its length, so
// that every platform and build gives the same value and fields cannot run together.
// ArrayTree::structure_hash() is made with it, and so is the `structure` of every agreement.
#pragma once

#include <cstdint>
#include <string_view>

namespace cairn::base {

class Fnv1a {
 public:
  /// Adds raw bytes. Never throws.
  Fnv1a& bytes(std::string_view data) noexcept {
    for (const char c : data) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= 0x100000001b3ULL;
    }
    return *this;
  }
  /// Adds `value` as 8 little-endian bytes. Never throws.
  Fnv1a& u64(std::uint64_t value) noexcept {
    char le[8];
    for (int k = 0; k < 8; ++k) le[k] = static_cast<char>((value >> (8 * k)) & 0xffu);
    return bytes(std::string_view(le, 8));
  }
  /// Adds `value` as the 8 little-endian bytes of its two's complement. Never throws.
  Fnv1a& i64(std::int64_t value) noexcept { return u64(static_cast<std::uint64_t>(value)); }
  /// Adds `text`, its length (u64) first. Never throws.
  Fnv1a& str(std::string_view text) noexcept {
    u64(text.size());
    return bytes(text);
  }
  /// The hash of what was added. Never throws.
  [[nodiscard]] std::uint64_t value() const noexcept { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace cairn::base
