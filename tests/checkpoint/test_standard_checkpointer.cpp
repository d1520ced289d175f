// StandardCheckpointer: one array tree saved and restored in one call each, in every format,
// into another decomposition and as saved; an existing checkpoint is refused unless forced;
// the checkpoint it writes is an ordinary array-tree checkpoint.
#include <cairn/standard_checkpointer.hpp>
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;
using namespace cairn::testing;

namespace {

// Rank r's columns of `shape` over n ranks: another decomposition than block_box()'s.
Box column_box(const std::vector<std::int64_t>& shape, int r, int n) {
  Box box = whole_box(shape);
  box.offset[1] = shape[1] * r / n;
  box.extent[1] = shape[1] * (r + 1) / n - box.offset[1];
  return box;
}

}  // namespace

TEST(StandardCheckpointer, SavesAndRestoresATreeInEveryFormat) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  for (StorageFormat format : available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto dir = tmp / std::string(storage_format_name(format));
    const Box box = block_box(kFieldShape, comm.rank(), comm.size());
    Field field(box, 4);
    StandardCheckpointer checkpointer(comm);
    checkpointer.save(dir, field.tree(), {.tree = {.format = format}});
    EXPECT_TRUE(is_committed(dir));

    // Into columns instead of rows: another decomposition of the same array.
    const Box columns = column_box(kFieldShape, comm.rank(), comm.size());
    FieldTarget target(columns);
    expect_field(target, checkpointer.restore(dir, target.tree), 4);

    // As saved: each rank gets the box it wrote.
    expect_field_as_saved(checkpointer.restore(dir), box, 4);

    // The metadata names the leaves; a plain Checkpointer reads the same checkpoint.
    const auto metadata = checkpointer.metadata(dir);
    EXPECT_NE(boost::json::serialize(metadata).find("fields/u"), std::string::npos);
    Checkpointer plain(comm, std::make_shared<ArrayTreeHandler>());
    FieldTarget again(box);
    const ArrayTreeRestore args(again.tree);
    expect_field(again, plain.restore_as<ArrayTree>(dir, &args), 4);
  }
}

TEST(StandardCheckpointer, AnExistingCheckpointIsReplacedOnlyWhenForced) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  const auto dir = tmp / "state";
  const Box box = block_box(kFieldShape, comm.rank(), comm.size());
  Field first(box, 1);
  StandardCheckpointer checkpointer(comm);
  checkpointer.save(dir, first.tree());

  Field second(box, 2);
  const std::string message =
      error_of<InvalidArgument>([&] { checkpointer.save(dir, second.tree()); });
  EXPECT_TRUE(mentions(message, {dir.string()})) << message;
  expect_field_as_saved(checkpointer.restore(dir), box, 1);

  checkpointer.save(dir, second.tree(), {.checkpoint = {.force = true}});
  expect_field_as_saved(checkpointer.restore(dir), box, 2);
}

TEST(StandardCheckpointer, AMissingCheckpointIsNotFoundOnEveryRank) {
  SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  StandardCheckpointer checkpointer(comm);
  const auto missing = tmp / "missing";
  const std::string message = error_of<NotFound>([&] { (void)checkpointer.restore(missing); });
  EXPECT_TRUE(mentions(message, {missing.string()})) << message;
}
