// cairn — copies between device memory and the host through two pinned staging buffers
// (internal), so that the device-to-host copy of one chunk overlaps the file write of the
// previous one, and a host-to-device copy overlaps the packing of the next chunk.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

#include "cuda/device_memory.hpp"

namespace cairn::cuda {

/// Two pinned buffers of `chunk_bytes`, one stream and two events. One thread at a time.
class StagedCopier {
 public:
  /// Receives each chunk of device data, in order; valid until the call returns.
  using Sink = std::function<void(std::span<const std::byte>)>;

  /// Allocates the buffers. Throws Unsupported naming `what` when no device is usable, IoError
  /// when CUDA fails (e.g. out of pinned memory).
  StagedCopier(std::size_t chunk_bytes, std::string_view what);
  ~StagedCopier();
  StagedCopier(const StagedCopier&) = delete;
  StagedCopier& operator=(const StagedCopier&) = delete;

  /// Hands the device memory at `src` to `sink` in consecutive pieces of `lengths` bytes
  /// (each at most chunk_bytes()): while `sink` consumes piece k, piece k+1 is being copied.
  /// Throws InvalidArgument for a piece longer than a buffer, what `sink` throws, or IoError
  /// naming `what`.
  void to_host(const void* src, std::span<const std::size_t> lengths, const Sink& sink,
               std::string_view what);
  /// Bytes of each of the two buffers. Never throws.
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_; }
  /// Copies `bytes` of device memory at `src` into host memory at `dst` (pageable or not).
  /// Throws IoError naming `what`.
  void to_host(const void* src, std::size_t bytes, void* dst, std::string_view what);
  /// Copies `bytes` of host memory at `src` (pageable or not) to device memory at `dst`; the
  /// copy to pinned memory of chunk k+1 overlaps the transfer of chunk k. Returns once the
  /// data is on the device. Throws IoError naming `what`.
  void to_device(const void* src, std::size_t bytes, void* dst, std::string_view what);

 private:
  // Waits for what is queued without throwing (after a failure, before buffers are reused).
  void drain() noexcept;

  std::size_t chunk_;
  Stream stream_;
  PinnedBuffer buffers_[2];
  Event ready_[2];
};

}  // namespace cairn::cuda
