#include "cuda/staged_copy.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace cairn::cuda {

StagedCopier::StagedCopier(std::size_t chunk_bytes, std::string_view what)
    : chunk_(std::max<std::size_t>(chunk_bytes, 4096)),
      stream_(what),
      buffers_{PinnedBuffer(chunk_, what), PinnedBuffer(chunk_, what)},
      ready_{Event(what), Event(what)} {}

StagedCopier::~StagedCopier() { drain(); }

void StagedCopier::drain() noexcept {
  try {
    stream_.synchronize("draining staged copies");
  } catch (...) {
    // The error was the copy's; the caller already has (or is throwing) it.
  }
}

void StagedCopier::to_host(const void* src, std::span<const std::size_t> lengths, const Sink& sink,
                           std::string_view what) {
  for (std::size_t length : lengths) {
    if (length > chunk_) {
      throw InvalidArgument(fmt::format("{}: a piece of {} bytes does not fit the {}-byte buffer",
                                        what, length, chunk_));
    }
  }
  const auto* from = static_cast<const std::byte*>(src);
  std::size_t issued = 0;  // bytes queued so far
  auto issue = [&](std::size_t k) {
    copy_async(buffers_[k % 2].data(), from + issued, lengths[k], Copy::to_host, stream_, what);
    ready_[k % 2].record(stream_, what);
    issued += lengths[k];
  };
  try {
    if (!lengths.empty()) issue(0);
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      // Buffer (k+1)%2 last held piece k-1, which the sink has finished with.
      if (k + 1 < lengths.size()) issue(k + 1);
      ready_[k % 2].synchronize(what);
      sink({buffers_[k % 2].data(), lengths[k]});
    }
  } catch (...) {
    drain();
    throw;
  }
}

void StagedCopier::to_host(const void* src, std::size_t bytes, void* dst, std::string_view what) {
  std::vector<std::size_t> lengths(bytes / chunk_, chunk_);
  if (bytes % chunk_ != 0) lengths.push_back(bytes % chunk_);
  auto* out = static_cast<std::byte*>(dst);
  to_host(
      src, lengths,
      [&](std::span<const std::byte> chunk) {
        std::memcpy(out, chunk.data(), chunk.size());
        out += chunk.size();
      },
      what);
}

void StagedCopier::to_device(const void* src, std::size_t bytes, void* dst, std::string_view what) {
  if (bytes == 0) return;
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
  try {
    for (std::size_t k = 0; k < chunks; ++k) {
      const std::size_t b = k % 2;
      const std::size_t n = std::min(chunk_, bytes - k * chunk_);
      // Buffer b last held chunk k-2: its transfer must be done before it is refilled.
      if (k >= 2) ready_[b].synchronize(what);
      std::memcpy(buffers_[b].data(), from + k * chunk_, n);
      copy_async(to + k * chunk_, buffers_[b].data(), n, Copy::to_device, stream_, what);
      ready_[b].record(stream_, what);
    }
    stream_.synchronize(what);
  } catch (...) {
    drain();
    throw;
  }
}

}  // namespace cairn::cuda
