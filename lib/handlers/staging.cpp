// StagingArea: the byte budget of async saves, and the memory it hands out and keeps.
#include <sys/mman.h>

#include <algorithm>
#include <cairn/handler.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>

#include "base/log.hpp"

namespace cairn {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

void unmap(std::byte* region, std::size_t length) noexcept {
  if (munmap(region, length) != 0) {
    base::log::error("staging.munmap_failed", "bytes={} error=\"{}\"", length,
                     std::strerror(errno));
  }
}

// A staged copy writes every byte of its buffer right after acquire(). With 4 KiB pages,
// each page is a fault plus the kernel zeroing it, which costs more than the copy. A buffer
// of `length` (a multiple of 2 MiB) is therefore mapped on a huge-page boundary and advised
// to use transparent huge pages (one fault per 2 MiB where the kernel allows it; where it
// does not, the advice is ignored), then populated in one call rather than fault by fault
// where the kernel can (Linux 5.14; elsewhere the copy faults the pages in).
std::byte* map_region(std::size_t length) {
  // One huge page more than asked, so that a boundary lies within; the rest is unmapped.
  const std::size_t mapped = length + kHugePage;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  auto* first = static_cast<std::byte*>(base);
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  auto* region = first + (((address + kHugePage - 1) & ~(kHugePage - 1)) - address);
  const auto head = static_cast<std::size_t>(region - first);
  if (head > 0) unmap(first, head);
  if (head < kHugePage) unmap(region + length, kHugePage - head);
#ifdef MADV_HUGEPAGE
  (void)madvise(region, length, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  if (madvise(region, length, MADV_POPULATE_WRITE) != 0 && errno == ENOMEM) {
    unmap(region, length);
    throw std::bad_alloc();
  }
#endif
  return region;
}

}  // namespace

StagingArea::~StagingArea() { trim(); }

std::shared_ptr<std::byte[]> StagingArea::acquire(std::size_t bytes) {
  if (bytes > capacity_) return nullptr;
  const bool mapped = bytes >= kHugePage;
  const std::size_t length = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  std::byte* region = nullptr;
  std::multimap<std::size_t, std::byte*> evicted;
  {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return in_use_ + bytes <= capacity_; });
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    if (auto it = kept_.find(length); mapped && it != kept_.end()) {
      region = it->second;
      kept_.erase(it);
    } else if (mapped) {
      // Kept buffers of other sizes make room for the new one (largest first: fewest unmaps).
      while (held_ + length > capacity_ && !kept_.empty()) {
        auto last = std::prev(kept_.end());
        held_ -= last->first;
        evicted.insert(kept_.extract(last));
      }
      held_ += length;
    }
  }
  if (!mapped) {
    std::byte* data = nullptr;
    try {
      data = new std::byte[bytes];
    } catch (...) {
      release(bytes);
      throw;
    }
    // Should the control block fail to allocate, the constructor calls the deleter: both the
    // memory and the budget go back.
    return {data, [this, bytes](std::byte* p) {
              delete[] p;
              release(bytes);
            }};
  }
  if (region == nullptr) {
    for (const auto& [evicted_length, evicted_region] : evicted) {
      unmap(evicted_region, evicted_length);
    }
    try {
      region = map_region(length);
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        held_ -= length;
      }
      release(bytes);
      throw;
    }
  }
  return {region, [this, length, bytes](std::byte* p) { keep(p, length, bytes); }};
}

void StagingArea::keep(std::byte* region, std::size_t length, std::size_t bytes) noexcept {
  {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
    // Cannot throw for want of memory in practice (one node); should it, the buffer is
    // unmapped instead of kept.
    try {
      kept_.emplace(length, region);
      region = nullptr;
    } catch (...) {
      held_ -= length;
    }
  }
  if (region != nullptr) unmap(region, length);
  freed_.notify_all();
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

std::size_t StagingArea::held() const noexcept {
  std::lock_guard lock(mutex_);
  return held_;
}

void StagingArea::trim() noexcept {
  std::multimap<std::size_t, std::byte*> kept;
  {
    std::lock_guard lock(mutex_);
    kept.swap(kept_);
    for (const auto& entry : kept) held_ -= entry.first;
  }
  for (const auto& [length, region] : kept) unmap(region, length);
}

}  // namespace cairn
