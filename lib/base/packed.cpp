#include "base/packed.hpp"

#include <cairn/error.hpp>

#include <cstring>

namespace cairn::base {

void Packed::put(std::uint64_t value) {
  // LEB128: seven bits a byte, low bits first, the high bit set on all but the last byte.
  while (value >= 0x80) {
    bytes_.push_back(static_cast<std::byte>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  bytes_.push_back(static_cast<std::byte>(value));
}

void Packed::put(std::string_view text) {
  put(static_cast<std::uint64_t>(text.size()));
  const auto bytes = std::as_bytes(std::span(text));
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
}

void Packed::put_all(std::span<const std::uint64_t> values) {
  const auto bytes = std::as_bytes(values);
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
}

std::span<const std::byte> Unpacked::take_bytes(std::uint64_t count) {
  if (in_.size() < count) {
    throw Error(ErrorCode::internal, "a message between the ranks of a job was cut");
  }
  const auto out = in_.first(static_cast<std::size_t>(count));
  in_ = in_.subspan(static_cast<std::size_t>(count));
  return out;
}

std::uint64_t Unpacked::take() {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const auto byte = static_cast<std::uint64_t>(take_bytes(1)[0]);
    if (shift == 63 && byte > 1) break;  // bits beyond the 64th
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  throw Error(ErrorCode::internal, "a message between the ranks of a job holds a bad number");
}

std::string Unpacked::take_text() {
  const auto bytes = take_bytes(take());
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::vector<std::uint64_t> Unpacked::take_all(std::uint64_t count) {
  if (count > in_.size() / sizeof(std::uint64_t)) take_bytes(in_.size() + 1);  // throws
  const auto bytes = take_bytes(count * sizeof(std::uint64_t));
  std::vector<std::uint64_t> out(static_cast<std::size_t>(count));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::uint8_t Unpacked::take_byte() { return static_cast<std::uint8_t>(take_bytes(1)[0]); }

}  // namespace cairn::base
