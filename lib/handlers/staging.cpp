// StagingArea: the byte budget of async saves, and the memory it hands out.
#include <sys/mman.h>

#include <algorithm>
#include <cairn/handler.hpp>
#include <cstdint>
#include <new>
#include <utility>

namespace cairn {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// A staged copy writes every byte of its buffer once, right after allocation. With 4 KiB
// pages, each page is a fault plus the kernel zeroing it, which costs more than the copy.
// Buffers of at least one huge page are therefore mapped directly and advised to use
// transparent huge pages (one fault per 2 MiB where the kernel allows it; where it does not,
// the advice is ignored and the buffer works as before). Smaller ones come from new[].
struct Mapping {
  void* base = nullptr;
  std::size_t length = 0;
};

std::pair<std::byte*, Mapping> allocate(std::size_t bytes) {
  if (bytes < kHugePage) return {new std::byte[bytes], {}};
  // One huge page more than asked, so that the buffer can start on a huge-page boundary.
  const std::size_t length = bytes + kHugePage;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  auto* aligned = reinterpret_cast<std::byte*>((address + kHugePage - 1) & ~(kHugePage - 1));
#ifdef MADV_HUGEPAGE
  (void)madvise(aligned, bytes, MADV_HUGEPAGE);
#endif
  return {aligned, {base, length}};
}

void deallocate(std::byte* data, const Mapping& mapping) noexcept {
  if (mapping.base == nullptr) {
    delete[] data;
  } else {
    munmap(mapping.base, mapping.length);
  }
}

}  // namespace

std::shared_ptr<std::byte[]> StagingArea::acquire(std::size_t bytes) {
  if (bytes > capacity_) return nullptr;
  {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return in_use_ + bytes <= capacity_; });
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
  }
  std::pair<std::byte*, Mapping> memory;
  try {
    memory = allocate(bytes);
  } catch (...) {
    release(bytes);
    throw;
  }
  // Should the control block fail to allocate, the constructor calls the deleter: both the
  // memory and the budget go back.
  return {memory.first, [this, bytes, mapping = memory.second](std::byte* p) {
            deallocate(p, mapping);
            release(bytes);
          }};
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
