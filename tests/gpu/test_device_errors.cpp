// Device-declared leaves on a process without a usable CUDA device (no GPU, no driver, or a
// build without CUDA): save, async save and restore fail on every rank with an Unsupported
// error naming the leaf and the reason, nothing is written, and detection leaves host data
// alone. Runs everywhere; skips where a device is usable.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cuda/device_memory.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using cairn::testing::reference_box;
using cairn::testing::SharedTempDir;
using cairn::testing::slab_box;

namespace {

const std::vector<std::int64_t> kShape = {12, 5};

// A tree with a host leaf and a device-declared leaf; the device pointer is never touched.
ArrayTree tree_with_device_leaf(const Comm& comm, std::vector<std::byte>& host) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  host = reference_box(DType::float32, kShape, box);
  ArrayTree tree;
  tree.add_array(
      "fields/host",
      {.dtype = DType::float32, .global_shape = kShape, .box = box, .data = host.data()});
  ArrayShard device{.dtype = DType::float32, .global_shape = kShape, .box = box};
  device.data = host.data();  // any non-null pointer: it is rejected before it is read
  device.memory = MemoryKind::cuda_device;
  tree.add_array("fields/on_gpu", device);
  return tree;
}

void expect_names_leaf(const Unsupported& e) {
  const std::string message = e.what();
  EXPECT_NE(message.find("fields/on_gpu"), std::string::npos) << message;
  EXPECT_NE(message.find(cuda::device_status().reason), std::string::npos) << message;
}

}  // namespace

TEST(DeviceErrors, DeviceLeafWithoutADeviceIsAClearError) {
  if (cuda::device_status().usable) GTEST_SKIP() << "a CUDA device is usable here";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::byte> host;
  const ArrayTree tree = tree_with_device_leaf(comm, host);

  try {
    save_tree(comm, tmp / "sync", tree);
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Unsupported& e) {
    expect_names_leaf(e);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "sync" / "cairn-tree.json"));

  AsyncCheckpointer ckpt(comm, std::make_shared<ArrayTreeHandler>());
  try {
    ckpt.save(tmp / "async", ArrayTreeSave(tree));
    ckpt.wait_until_finished();
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Unsupported& e) {
    expect_names_leaf(e);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "async"));
}

TEST(DeviceErrors, RestoringIntoADeviceLeafWithoutADeviceIsAClearError) {
  if (cuda::device_status().usable) GTEST_SKIP() << "a CUDA device is usable here";
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::byte> host;
  ArrayTree tree = tree_with_device_leaf(comm, host);
  ArrayTree host_only;
  host_only.add_array("fields/on_gpu", tree.at("fields/host").as_array());
  save_tree(comm, tmp / "saved", host_only);
  ArrayTree target;
  target.add_array("fields/on_gpu", tree.at("fields/on_gpu").as_array());
  try {
    restore_tree(comm, tmp / "saved", target);
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Unsupported& e) {
    expect_names_leaf(e);
  }
}

TEST(DeviceErrors, DetectionLeavesHostDataAlone) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  auto data = reference_box(DType::int32, kShape, box);
  ArrayTree tree;
  tree.add_array("fields/u",
                 {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = data.data()});
  save_tree(comm, tmp / "host", tree, {.detect_device_memory = true});
  std::vector<std::byte> back(data.size());
  ArrayTree target;
  target.add_array(
      "fields/u", {.dtype = DType::int32, .global_shape = kShape, .box = box, .data = back.data()});
  restore_tree(comm, tmp / "host", target, {.detect_device_memory = true});
  EXPECT_EQ(back, data);
}
