#include "storage/stream/checksum.hpp"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cairn/error.hpp>
#include <chrono>
#include <fmt/format.h>
#include <new>

namespace cairn::storage {

namespace {

// Nanoseconds spent hashing by every thread of this process.
std::atomic<std::uint64_t> g_checksum_nanoseconds{0};

// Adds the time from its construction to its destruction to g_checksum_nanoseconds.
class HashTimer {
 public:
  HashTimer() noexcept : start_(std::chrono::steady_clock::now()) {}
  HashTimer(const HashTimer&) = delete;
  HashTimer& operator=(const HashTimer&) = delete;
  ~HashTimer() {
    const auto spent = std::chrono::steady_clock::now() - start_;
    g_checksum_nanoseconds.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()),
        std::memory_order_relaxed);
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::uint64_t checksum_nanoseconds() noexcept {
  return g_checksum_nanoseconds.load(std::memory_order_relaxed);
}

Checksum::Checksum() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Checksum::~Checksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Checksum::update(std::span<const std::byte> data) {
  const HashTimer timer;
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}

std::uint64_t Checksum::digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}

void Checksum::reset() noexcept { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }

ChunkCutter::ChunkCutter(std::uint64_t chunk_bytes, Emit emit)
    : chunk_bytes_(chunk_bytes), emit_(std::move(emit)) {
  if (chunk_bytes == 0) throw InvalidArgument("chunks of 0 bytes");
}

void ChunkCutter::emit(std::span<const std::byte> bytes) {
  emit_(chunks_, emitted_, bytes);
  ++chunks_;
  emitted_ += bytes.size();
}

void ChunkCutter::update(std::span<const std::byte> data) {
  const auto chunk = static_cast<std::size_t>(chunk_bytes_);
  while (!data.empty()) {
    if (pending_.empty() && data.size() >= chunk) {  // a whole chunk: no copy
      emit(data.first(chunk));
      data = data.subspan(chunk);
      continue;
    }
    const std::size_t take = std::min(chunk - pending_.size(), data.size());
    pending_.insert(pending_.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
    data = data.subspan(take);
    if (pending_.size() == chunk) {
      emit(pending_);
      pending_.clear();
    }
  }
}

void ChunkCutter::finish() {
  if (pending_.empty()) return;
  emit(pending_);
  pending_.clear();
}

ChunkedChecksum::ChunkedChecksum(std::uint64_t chunk_bytes) : chunk_bytes_(chunk_bytes) {
  if (chunk_bytes == 0) throw InvalidArgument("checksum chunks of 0 bytes");
}

void ChunkedChecksum::update(std::span<const std::byte> data) {
  while (!data.empty()) {
    const auto take =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes_ - in_chunk_, data.size()));
    current_.update(data.first(take));
    data = data.subspan(take);
    in_chunk_ += take;
    total_ += take;
    if (in_chunk_ == chunk_bytes_) {
      done_.push_back(current_.digest());
      current_.reset();
      in_chunk_ = 0;
    }
  }
}

std::vector<std::uint64_t> ChunkedChecksum::digests() const {
  std::vector<std::uint64_t> out = done_;
  if (in_chunk_ > 0) out.push_back(current_.digest());
  return out;
}

std::vector<std::uint64_t> chunk_checksums_of(std::span<const std::byte> data,
                                              std::uint64_t chunk_bytes) {
  if (chunk_bytes == 0) throw InvalidArgument("checksum chunks of 0 bytes");
  const HashTimer timer;
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>((data.size() + chunk_bytes - 1) / chunk_bytes));
  for (std::uint64_t at = 0; at < data.size(); at += chunk_bytes) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, data.size() - at));
    out.push_back(XXH3_64bits(data.data() + at, n));
  }
  return out;
}

std::uint64_t checksum_of(std::span<const std::byte> data) {
  const HashTimer timer;
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
