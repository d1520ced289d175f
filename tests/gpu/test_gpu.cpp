// Device arrays (label gpu): save/restore round trips of CUDA device shards in both formats,
// device and host shards of one leaf, pointer detection, async snapshots the caller may
// overwrite at once, N->M restores into device buffers and load-and-broadcast of replicated
// leaves (NCCL). Every test skips, saying why, on a machine without a usable CUDA device.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

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
constexpr DType kType = DType::float64;

std::size_t bytes_of(const Box& box) {
  return static_cast<std::size_t>(volume(box)) * dtype_size(kType);
}

// A device array leaf over `device` holding `box` of the global array.
ArrayShard device_shard(const DeviceArray& device, const Box& box, bool replicated = false) {
  ArrayShard shard;
  shard.dtype = kType;
  shard.global_shape = kShape;
  shard.box = box;
  shard.data = device.data();
  shard.memory = MemoryKind::cuda_device;
  shard.replicated = replicated;
  return shard;
}

// Saves the reference array from device buffers on every world rank, decomposed by `decompose`.
template <class Decompose>
void save_from_device(const Comm& comm, const std::filesystem::path& dir, StorageFormat format,
                      Decompose decompose) {
  const Box box = decompose(kShape, comm.rank(), comm.size());
  DeviceArray device(bytes_of(box));
  device.upload(reference_box(kType, kShape, box));
  ArrayTree tree;
  tree.add_array("fields/u", device_shard(device, box));
  // A small I/O buffer makes the staging run through many double-buffered chunks.
  save_tree(comm, dir, tree, {.format = format, .io_buffer_bytes = 4096});
}

}  // namespace

TEST(Gpu, DeviceShardsRoundTripInBothFormats) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    save_from_device(comm, dir, format, block_box);

    // Into device buffers of the same decomposition.
    const Box box = block_box(kShape, comm.rank(), comm.size());
    DeviceArray device(bytes_of(box));
    device.fill(0xEE);
    ArrayTree target;
    target.add_array("fields/u", device_shard(device, box));
    restore_tree(comm, dir, target);
    EXPECT_EQ(device.download(), reference_box(kType, kShape, box));

    // The files hold the host bytes: a host restore of the whole array sees them.
    const ArrayTree saved = restore_tree_as_saved(comm, dir, {.whole_arrays = true});
    const ArrayShard& whole = saved.at("fields/u").as_array();
    const auto expected = reference_box(kType, kShape, whole.box);
    EXPECT_EQ(0, std::memcmp(whole.data, expected.data(), expected.size()));
  }
}

TEST(Gpu, DeviceAndHostShardsOfOneLeafStreamDifferentRunCounts) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // Even ranks hold their block on the device (streamed in runs of 512 elements, each one
  // collective hdf5 write), odd ranks on the host (written in the first of those writes).
  const Box box = block_box(kShape, comm.rank(), comm.size());
  auto host = reference_box(kType, kShape, box);
  DeviceArray device(bytes_of(box));
  device.upload(host);
  ArrayShard shard = device_shard(device, box);
  if (comm.rank() % 2 == 1) {
    shard.data = host.data();
    shard.memory = MemoryKind::host;
  }
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    ArrayTree tree;
    tree.add_array("fields/u", shard);
    save_tree(comm, dir, tree, {.format = format, .io_buffer_bytes = 4096});
    EXPECT_TRUE(verify_tree(comm, dir).problems.empty());
    const ArrayTree saved = restore_tree_as_saved(comm, dir, {.whole_arrays = true});
    const ArrayShard& whole = saved.at("fields/u").as_array();
    const auto expected = reference_box(kType, kShape, whole.box);
    EXPECT_EQ(0, std::memcmp(whole.data, expected.data(), expected.size()));
  }
}

TEST(Gpu, DetectedDevicePointersAreStagedWhenAsked) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  DeviceArray device(bytes_of(box));
  device.upload(reference_box(kType, kShape, box));
  ArrayTree tree;
  ArrayShard shard = device_shard(device, box);
  shard.memory = MemoryKind::host;  // not declared: found by cudaPointerGetAttributes
  tree.add_array("fields/u", shard);
  save_tree(comm, tmp / "detected", tree, {.detect_device_memory = true});

  DeviceArray back(bytes_of(box));
  ArrayTree target;
  ArrayShard into = device_shard(back, box);
  into.memory = MemoryKind::host;
  target.add_array("fields/u", into);
  restore_tree(comm, tmp / "detected", target, {.detect_device_memory = true});
  EXPECT_EQ(back.download(), reference_box(kType, kShape, box));
}

TEST(Gpu, AsyncSnapshotLetsTheCallerOverwriteDeviceDataAtOnce) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = block_box(kShape, comm.rank(), comm.size());
  for (bool device_staging : {false, true}) {
    SCOPED_TRACE(device_staging ? "device-to-device snapshot" : "host staging");
    DeviceArray device(bytes_of(box));
    device.upload(reference_box(kType, kShape, box));
    ArrayTree tree;
    tree.add_array("fields/u", device_shard(device, box));
    const auto dir = tmp / (device_staging ? "d2d" : "d2h");
    AsyncCheckpointer ckpt(
        comm, std::make_shared<ArrayTreeHandler>(),
        {.staging_bytes = std::size_t{64} << 20, .device_staging = device_staging});
    ckpt.save(dir, ArrayTreeSave(tree));
    device.fill(0x55);  // the caller goes on computing
    ckpt.wait_until_finished();

    DeviceArray back(bytes_of(box));
    ArrayTree target;
    target.add_array("fields/u", device_shard(back, box));
    const ArrayTreeRestore args(target);
    (void)ckpt.restore(dir, &args);
    EXPECT_EQ(back.download(), reference_box(kType, kShape, box));
  }
}

TEST(Gpu, NToMRestoreIntoDeviceBuffers) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    {
      Comm comm(MPI_COMM_WORLD);
      save_from_device(comm, dir, format, slab_box);
    }
    // Restore on fewer ranks (n-1, at least 1) with another decomposition.
    const int m = std::max(1, world_size() - 1);
    if (auto comm = first_ranks(m)) {
      const Box box = block_box(kShape, comm->rank(), comm->size());
      DeviceArray device(bytes_of(box));
      device.fill(0xEE);
      ArrayTree target;
      target.add_array("fields/u", device_shard(device, box));
      restore_tree(*comm, dir, target);
      EXPECT_EQ(device.download(), reference_box(kType, kShape, box)) << to_string(box);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(Gpu, ReplicatedDeviceLeafIsLoadedOnceAndBroadcast) {
  CAIRN_REQUIRE_CUDA_DEVICE();
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box whole{{0, 0}, kShape};
  {
    DeviceArray device(bytes_of(whole));
    device.upload(reference_box(kType, kShape, whole));
    ArrayTree tree;
    tree.add_array("weights", device_shard(device, whole, true));
    CheckpointManager manager(comm, tmp.path(), {.enable_async = false});
    manager.save(1, ArrayTreeSave(tree));
  }
  // The manager's single-host load: the primary reads, NCCL (or MPI) broadcasts.
  CheckpointManager manager(comm, tmp.path(), {.single_host_load_and_broadcast = true});
  DeviceArray device(bytes_of(whole));
  device.fill(0xEE);
  ArrayTree target;
  target.add_array("weights", device_shard(device, whole, true));
  const ArrayTreeRestore args(target);
  (void)manager.restore(1, &args);
  EXPECT_EQ(device.download(), reference_box(kType, kShape, whole));
}
