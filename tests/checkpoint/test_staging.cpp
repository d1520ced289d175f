// StagingArea, the memory of async saves' copies: returned buffers are handed out again
// (their memory is not mapped anew), the memory held stays within the budget when the sizes
// change, acquire() waits for the budget and rejects what can never fit, and a thread that
// acquires while another returns never sees two live buffers share memory. Each rank runs
// the same local checks (StagingArea is not collective).
#include <cairn/handler.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace cairn;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

using Buffer = std::shared_ptr<std::byte[]>;

void fill(const Buffer& buffer, std::size_t bytes, unsigned char value) {
  std::memset(buffer.get(), value, bytes);
}

bool holds(const Buffer& buffer, std::size_t bytes, unsigned char value) {
  const auto* p = reinterpret_cast<const unsigned char*>(buffer.get());
  for (std::size_t i = 0; i < bytes; i += 4096) {
    if (p[i] != value) return false;
  }
  return p[bytes - 1] == value;
}

}  // namespace

TEST(Staging, ReturnedBuffersAreHandedOutAgainWithTheirMemory) {
  StagingArea area(64 * kMiB);
  const std::vector<std::size_t> sizes{8 * kMiB, 8 * kMiB, 5 * kMiB, 2 * kMiB};
  std::map<std::byte*, unsigned char> written;  // address -> value filled in
  {
    std::vector<Buffer> first;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      first.push_back(area.acquire(sizes[i]));
      ASSERT_NE(first.back(), nullptr);
      fill(first.back(), sizes[i], static_cast<unsigned char>(0x11 * (i + 1)));
      written[first.back().get()] = static_cast<unsigned char>(0x11 * (i + 1));
    }
  }
  EXPECT_EQ(area.in_use(), 0u);
  // 5 MiB is held as 6 MiB (whole huge pages).
  EXPECT_EQ(area.held(), 24 * kMiB);
  for (int cycle = 0; cycle < 3; ++cycle) {
    SCOPED_TRACE(cycle);
    std::vector<Buffer> again;
    for (std::size_t bytes : sizes) {
      again.push_back(area.acquire(bytes));
      ASSERT_NE(again.back(), nullptr);
      // The same memory as before, still holding what was written (a new anonymous mapping
      // would read as zeros).
      const auto it = written.find(again.back().get());
      ASSERT_NE(it, written.end()) << "a new buffer for " << bytes << " bytes";
      EXPECT_TRUE(holds(again.back(), bytes, it->second));
    }
    EXPECT_EQ(area.held(), 24 * kMiB);
    EXPECT_EQ(area.in_use(), 23 * kMiB);
  }
  EXPECT_EQ(area.peak(), 23 * kMiB);
  area.trim();
  EXPECT_EQ(area.held(), 0u);
}

TEST(Staging, HeldMemoryStaysWithinTheBudgetWhenSizesChange) {
  const std::size_t capacity = 16 * kMiB;
  StagingArea area(capacity);
  // Each round stages shards of one size, as saves of different trees would.
  for (std::size_t shard : {4 * kMiB, 6 * kMiB, 2 * kMiB, 8 * kMiB, 4 * kMiB}) {
    SCOPED_TRACE(shard);
    std::vector<Buffer> round;
    while (area.in_use() + shard <= capacity) {
      round.push_back(area.acquire(shard));
      ASSERT_NE(round.back(), nullptr);
      fill(round.back(), shard, 0x3C);
      EXPECT_LE(area.held(), capacity);
    }
    EXPECT_GE(area.held(), round.size() * shard);
  }
  // A buffer in use is not unmapped by trim(); once returned it is kept again.
  Buffer kept = area.acquire(4 * kMiB);
  area.trim();
  EXPECT_EQ(area.held(), 4 * kMiB);
  kept.reset();
  EXPECT_EQ(area.held(), 4 * kMiB);
  area.trim();
  EXPECT_EQ(area.held(), 0u);
  // Small buffers are not mapped by the area.
  Buffer small = area.acquire(64 * 1024);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(area.held(), 0u);
  EXPECT_EQ(area.in_use(), 64u * 1024);
}

TEST(Staging, WaitsForTheBudgetAndRejectsWhatCanNeverFit) {
  StagingArea area(12 * kMiB);
  EXPECT_EQ(area.acquire(12 * kMiB + 1), nullptr);
  Buffer held = area.acquire(8 * kMiB);
  ASSERT_NE(held, nullptr);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    Buffer second = area.acquire(8 * kMiB);
    acquired = second != nullptr;
    EXPECT_LE(area.in_use(), area.capacity());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acquired) << "acquire() did not wait for the budget";
  held.reset();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_EQ(area.in_use(), 0u);
  EXPECT_EQ(area.peak(), 8 * kMiB);
}

TEST(Staging, ConcurrentAcquireAndReturnKeepBuffersApart) {
  // One thread acquires and fills buffers (the caller's thread in a save), another checks
  // and returns them (the background writer). A buffer handed out twice while in use would
  // be overwritten by the other and fail the check.
  const std::size_t capacity = 24 * kMiB;
  StagingArea area(capacity);
  const std::vector<std::size_t> sizes{2 * kMiB, 6 * kMiB, 64 * 1024, 4 * kMiB, 8 * kMiB};
  struct Staged {
    Buffer buffer;
    std::size_t bytes;
    unsigned char value;
  };
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Staged> queue;
  constexpr int kCount = 400;
  std::thread writer([&] {
    for (int n = 0; n < kCount; ++n) {
      Staged staged;
      {
        std::unique_lock lock(mutex);
        ready.wait(lock, [&] { return !queue.empty(); });
        staged = std::move(queue.front());
        queue.pop_front();
      }
      EXPECT_TRUE(holds(staged.buffer, staged.bytes, staged.value)) << "buffer " << n;
      EXPECT_LE(area.held(), capacity);
    }
  });
  for (int n = 0; n < kCount; ++n) {
    const std::size_t bytes = sizes[static_cast<std::size_t>(n) % sizes.size()];
    Staged staged{area.acquire(bytes), bytes, static_cast<unsigned char>(n % 251 + 1)};
    ASSERT_NE(staged.buffer, nullptr);
    fill(staged.buffer, bytes, staged.value);
    EXPECT_LE(area.in_use(), capacity);
    {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(staged));
    }
    ready.notify_one();
  }
  writer.join();
  EXPECT_EQ(area.in_use(), 0u);
  EXPECT_LE(area.peak(), capacity);
  EXPECT_LE(area.held(), capacity);
}
