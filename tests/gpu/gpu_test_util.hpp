// Helpers of the GPU tests: skipping without a device, and device buffers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cairn::testing {

/// Why this process cannot use a CUDA device (the CUDA error string, or that there is none),
/// or std::nullopt when it can; selects device (world rank % device count) on first use.
std::optional<std::string> no_cuda_device();

/// Device memory for a test (cudaMalloc), freed on destruction.
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t bytes);
  ~DeviceArray();
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Copies `bytes` (size() of them) to the device.
  void upload(const std::vector<std::byte>& bytes);
  /// The device contents.
  [[nodiscard]] std::vector<std::byte> download() const;
  /// Sets every byte to `value`.
  void fill(unsigned char value);

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace cairn::testing

/// Skips the test (on every rank alike) when no CUDA device is usable, saying why.
#define CAIRN_REQUIRE_CUDA_DEVICE()                                                       \
  do {                                                                                    \
    if (auto why = cairn::testing::no_cuda_device()) {                                    \
      GTEST_SKIP() << "no CUDA device is present, so this GPU test cannot run: " << *why; \
    }                                                                                     \
  } while (false)
