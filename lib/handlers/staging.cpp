#include <cairn/handler.hpp>

namespace cairn {

std::shared_ptr<std::byte[]> StagingArea::acquire(std::size_t bytes) {
  if (bytes > capacity_) return nullptr;
  {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return in_use_ + bytes <= capacity_; });
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
  }
  try {
    std::unique_ptr<std::byte[]> memory(new std::byte[bytes]);
    return {memory.release(), [this, bytes](std::byte* p) {
              delete[] p;
              release(bytes);
            }};
  } catch (...) {
    release(bytes);
    throw;
  }
}

void StagingArea::release(std::size_t bytes) noexcept {
  {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
  }
  freed_.notify_all();
}

std::size_t StagingArea::in_use() const noexcept {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t StagingArea::peak() const noexcept {
  std::lock_guard lock(mutex_);
  return peak_;
}

void StagingArea::reset_peak() noexcept {
  std::lock_guard lock(mutex_);
  peak_ = in_use_;
}

}  // namespace cairn
