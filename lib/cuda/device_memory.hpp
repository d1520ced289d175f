// cairn — the CUDA runtime as the rest of cairn sees it (internal): whether a device is
// usable, pointer detection, and move-only RAII owners of streams, events, pinned host memory
// and device memory.
//
// Built against the CUDA runtime (device_memory_cuda.cpp) when CAIRN_HAVE_CUDA, otherwise
// host-only (device_memory_host.cpp): there no device is ever usable, is_device_pointer() is
// false, and every owner's constructor throws Unsupported. Nothing here calls the CUDA runtime
// until device memory is declared or detection is asked for, so host-only paths cost nothing.
// Thread-safe as the CUDA runtime is (one owner used by one thread at a time).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cairn::cuda {

/// Whether this process can use a CUDA device, and when not, why: the CUDA error string
/// ("CUDA driver version is insufficient ...", "no CUDA-capable device is detected"), "no CUDA
/// device is present" (count 0), or that the build has no CUDA support.
struct DeviceStatus {
  bool usable = false;
  std::string reason = {};
};

/// The status of this process, queried once (cudaGetDeviceCount) on first use. Never throws.
[[nodiscard]] const DeviceStatus& device_status() noexcept;

/// Throws Unsupported "<what> is in CUDA device memory, but <reason>" unless a device is
/// usable. `what` names the leaf.
void require_device(std::string_view what);

/// Whether `pointer` is CUDA device or managed memory (cudaPointerGetAttributes). False
/// without a usable device or for null. Never throws.
[[nodiscard]] bool is_device_pointer(const void* pointer) noexcept;

/// The calling thread's current CUDA device, or -1 without a usable device. Never throws.
[[nodiscard]] int current_device() noexcept;

/// Makes `device` (from current_device(), on the thread that owns the data) the calling
/// thread's current device; nothing for -1. Throws IoError naming `what` with the CUDA error.
void use_device(int device, std::string_view what);

/// The PCI bus id of the current device ("0000:3b:00.0"), or "" when there is none. NCCL
/// needs a distinct device per rank; this tells ranks that share one. Never throws.
[[nodiscard]] std::string current_device_id() noexcept;

/// Waits for all work this process queued on the current device, on any stream
/// (cudaDeviceSynchronize): cairn's own streams are non-blocking, so without this they would
/// not wait for the caller's kernels and copies (on the legacy default stream or its own
/// streams) that write a leaf before a save, or use a target before a restore. Nothing
/// without a usable device. Throws IoError naming `what` with the CUDA error.
void synchronize_device(std::string_view what);

/// Free memory on the current device in bytes, or 0 when that cannot be known. Never throws.
[[nodiscard]] std::size_t free_device_memory() noexcept;

/// A CUDA stream (non-blocking) on the current device.
class Stream {
 public:
  /// Creates a stream. Throws Unsupported (no device, naming `what`) or IoError (CUDA error).
  explicit Stream(std::string_view what);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Waits for all work on the stream. Throws IoError naming `what` with the CUDA error.
  void synchronize(std::string_view what) const;
  /// The cudaStream_t, as an opaque pointer. Never throws.
  [[nodiscard]] void* native() const noexcept { return stream_; }

 private:
  void* stream_ = nullptr;
};

/// A CUDA event (timing disabled), for waiting on part of a stream's work.
class Event {
 public:
  /// Creates an event. Throws as Stream::Stream.
  explicit Event(std::string_view what);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Records the event after the work queued so far on `stream`. Throws IoError.
  void record(const Stream& stream, std::string_view what);
  /// Waits until the recorded work is done. Throws IoError naming `what`.
  void synchronize(std::string_view what) const;

 private:
  // Unused in builds without CUDA, where every Event method is a no-op.
  [[maybe_unused]] void* event_ = nullptr;
};

/// Page-locked host memory (cudaMallocHost): copies to and from it run asynchronously.
class PinnedBuffer {
 public:
  /// An empty buffer. Never throws.
  PinnedBuffer() = default;
  /// `bytes` of pinned memory. Throws Unsupported (no device) or IoError (out of memory).
  PinnedBuffer(std::size_t bytes, std::string_view what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Device memory on the current device (cudaMalloc).
class DeviceBuffer {
 public:
  /// An empty buffer. Never throws.
  DeviceBuffer() = default;
  /// `bytes` of device memory. Throws Unsupported (no device) or IoError (out of memory).
  DeviceBuffer(std::size_t bytes, std::string_view what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Direction of a copy.
enum class Copy { to_host, to_device, device_to_device };

/// Queues a copy of `bytes` from `src` to `dst` on `stream` (asynchronous when the host side
/// is pinned; pageable host memory makes it return when the copy is done). Throws IoError
/// naming `what` with the CUDA error.
void copy_async(void* dst, const void* src, std::size_t bytes, Copy direction, const Stream& stream,
                std::string_view what);

}  // namespace cairn::cuda
