#include "storage/checksum.hpp"

#include <xxhash.h>

#include <fmt/format.h>
#include <new>

namespace cairn::storage {

Checksum::Checksum() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Checksum::~Checksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Checksum::update(std::span<const std::byte> data) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}

std::uint64_t Checksum::digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}

std::uint64_t checksum_of(std::span<const std::byte> data) {
  return XXH3_64bits(data.data(), data.size());
}

std::string checksum_to_hex(std::uint64_t value) { return fmt::format("{:016x}", value); }

std::optional<std::uint64_t> checksum_from_hex(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<std::uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
  }
  return value;
}

}  // namespace cairn::storage
