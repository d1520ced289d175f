// Device arrays (label gpu), the paths test_gpu.cpp leaves out: compressed and dtype-cast
// device leaves, sparse saves restored into device buffers (the uncovered parts are read back
// from the device first and kept), the async CheckpointManager with incremental saves from
// device memory (device-to-device snapshots and shards over the staging budget), replicated
// leaves broadcast into device buffers on some ranks and host buffers on others, an NCCL
// communicator over ranks with distinct devices, strided device views (refused, declared or
// detected), device work queued on the legacy default stream before a save or restore (seen
// by the save, finished before the restore writes), and 64 MiB leaves through the default
// staging buffers. Every test skips, saying why, on a machine without a usable CUDA device.
#include <cairn/checkpointer.hpp>
#include <cairn/config.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"
#if CAIRN_HAVE_NCCL
#include "cuda/nccl_comm.hpp"
#endif

using namespace cairn;
using cairn::testing::block_box;
using cairn::testing::DeviceArray;
using cairn::testing::first_ranks;
using cairn::testing::reference_box;
using cairn::testing::SharedTempDir;
using cairn::testing::slab_box;
using cairn::testing::world_size;

namespace {

const std::vector<std::int64_t> kShape = {37, 29};

// float64 values of `box` that float32 holds exactly: 0.25 * (global linear index) + `shift`.
std::vector<std::byte> exact_values(const Box& box, double shift = 1.0) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(volume(box)));
  for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
    for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j) {
      values.push_back(0.25 * static_cast<double>(i * kShape[1] + j) + shift);
    }
  }
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::size_t bytes_of(const Box& box, DType dtype = DType::float64) {
  return static_cast<std::size_t>(volume(box)) * dtype_size(dtype);
}

ArrayShard device_shard(const DeviceArray& device, const Box& box, DType dtype = DType::float64,
                        const std::vector<std::int64_t>& shape = kShape) {
  ArrayShard shard;
  shard.dtype = dtype;
  shard.global_shape = shape;
  shard.box = box;
  shard.data = device.data();
  shard.memory = MemoryKind::cuda_device;
  return shard;
}

// Restores leaf `path` of `dir` into a device buffer holding `box`, first filled with 0xEE.
std::vector<std::byte> restore_into_device(const Comm& comm, const std::filesystem::path& dir,
                                           const std::string& path, const Box& box,
                                           TreeRestoreOptions options = {}) {
  DeviceArray device(bytes_of(box));
  device.fill(0xEE);
  ArrayTree target;
  target.add_array(path, device_shard(device, box));
  restore_tree(comm, dir, target, options);
  return device.download();
}

// Page-locked host memory holding `bytes` (so that copies from it are asynchronous).
class PinnedCopy {
 public:
  explicit PinnedCopy(const std::vector<std::byte>& bytes) : size_(bytes.size()) {
    if (cudaMallocHost(&data_, size_) != cudaSuccess) throw std::runtime_error("cudaMallocHost");
    std::memcpy(data_, bytes.data(), size_);
  }
  ~PinnedCopy() { (void)cudaFreeHost(data_); }
  PinnedCopy(const PinnedCopy&) = delete;
  PinnedCopy& operator=(const PinnedCopy&) = delete;
  [[nodiscard]] const void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

void CUDART_CB sleep_300_ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

// Queues on the legacy default stream, as an application's kernels usually are, a host
// function that sleeps 300 ms and then `then` (a copy or memset); returns at once.
template <class Then>
void queue_late(Then then) {
  ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, sleep_300_ms, nullptr), cudaSuccess);
  ASSERT_EQ(then(), cudaSuccess);
}

}  // namespace

TEST(GpuPaths, CompressedAndCastDeviceLeavesRoundTrip) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kShape, comm.rank(), comm.size());
  const auto reference = reference_box(DType::float64, kShape, box);
  const auto exact = exact_values(box);
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    DeviceArray zipped(bytes_of(box));
    zipped.upload(reference);
    DeviceArray cast(bytes_of(box));
    cast.upload(exact);
    ArrayTree tree;
    tree.add_array("fields/zipped", device_shard(zipped, box));
    tree.add_array("fields/cast", device_shard(cast, box));
    TreeSaveOptions options{.format = format, .io_buffer_bytes = 4096};
#if CAIRN_HAVE_ZSTD
    options.save_args["fields/zipped"].compression = Compression::zstd(3);
#endif
    options.save_args["fields/cast"].dtype = DType::float32;
    save_tree(comm, dir, tree, options);
    EXPECT_TRUE(verify_tree(comm, dir).problems.empty());
    EXPECT_EQ(restore_into_device(comm, dir, "fields/zipped", box), reference);
    // Stored as float32, read back into float64 device memory with a restore-time cast.
    DeviceArray back(bytes_of(box));
    back.fill(0xEE);
    ArrayTree target;
    target.add_array("fields/cast", device_shard(back, box));
    restore_tree(comm, dir, target, {.allow_cast = true});
    EXPECT_EQ(back.download(), exact);
    // And into a float32 device buffer (no cast of the stored bytes).
    DeviceArray narrow(bytes_of(box, DType::float32));
    narrow.fill(0xEE);
    ArrayTree narrow_target;
    narrow_target.add_array("fields/cast", device_shard(narrow, box, DType::float32));
    restore_tree(comm, dir, narrow_target, {.allow_cast = true});
    std::vector<float> expected(static_cast<std::size_t>(volume(box)));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      double v = 0;
      std::memcpy(&v, exact.data() + i * sizeof(double), sizeof(double));
      expected[i] = static_cast<float>(v);
    }
    const auto got = narrow.download();
    ASSERT_EQ(got.size(), expected.size() * sizeof(float));
    EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.size()));
  }
}

TEST(GpuPaths, SparseSaveRestoredIntoDeviceKeepsUncoveredElements) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // Rows [0, 20) are saved, split over the ranks; rows [20, 37) are not.
  const std::vector<std::int64_t> saved_shape = {20, kShape[1]};
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = slab_box(saved_shape, comm.rank(), comm.size());
    DeviceArray device(bytes_of(box));
    device.upload(reference_box(DType::float64, kShape, box));
    ArrayTree tree;
    tree.add_array("fields/u", device_shard(device, box));
    save_tree(comm, dir, tree, {.format = format, .allow_sparse = true, .io_buffer_bytes = 4096});

    // Every rank restores the whole array into its device, through small runs.
    const Box whole{{0, 0}, kShape};
    const auto got =
        restore_into_device(comm, dir, "fields/u", whole, {.restore_concurrent_bytes = 8192});
    auto expected = reference_box(DType::float64, kShape, whole);
    const std::size_t saved_bytes = bytes_of(Box{{0, 0}, saved_shape});
    std::fill(expected.begin() + static_cast<std::ptrdiff_t>(saved_bytes), expected.end(),
              std::byte{0xEE});
    EXPECT_EQ(got, expected);
  }
}

TEST(GpuPaths, AsyncIncrementalManagerSavesFromDeviceMemory) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kShape, comm.rank(), comm.size());
  const auto first = exact_values(box, 1.0);
  // The second step changes the rows from 30 on.
  auto second = first;
  for (std::int64_t i = 0; i < volume(box); ++i) {
    const std::int64_t row = box.offset[0] + i / std::max<std::int64_t>(box.extent[1], 1);
    if (row >= 30) second[static_cast<std::size_t>(i) * 8] ^= std::byte{0x01};
  }
  struct Case {
    const char* name;
    AsyncOptions async;
  };
  const Case cases[] = {
      {"device-to-device snapshots",
       {.staging_bytes = std::size_t{64} << 20, .device_staging = true}},
      {"host staging", {.staging_bytes = std::size_t{64} << 20}},
      // A shard over the whole budget is written from the caller's device memory before
      // save() returns.
      {"over the staging budget", {.staging_bytes = 1024}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto root = tmp / (std::string("m") + std::to_string(&c - cases));
    DeviceArray device(bytes_of(box));
    ArrayTree tree;
    tree.add_array("fields/u", device_shard(device, box));
    {
      CheckpointManager manager(comm, root, {.incremental = true, .async = c.async});
      device.upload(first);
      ASSERT_TRUE(manager.save(1, ArrayTreeSave(tree, {.checksum_chunk_bytes = 1024})));
      device.upload(second);  // the caller goes on at once
      ASSERT_TRUE(manager.save(2, ArrayTreeSave(tree, {.checksum_chunk_bytes = 1024})));
      device.fill(0x55);
      manager.wait_until_finished();
    }
    CheckpointManager manager(comm, root, {.enable_async = false});
    for (std::int64_t step : {1, 2}) {
      SCOPED_TRACE("step " + std::to_string(step));
      DeviceArray back(bytes_of(box));
      back.fill(0xEE);
      ArrayTree target;
      target.add_array("fields/u", device_shard(back, box));
      const ArrayTreeRestore args(target);
      (void)manager.restore(step, &args);
      EXPECT_EQ(back.download(), step == 1 ? first : second);
    }
  }
}

TEST(GpuPaths, ReplicatedLeafBroadcastIntoDeviceAndHostBuffers) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box whole{{0, 0}, kShape};
  const auto reference = reference_box(DType::float64, kShape, whole);
  {
    DeviceArray device(bytes_of(whole));
    device.upload(reference);
    ArrayTree tree;
    ArrayShard shard = device_shard(device, whole);
    shard.replicated = true;
    tree.add_array("weights", shard);
    save_tree(comm, tmp / "replicated", tree);
  }
  // Even ranks restore into device memory, odd ranks into host memory: not every rank is on a
  // device, so the primary's read goes over MPI, staged through the host on device ranks.
  DeviceArray device(bytes_of(whole));
  device.fill(0xEE);
  std::vector<std::byte> host(bytes_of(whole), std::byte{0xEE});
  ArrayShard shard = device_shard(device, whole);
  shard.replicated = true;
  if (comm.rank() % 2 == 1) {
    shard.data = host.data();
    shard.memory = MemoryKind::host;
  }
  ArrayTree target;
  target.add_array("weights", shard);
  restore_tree(comm, tmp / "replicated", target, {.load_and_broadcast = true});
  EXPECT_EQ(comm.rank() % 2 == 1 ? host : device.download(), reference);
}

TEST(GpuPaths, NcclBroadcastOverRanksWithDistinctDevices) {
  CAIRN_REQUIRE_CUDA_DEVICE();
#if !CAIRN_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#else
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  // Ranks [0, k) each use device rank % devices: distinct for k <= devices.
  const int k = std::min(devices, world_size());
  if (auto comm = first_ranks(k)) {
    const Box whole{{0, 0}, kShape};
    const auto reference = reference_box(DType::float64, kShape, whole);
    DeviceArray device(bytes_of(whole));
    if (comm->is_primary()) {
      device.upload(reference);
    } else {
      device.fill(0xEE);
    }
    cuda::Stream stream("nccl test");
    cuda::NcclComm nccl(*comm, "nccl test");
    nccl.broadcast(device.data(), bytes_of(whole), comm->primary(), stream, "nccl test");
    EXPECT_EQ(device.download(), reference);
  }
  MPI_Barrier(MPI_COMM_WORLD);
#endif
}

TEST(GpuPaths, StridedDeviceViewsAreRefused) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  // Every other column of a buffer twice as wide.
  DeviceArray device(2 * bytes_of(box));
  ArrayShard shard = device_shard(device, box);
  shard.strides = {2 * box.extent[1], 2};
  // Declared device memory: refused when the leaf is added.
  ArrayTree declared;
  EXPECT_THROW(declared.add_array("fields/u", shard), Unsupported);
  // Host-declared but found to be device memory: refused by the save, on every rank, before
  // anything is written.
  shard.memory = MemoryKind::host;
  ArrayTree detected;
  detected.add_array("fields/u", shard);
  try {
    save_tree(comm, tmp / "strided", detected, {.detect_device_memory = true});
    ADD_FAILURE() << "a strided view of device memory was saved";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("strided view of CUDA device memory"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "strided" / "cairn-tree.json"));
}

TEST(GpuPaths, SaveAndRestoreWaitForDeviceWorkQueuedBeforeThem) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kShape, comm.rank(), comm.size());
  const std::size_t bytes = bytes_of(box);
  const auto before = exact_values(box, 1.0);
  const auto after = exact_values(box, 2.0);
  const PinnedCopy pinned(after);
  // A copy of `after` queued before the save must be in the checkpoint: in a plain save, an
  // async save staged on the host and one snapshot on the device.
  const char* kinds[] = {"save_tree", "async, host staging", "async, device staging"};
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kinds[kind]);
    const auto dir = tmp / ("save" + std::to_string(kind));
    DeviceArray device(bytes);
    device.upload(before);
    ArrayTree tree;
    tree.add_array("fields/u", device_shard(device, box));
    queue_late([&] {
      return cudaMemcpyAsync(device.data(), pinned.data(), bytes, cudaMemcpyHostToDevice,
                             cudaStreamLegacy);
    });
    if (kind == 0) {
      save_tree(comm, dir, tree);
    } else {
      AsyncCheckpointer ckpt(comm, std::make_shared<ArrayTreeHandler>(),
                             {.staging_bytes = std::size_t{64} << 20, .device_staging = kind == 2});
      ckpt.save(dir, ArrayTreeSave(tree));
      ckpt.wait_until_finished();
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(restore_into_device(comm, dir, "fields/u", box), after)
        << "the save read the device buffer before the copy queued ahead of it";
  }
  // A memset of the target queued before a restore must not overwrite what it restores.
  DeviceArray target(bytes);
  target.fill(0xEE);
  queue_late([&] { return cudaMemsetAsync(target.data(), 0, bytes, cudaStreamLegacy); });
  ArrayTree into;
  into.add_array("fields/u", device_shard(target, box));
  restore_tree(comm, tmp / "save0", into);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(target.download(), after)
      << "work queued before the restore overwrote the restored values";
}

TEST(GpuPaths, LargeDeviceLeavesCrossManyStagingBuffers) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // 64 MiB of float64 with distinct bytes in every element, through the default buffers (two
  // 8 MiB pinned halves of the 16 MiB I/O buffer): each shard crosses several of them.
  const std::vector<std::int64_t> shape = {2048, 4096};
  const Box box = block_box(shape, comm.rank(), comm.size());
  const auto reference = reference_box(DType::float64, shape, box);
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    DeviceArray device(reference.size());
    device.upload(reference);
    ArrayTree tree;
    tree.add_array("big", device_shard(device, box, DType::float64, shape));
    save_tree(comm, dir, tree, {.format = format});
    // Into another decomposition of the same ranks.
    const Box slab = slab_box(shape, comm.rank(), comm.size());
    DeviceArray back(bytes_of(slab));
    back.fill(0xEE);
    ArrayTree target;
    target.add_array("big", device_shard(back, slab, DType::float64, shape));
    restore_tree(comm, dir, target);
    EXPECT_TRUE(back.download() == reference_box(DType::float64, shape, slab));
  }
  // An async device-to-device snapshot of it, overwritten at once.
  DeviceArray device(reference.size());
  device.upload(reference);
  ArrayTree tree;
  tree.add_array("big", device_shard(device, box, DType::float64, shape));
  {
    AsyncCheckpointer ckpt(comm, std::make_shared<ArrayTreeHandler>(),
                           {.staging_bytes = std::size_t{256} << 20, .device_staging = true});
    ckpt.save(tmp / "async", ArrayTreeSave(tree));
    device.fill(0x55);
    ckpt.wait_until_finished();
  }
  DeviceArray back(reference.size());
  back.fill(0xEE);
  ArrayTree target;
  target.add_array("big", device_shard(back, box, DType::float64, shape));
  restore_tree(comm, tmp / "async", target);
  EXPECT_TRUE(back.download() == reference);
}
