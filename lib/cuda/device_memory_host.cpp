// The host-only side of lib/cuda/device_memory.hpp (built when CAIRN_HAVE_CUDA is 0): no
// device is ever usable, and every owner's constructor throws Unsupported naming the leaf.
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "cuda/device_memory.hpp"

namespace cairn::cuda {

const DeviceStatus& device_status() noexcept {
  static const DeviceStatus status{
      .usable = false,
      .reason = "this build of cairn has no CUDA support (configure with CAIRN_USE_CUDA=ON)"};
  return status;
}

void require_device(std::string_view what) {
  throw Unsupported(fmt::format("{} is in CUDA device memory, but {}; pass a host buffer", what,
                                device_status().reason));
}

bool is_device_pointer(const void*) noexcept { return false; }

int current_device() noexcept { return -1; }

void use_device(int, std::string_view) {}

std::string current_device_id() noexcept { return {}; }

void synchronize_device(std::string_view) {}

std::size_t free_device_memory() noexcept { return 0; }

Stream::Stream(std::string_view what) { require_device(what); }
Stream::~Stream() = default;
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;
void Stream::synchronize(std::string_view) const {}

Event::Event(std::string_view what) { require_device(what); }
Event::~Event() = default;
Event::Event(Event&&) noexcept = default;
Event& Event::operator=(Event&&) noexcept = default;
void Event::record(const Stream&, std::string_view) {}
void Event::synchronize(std::string_view) const {}

PinnedBuffer::PinnedBuffer(std::size_t, std::string_view what) { require_device(what); }
PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept = default;
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept = default;

DeviceBuffer::DeviceBuffer(std::size_t, std::string_view what) { require_device(what); }
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;

void copy_async(void*, const void*, std::size_t, Copy, const Stream&, std::string_view what) {
  require_device(what);
}

}  // namespace cairn::cuda
