// Target leaves derived from several saved ones (TreeRestoreOptions::derived_leaves): an older
// program saved the velocity components "vx" (float64) and "vy" (saved as float32); the new one
// restores "speed" = |v| and "u" = vx (renamed), N->M, in every format, next to ordinary and
// renamed leaves; an optional derived leaf with a missing source is left alone; a missing
// source, a source of another shape, a leaf that is not in the target and a fill that throws on
// one rank are errors on every rank.
#include <gtest/gtest.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

const std::vector<std::int64_t> kShape = {10, 9};

double vx_at(std::int64_t i) { return static_cast<double>(i) * 0.5 - 3.0; }
double vy_at(std::int64_t i) { return static_cast<double>(static_cast<float>(i % 7) - 2.25F); }

std::vector<double> box_of(const Box& box, double (*value)(std::int64_t)) {
  std::vector<double> out;
  for (std::int64_t y = 0; y < box.extent[0]; ++y) {
    for (std::int64_t x = 0; x < box.extent[1]; ++x) {
      out.push_back(value((box.offset[0] + y) * kShape[1] + box.offset[1] + x));
    }
  }
  return out;
}

void save_velocity(const Comm& comm, const std::filesystem::path& dir, StorageFormat format) {
  const Box box = slab_box(kShape, comm.rank(), comm.size());
  std::vector<double> vx = box_of(box, vx_at);
  std::vector<double> vy = box_of(box, vy_at);
  std::vector<double> small(3, 1.0);
  ArrayTree tree;
  tree.add_array("vx", ArrayShard::host(vx.data(), kShape, box));
  tree.add_array("vy", ArrayShard::host(vy.data(), kShape, box));
  tree.add_array("small", ArrayShard::host(small.data(), {3}, {}, true));
  tree.add_scalar("step", Scalar(std::int64_t{42}));
  save_tree(comm, dir, tree, {.format = format, .save_args = {{"vy", {.dtype = DType::float32}}}});
}

// |v| from the float64 "vx" and the float32 "vy".
DerivedLeaf speed_rule() {
  return {.sources = {"vx", "vy"},
          .fill = [](std::span<const ArrayShard> in, const ArrayShard& out) {
            EXPECT_EQ(in[0].dtype, DType::float64);
            EXPECT_EQ(in[1].dtype, DType::float32);
            EXPECT_EQ(in[0].box, out.box);
            const auto* vx = static_cast<const double*>(in[0].data);
            const auto* vy = static_cast<const float*>(in[1].data);
            auto* speed = static_cast<double*>(out.data);
            for (std::int64_t i = 0; i < out.local_volume(); ++i) {
              speed[i] = std::hypot(vx[i], static_cast<double>(vy[i]));
            }
          }};
}

TEST(DerivedLeaves, ComputedFromSeveralSavedLeavesNToM) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    save_velocity(comm, dir, format);
    for (int m = 1; m <= comm.size(); ++m) {
      SCOPED_TRACE("restored by " + std::to_string(m) + " ranks");
      auto sub = first_ranks(m);
      if (!sub) continue;
      const Box box = block_box(kShape, sub->rank(), sub->size());
      std::vector<double> speed(static_cast<std::size_t>(volume(box)), -1.0);
      std::vector<double> u(speed.size(), -1.0);
      ArrayTree target;
      target.add_array("speed", ArrayShard::host(speed.data(), kShape, box));
      target.add_array("u", ArrayShard::host(u.data(), kShape, box));
      target.add_scalar("iteration", Scalar(std::int64_t{0}));
      // Only the rename rule and the derived leaf say where leaves come from.
      restore_tree(*sub, dir, target,
                   {.renames = {{"u", "vx"}, {"iteration", "step"}},
                    .default_to_original = false,
                    .derived_leaves = {{"speed", speed_rule()}}});
      const std::vector<double> vx = box_of(box, vx_at);
      const std::vector<double> vy = box_of(box, vy_at);
      for (std::size_t i = 0; i < speed.size(); ++i) {
        ASSERT_EQ(speed[i], std::hypot(vx[i], vy[i])) << "element " << i;
        ASSERT_EQ(u[i], vx[i]) << "element " << i;
      }
      EXPECT_EQ(target.get<std::int64_t>("iteration"), 42);
    }
  }
}

TEST(DerivedLeaves, MissingSourcesAndMisuse) {
  const SharedTempDir tmp;
  const Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "saved";
  save_velocity(comm, dir, StorageFormat::posix);
  const Box box = block_box(kShape, comm.rank(), comm.size());
  std::vector<double> buffer(static_cast<std::size_t>(volume(box)), -1.0);
  ArrayTree target;
  target.add_array("speed", ArrayShard::host(buffer.data(), kShape, box));
  const auto with = [](std::vector<std::string> sources) {
    DerivedLeaf rule = speed_rule();
    rule.sources = std::move(sources);
    return rule;
  };
  // A missing source: NotFound naming it, or the leaf left alone when optional.
  try {
    restore_tree(comm, dir, target, {.derived_leaves = {{"speed", with({"vx", "vz"})}}});
    ADD_FAILURE() << "a missing source was accepted";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("'vz', a source of the derived leaf 'speed'"),
              std::string::npos)
        << e.what();
  }
  restore_tree(comm, dir, target,
               {.optional_leaves = {"speed"}, .derived_leaves = {{"speed", with({"vx", "vz"})}}});
  for (double v : buffer) ASSERT_EQ(v, -1.0);
  // A source of another shape, a scalar source, a leaf the target lacks, no fill.
  EXPECT_THROW(restore_tree(comm, dir, target, {.derived_leaves = {{"speed", with({"small"})}}}),
               InvalidArgument);
  EXPECT_THROW(restore_tree(comm, dir, target, {.derived_leaves = {{"speed", with({"step"})}}}),
               InvalidArgument);
  EXPECT_THROW(restore_tree(comm, dir, target, {.derived_leaves = {{"other", speed_rule()}}}),
               InvalidArgument);
  EXPECT_THROW(restore_tree(comm, dir, target,
                            {.derived_leaves = {{"speed", DerivedLeaf{.sources = {"vx"}}}}}),
               InvalidArgument);
  // A fill that throws on the last rank only: every rank throws.
  const int last = comm.size() - 1;
  DerivedLeaf failing{.sources = {"vx"},
                      .fill = [&](std::span<const ArrayShard>, const ArrayShard&) {
                        if (comm.rank() == last) throw InvalidArgument("no speed here");
                      }};
  try {
    restore_tree(comm, dir, target, {.derived_leaves = {{"speed", failing}}});
    ADD_FAILURE() << "a failing fill was not reported";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no speed here"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cairn::testing
