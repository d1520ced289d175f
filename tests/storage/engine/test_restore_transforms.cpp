// Restoring into a tree of another layout than the saved one. Resized leaves
// (TreeRestoreOptions::resize_leaves): a larger target is padded with the fill value, a smaller
// one truncates the array, in every format, into contiguous and strided targets, at any rank
// count; a leaf not listed, another number of dimensions or a fill value the dtype cannot hold
// is an error on every rank. Renamed leaves (TreeRestoreOptions::renames): regular-expression
// rules with groups, default_to_original on and off, and bad rules.
#include <gtest/gtest.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kSaved = {13, 10};

// Saves "u" (float64, the reference array of kSaved, block-decomposed) under `dir`.
void save_reference(const Comm& comm, const std::filesystem::path& dir, StorageFormat format) {
  const Box box = block_box(kSaved, comm.rank(), comm.size());
  auto data = reference_box(DType::float64, kSaved, box);
  ArrayTree tree;
  tree.add_array(
      "u", {.dtype = DType::float64, .global_shape = kSaved, .box = box, .data = data.data()});
  save_tree(comm, dir, tree, {.format = format});
}

// The reference value of element (y, x) of the saved array.
double saved_value(std::int64_t y, std::int64_t x) {
  double value = 0;
  const auto bytes = reference_box(DType::float64, kSaved, Box{{y, x}, {1, 1}});
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

// Restores "u" into this rank's row slab of `shape` (contiguous, or every other element of a
// buffer twice as wide when `strided`) with fill -1.5, and checks every element.
void expect_resized(const Comm& comm, const std::filesystem::path& dir,
                    const std::vector<std::int64_t>& shape, bool strided) {
  const Box box = slab_box(shape, comm.rank(), comm.size());
  const std::int64_t ny = box.extent[0];
  const std::int64_t nx = box.extent[1];
  const std::int64_t stride = strided ? 2 : 1;
  std::vector<double> buffer(static_cast<std::size_t>(ny * nx * stride), 7.0);
  ArrayShard shard{
      .dtype = DType::float64, .global_shape = shape, .box = box, .data = buffer.data()};
  if (strided) shard.strides = {nx * stride, stride};
  ArrayTree target;
  target.add_array("u", shard);
  restore_tree(comm, dir, target, {.resize_leaves = {{"u", Scalar(-1.5)}}});
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t x = 0; x < nx; ++x) {
      const std::int64_t gy = box.offset[0] + y;
      const std::int64_t gx = box.offset[1] + x;
      const double want = gy < kSaved[0] && gx < kSaved[1] ? saved_value(gy, gx) : -1.5;
      ASSERT_EQ(buffer[static_cast<std::size_t>((y * nx + x) * stride)], want)
          << "element (" << gy << ", " << gx << ") of shape " << shape[0] << "x" << shape[1];
      if (strided) {
        EXPECT_EQ(buffer[static_cast<std::size_t>((y * nx + x) * stride + 1)], 7.0);
      }
    }
  }
}

TEST(RestoreResize, LargerTargetsArePaddedAndSmallerOnesTruncate) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    save_reference(comm, dir, format);
    for (bool strided : {false, true}) {
      SCOPED_TRACE(strided ? "strided target" : "contiguous target");
      expect_resized(comm, dir, {16, 12}, strided);  // padded in both dimensions
      expect_resized(comm, dir, {7, 4}, strided);    // truncated
      expect_resized(comm, dir, {5, 14}, strided);   // truncated rows, padded columns
    }
  }
}

TEST(RestoreResize, MisuseIsAnErrorOnEveryRank) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "saved";
  save_reference(comm, dir, StorageFormat::posix);
  const auto attempt = [&](const std::vector<std::int64_t>& shape, DType dtype,
                           const TreeRestoreOptions& options) {
    ArrayTree target;
    const Box box = slab_box(shape, comm.rank(), comm.size());
    target.add_owned_array("u", dtype, shape, box);
    restore_tree(comm, dir, target, options);
  };
  // Not listed in resize_leaves: the message says how to allow it.
  try {
    attempt({16, 12}, DType::float64, {});
    ADD_FAILURE() << "a target of another shape was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("resize_leaves"), std::string::npos) << e.what();
  }
  // Listed, but with another number of dimensions.
  EXPECT_THROW(attempt({13, 10, 2}, DType::float64, {.resize_leaves = {{"u", Scalar(0.0)}}}),
               InvalidArgument);
  // A fill value the target dtype cannot hold.
  try {
    attempt({20, 10}, DType::int32, {.allow_cast = true, .resize_leaves = {{"u", Scalar(0.5)}}});
    ADD_FAILURE() << "0.5 was accepted as an int32 fill value";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("fill value of leaf 'u'"), std::string::npos) << e.what();
  }
}

// An older program saved "params/layer<i>/w" (arrays) and "step" (a scalar); the new one
// restores them as "blocks/<i>/weight" and "iteration", with "time" unchanged.
TEST(RestoreRenames, RulesMapTargetLeavesToSavedOnes) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "old_layout";
  const Box box = slab_box(kSaved, comm.rank(), comm.size());
  std::vector<std::vector<std::byte>> layers;
  ArrayTree saved;
  for (int i = 0; i < 3; ++i) {
    layers.push_back(reference_box(DType::float64, kSaved, box));
    for (auto& b : layers.back()) b ^= static_cast<std::byte>(i);
    saved.add_array("params/layer" + std::to_string(i) + "/w", {.dtype = DType::float64,
                                                                .global_shape = kSaved,
                                                                .box = box,
                                                                .data = layers.back().data()});
  }
  saved.add_scalar("step", Scalar(std::int64_t{42}));
  saved.add_scalar("time", Scalar(2.5));
  save_tree(comm, dir, saved, {});

  const TreeRestoreOptions options{
      .renames = {{R"(blocks/(\d+)/weight)", "params/layer$1/w"}, {"iteration", "step"}}};
  ArrayTree target;
  for (int i = 0; i < 3; ++i) {
    target.add_owned_array("blocks/" + std::to_string(i) + "/weight", DType::float64, kSaved, box);
  }
  target.add_scalar("iteration", Scalar(std::int64_t{0}));
  target.add_scalar("time", Scalar(0.0));
  restore_tree(comm, dir, target, options);
  for (int i = 0; i < 3; ++i) {
    const ArrayShard& got = target.find("blocks/" + std::to_string(i) + "/weight")->as_array();
    EXPECT_EQ(std::memcmp(got.data, layers[static_cast<std::size_t>(i)].data(),
                          layers[static_cast<std::size_t>(i)].size()),
              0)
        << "layer " << i;
  }
  EXPECT_EQ(target.find("iteration")->as_scalar().as<std::int64_t>(), 42);
  EXPECT_EQ(target.find("time")->as_scalar().as<double>(), 2.5);

  // Without default_to_original, "time" (no rule) is not read: NotFound naming it, unless
  // optional.
  ArrayTree strict;
  strict.add_scalar("iteration", Scalar(std::int64_t{0}));
  strict.add_scalar("time", Scalar(0.0));
  try {
    restore_tree(comm, dir, strict, {.renames = options.renames, .default_to_original = false});
    ADD_FAILURE() << "a leaf no rule matches was read without default_to_original";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("'time'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("default_to_original"), std::string::npos) << e.what();
  }
  restore_tree(
      comm, dir, strict,
      {.optional_leaves = {"time"}, .renames = options.renames, .default_to_original = false});
  EXPECT_EQ(strict.find("iteration")->as_scalar().as<std::int64_t>(), 42);
  EXPECT_EQ(strict.find("time")->as_scalar().as<double>(), 0.0);
}

TEST(RestoreRenames, BadRulesAreInvalidArgumentAndMissingSourcesNotFound) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "saved";
  save_reference(comm, dir, StorageFormat::posix);
  const auto attempt = [&](const TreeRestoreOptions& options) {
    ArrayTree target;
    target.add_owned_array("v", DType::float64, kSaved, slab_box(kSaved, comm.rank(), comm.size()));
    restore_tree(comm, dir, target, options);
  };
  EXPECT_THROW(attempt({.renames = {{"(v", "u"}}}), InvalidArgument);    // not a regex
  EXPECT_THROW(attempt({.renames = {{"v", "../u"}}}), InvalidArgument);  // not a leaf path
  attempt({.renames = {{"v", "u"}}});                                    // the right rule
  try {
    attempt({.renames = {{"v", "w"}}});
    ADD_FAILURE() << "a rule to a leaf that was not saved was accepted";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("renamed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cairn::testing
