// TreeRestoreOptions::restore_concurrent_bytes (Orbax's restore_concurrent_gb) bounds what a
// restore holds in flight: counting every byte allocated with operator new while restore_tree()
// runs, the peak stays below the option plus two checksum chunks and a small constant, for
// restores on the same decomposition and N->M, into contiguous and strided targets, and for
// restores that cast bfloat16 into float64, in every format, whatever the size of the leaves
// (several times the bound).
#include <gtest/gtest.h>
#include <malloc.h>

#include <cairn/storage.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace {

std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

void* counted(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  const auto n = static_cast<std::int64_t>(malloc_usable_size(p));
  const std::int64_t now = g_live.fetch_add(n) + n;
  std::int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void uncounted(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)));
  std::free(p);
}

void* aligned(std::size_t n, std::align_val_t a) {
  const auto align = static_cast<std::size_t>(a);
  return std::aligned_alloc(align, (std::max<std::size_t>(n, 1) + align - 1) / align * align);
}

}  // namespace

// Every allocation of the process goes through these, so that a test can see how many bytes
// the restore holds at its peak.
void* operator new(std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new[](std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(aligned(n, a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(aligned(n, a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(std::max<std::size_t>(n, 1));
  return p == nullptr ? nullptr : counted(p);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(std::max<std::size_t>(n, 1));
  return p == nullptr ? nullptr : counted(p);
}
void operator delete(void* p) noexcept { uncounted(p); }
void operator delete[](void* p) noexcept { uncounted(p); }
void operator delete(void* p, std::size_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::size_t) noexcept { uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { uncounted(p); }

namespace cairn::testing {
namespace {

constexpr std::size_t kConcurrent = std::size_t{1} << 20;
constexpr std::size_t kChunk = std::size_t{16} << 10;
// Index, plan and run lists of a few leaves, the 64 KiB block of a cast.
constexpr std::int64_t kConstant = std::int64_t{320} << 10;
constexpr std::int64_t kCols = 512;

double value_at(std::int64_t i) { return static_cast<double>(i % 1000) * 0.25 - 17.0; }

// Peak bytes allocated beyond what was live when restore_tree() began.
std::int64_t restore_peak(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                          const TreeRestoreOptions& options) {
  comm.barrier("measure");
  const std::int64_t before = g_live.load();
  g_peak.store(before);
  restore_tree(comm, dir, target, options);
  return g_peak.load() - before;
}

TEST(RestoreMemory, RestoreConcurrentBytesBoundsWhatARestoreAllocates) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  // 8 MiB of float64 per rank and leaf: eight times the bound.
  const std::vector<std::int64_t> shape = {2048 * comm.size(), kCols};
  const Box saved_box = slab_box(shape, comm.rank(), comm.size());
  std::vector<double> data(static_cast<std::size_t>(volume(saved_box)));
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = value_at(saved_box.offset[0] * kCols + static_cast<std::int64_t>(i));
  }
  ArrayTree tree;
  tree.add_array("u", ArrayShard::host(data.data(), shape, saved_box));
  tree.add_array("w", ArrayShard::host(data.data(), shape, saved_box));
  const TreeRestoreOptions options{.restore_concurrent_bytes = kConcurrent, .allow_cast = true};
  const std::int64_t allowed = static_cast<std::int64_t>(kConcurrent + 2 * kChunk) + kConstant;
  for (StorageFormat format : available_formats()) {
    const std::string name(storage_format_name(format));
    SCOPED_TRACE(name);
    const auto dir = tmp / name;
    save_tree(comm, dir, tree,
              {.format = format,
               .checksum_chunk_bytes = kChunk,
               .save_args = {{"w", {.dtype = DType::bfloat16}}}});
    // Into the same decomposition (row slabs: one long run of each shard) and another one
    // (blocks: a run per row), contiguous and strided (every other element).
    for (bool blocks : {false, true}) {
      const Box box = blocks ? block_box(shape, comm.rank(), comm.size())
                             : slab_box(shape, comm.rank(), comm.size());
      const auto ny = box.extent[0];
      const auto nx = box.extent[1];
      for (const char* leaf : {"u", "w"}) {
        for (bool strided : {false, true}) {
          const std::string what = std::string(leaf) + (strided ? " strided" : " contiguous") +
                                   (blocks ? " blocks" : " slabs");
          SCOPED_TRACE(what);
          std::vector<double> got(static_cast<std::size_t>(ny * nx * (strided ? 2 : 1)), -1.0);
          ArrayShard shard = ArrayShard::host(got.data(), shape, box);
          if (strided) shard.strides = {2 * nx, 2};
          ArrayTree target;
          target.add_array(leaf, shard);
          const std::int64_t peak = restore_peak(comm, dir, target, options);
          EXPECT_LT(peak, allowed)
              << "a restore of " << (ny * nx * 8) / 1024 << " KiB on this rank allocated "
              << peak / 1024 << " KiB with restore_concurrent_bytes of " << kConcurrent / 1024
              << " KiB";
          std::fprintf(stderr, "[rank %d] %s %s: peak %lld KiB of %lld KiB allowed\n", comm.rank(),
                       name.c_str(), what.c_str(), static_cast<long long>(peak >> 10),
                       static_cast<long long>(allowed >> 10));
          const std::int64_t step = strided ? 2 : 1;
          for (std::int64_t y = 0; y < ny; y += 97) {
            for (std::int64_t x = 0; x < nx; ++x) {
              const double saved = value_at((box.offset[0] + y) * kCols + box.offset[1] + x);
              const double want =
                  leaf[0] == 'w' ? bfloat16_to_double(bfloat16_from_double(saved)) : saved;
              ASSERT_EQ(got[static_cast<std::size_t>((y * nx + x) * step)], want);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cairn::testing
