// The CUDA runtime side of lib/cuda/device_memory.hpp (built when CAIRN_HAVE_CUDA).
#include <cairn/error.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <utility>

#include "base/log.hpp"
#include "cuda/device_memory.hpp"

namespace cairn::cuda {
namespace {

// Throws IoError for a failed CUDA call made for `what`.
void check(cudaError_t status, std::string_view call, std::string_view what) {
  if (status == cudaSuccess) return;
  throw IoError({}, fmt::format("{}: {} failed: {} ({})", what, call, cudaGetErrorString(status),
                                cudaGetErrorName(status)));
}

// Logs a failed CUDA call in a destructor, which must not throw.
void log_failure(cudaError_t status, std::string_view call) noexcept {
  if (status == cudaSuccess) return;
  base::log::error("cuda.release", "call={} error=\"{}\"", call, cudaGetErrorString(status));
}

DeviceStatus query_status() noexcept {
  DeviceStatus status;
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    status.reason = fmt::format("no CUDA device is usable: {}", cudaGetErrorString(rc));
    (void)cudaGetLastError();  // clear the sticky error so later calls report their own
  } else if (count == 0) {
    status.reason = "no CUDA device is present";
  } else {
    status.usable = true;
  }
  base::log::debug("cuda.status", "usable={} devices={} reason=\"{}\"", status.usable, count,
                   status.reason);
  return status;
}

}  // namespace

const DeviceStatus& device_status() noexcept {
  static const DeviceStatus status = query_status();
  return status;
}

void require_device(std::string_view what) {
  const DeviceStatus& status = device_status();
  if (status.usable) return;
  throw Unsupported(fmt::format(
      "{} is in CUDA device memory, but {}; run on a node with a GPU or pass a host buffer", what,
      status.reason));
}

bool is_device_pointer(const void* pointer) noexcept {
  if (pointer == nullptr || !device_status().usable) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

int current_device() noexcept {
  if (!device_status().usable) return -1;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

void use_device(int device, std::string_view what) {
  if (device >= 0) check(cudaSetDevice(device), "cudaSetDevice", what);
}

std::string current_device_id() noexcept {
  if (!device_status().usable) return {};
  int device = 0;
  char id[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof(id)), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  try {
    return id;
  } catch (...) {
    return {};
  }
}

void synchronize_device(std::string_view what) {
  if (!device_status().usable) return;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", what);
}

std::size_t free_device_memory() noexcept {
  if (!device_status().usable) return 0;
  std::size_t free = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return free;
}

Stream::Stream(std::string_view what) {
  require_device(what);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", what);
  stream_ = stream;
}

Stream::~Stream() {
  if (stream_)
    log_failure(cudaStreamDestroy(static_cast<cudaStream_t>(stream_)), "cudaStreamDestroy");
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize(std::string_view what) const {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize", what);
}

Event::Event(std::string_view what) {
  require_device(what);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate", what);
  event_ = event;
}

Event::~Event() {
  if (event_) log_failure(cudaEventDestroy(static_cast<cudaEvent_t>(event_)), "cudaEventDestroy");
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(const Stream& stream, std::string_view what) {
  check(
      cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream.native())),
      "cudaEventRecord", what);
}

void Event::synchronize(std::string_view what) const {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize", what);
}

PinnedBuffer::PinnedBuffer(std::size_t bytes, std::string_view what) {
  require_device(what);
  if (bytes == 0) return;
  void* data = nullptr;
  check(cudaMallocHost(&data, bytes), fmt::format("cudaMallocHost of {} bytes", bytes), what);
  data_ = static_cast<std::byte*>(data);
  size_ = bytes;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) log_failure(cudaFreeHost(data_), "cudaFreeHost");
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    PinnedBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, std::string_view what) {
  require_device(what);
  if (bytes == 0) return;
  void* data = nullptr;
  check(cudaMalloc(&data, bytes), fmt::format("cudaMalloc of {} bytes", bytes), what);
  data_ = static_cast<std::byte*>(data);
  size_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) log_failure(cudaFree(data_), "cudaFree");
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void copy_async(void* dst, const void* src, std::size_t bytes, Copy direction, const Stream& stream,
                std::string_view what) {
  if (bytes == 0) return;
  cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
  if (direction == Copy::to_host) kind = cudaMemcpyDeviceToHost;
  if (direction == Copy::to_device) kind = cudaMemcpyHostToDevice;
  check(cudaMemcpyAsync(dst, src, bytes, kind, static_cast<cudaStream_t>(stream.native())),
        "cudaMemcpyAsync", what);
}

}  // namespace cairn::cuda
