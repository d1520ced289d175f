// The errors of the hdf5 format (Hdf5Writer + Hdf5Reader): a file that is not HDF5, is
// truncated, or holds datasets that do not match the index or that cairn does not write, and a
// misused writer, locally and collectively.
#include <cairn/comm.hpp>
#include <cairn/tree.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hdf5_test_util.hpp"
#include "storage/format/hdf5/reader.hpp"
#include "storage/format/hdf5/writer.hpp"
#include "support/test_support.hpp"

namespace cairn::storage {
namespace {

using namespace hdf5_test;
using ::testing::HasSubstr;
using testing::SharedTempDir;
using ::testing::ThrowsMessage;

// ------------------------------------------------------------------ errors

TEST(Hdf5Format, NonHdf5FileIsFormatErrorAndMissingFileIsNotFound) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const auto file = dir / "data.h5";
  if (comm.rank() == 0) std::ofstream(file) << "this is not an HDF5 file\n";
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    Hdf5Reader reader(comm, file);
    ADD_FAILURE() << "a text file opened as HDF5";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), file.string());
    EXPECT_THAT(e.what(), HasSubstr("not an HDF5 file"));
  }
  EXPECT_THROW(Hdf5Reader(comm, dir / "missing.h5"), NotFound);
}

TEST(Hdf5Format, TruncatedFileIsAnErrorNotACrash) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {64, 64};
  std::vector<Owned> leaves;
  leaves.push_back(
      make_leaf("u", DType::float64, shape, block_of(shape, {comm.size()}, comm.rank())));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);
  if (comm.rank() == 0) std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(
      {
        Hdf5Reader reader(comm, file);
        const LeafRecord record = record_of("u", DType::float64, shape);
        const std::vector<const LeafRecord*> records = {&record};
        reader.open(records);
        (void)read_box(reader, "u", DType::float64, whole_box(shape));
      },
      Error);
}

TEST(Hdf5Format, DatasetNotMatchingTheRecordIsFormatErrorNamingTheLeaf) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4, 6};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("fields/u", DType::float64, shape,
                             comm.rank() == 0 ? std::optional(whole_box(shape)) : std::nullopt));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);

  const auto expect_format_error = [&](const LeafRecord& record, const std::string& words) {
    Hdf5Reader reader(comm, file);
    const std::vector<const LeafRecord*> records = {&record};
    try {
      reader.open(records);
      ADD_FAILURE() << "no error for " << words;
    } catch (const FormatError& e) {
      EXPECT_EQ(e.field(), record.path);
      EXPECT_EQ(e.path(), file.string());
      EXPECT_THAT(e.what(), HasSubstr("'" + record.path + "'"));
      EXPECT_THAT(e.what(), HasSubstr(words));
    }
    reader.close();
  };
  expect_format_error(record_of("fields/u", DType::float64, {4, 5}), "shape (4, 6)");
  expect_format_error(record_of("fields/u", DType::float64, {24}), "shape (4, 6)");
  expect_format_error(record_of("fields/u", DType::float64, {}), "shape (4, 6)");
  expect_format_error(record_of("fields/u", DType::int64, shape), "8-byte float");
  expect_format_error(record_of("fields/u", DType::complex64, shape), "8-byte float");
  expect_format_error(record_of("fields/v", DType::float64, shape), "no dataset");
  expect_format_error(record_of("other/v", DType::float64, shape), "no link 'other'");
  expect_format_error(record_of("fields", DType::float64, shape), "group");
}

TEST(Hdf5Format, DatasetsCairnDoesNotWriteAreRejected) {
  if (!h5py_available()) GTEST_SKIP() << "h5py is not installed";
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4, 6};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("fields/u", DType::float64, shape,
                             comm.rank() == 0 ? std::optional(whole_box(shape)) : std::nullopt));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);
  // Links and layouts that cairn never writes: a read through them could open another file
  // or need collective metadata reads inside an independent read.
  ASSERT_TRUE(python_ok(dir.path(), R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    f["soft"] = h5py.SoftLink("/fields/u")
    f["external"] = h5py.ExternalLink("other.h5", "/x")
    f.create_dataset("compressed", data=np.zeros((4, 6)), chunks=(2, 3), compression="gzip")
)",
                        file));
  for (const auto& [path, words] :
       std::vector<std::pair<std::string, std::string>>{{"soft", "soft or external link"},
                                                        {"external", "soft or external link"},
                                                        {"compressed", "compressed"}}) {
    const LeafRecord record = record_of(path, DType::float64, shape);
    const std::vector<const LeafRecord*> records = {&record};
    Hdf5Reader reader(comm, file);
    try {
      reader.open(records);
      ADD_FAILURE() << "no error for " << path;
    } catch (const FormatError& e) {
      EXPECT_EQ(e.field(), path);
      EXPECT_THAT(e.what(), HasSubstr(words));
    }
    reader.close();
  }
}

TEST(Hdf5Format, WriterTakesShardsInPiecesInAnyOrderWithoutCollectiveCalls) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  const std::vector<std::int64_t> cube = {2 * n + 1, 5, 3};
  const std::vector<std::int64_t> plane = {3 * n, 4 * n + 1};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("p/cube", DType::float64, cube, block_of(cube, {n}, r)));
  leaves.push_back(make_leaf("p/plane", DType::int32, plane, block_of(plane, grid_2d(n), r)));
  const auto file = dir / "data.h5";
  Hdf5Writer writer(comm, file, to_write(leaves), {});
  // Each rank writes the leaves last to first, and each stream in pieces of its own length
  // (4 + 5 r elements: pieces split rows and cross them), last piece first, from a staging
  // buffer overwritten after each call. The ranks make different numbers of calls: writes
  // are local.
  for (std::size_t i = leaves.size(); i-- > 0;) {
    const Owned& leaf = leaves[i];
    const std::size_t elem = dtype_size(leaf.dtype);
    writer.place(i, leaf.data.size());
    const std::size_t piece = (4 + 5 * static_cast<std::size_t>(r)) * elem;
    std::vector<std::size_t> starts;
    for (std::size_t at = 0; at < leaf.data.size(); at += piece) starts.push_back(at);
    std::vector<std::byte> staging;
    for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
      const std::size_t length = std::min(piece, leaf.data.size() - *it);
      staging.assign(leaf.data.begin() + static_cast<std::ptrdiff_t>(*it),
                     leaf.data.begin() + static_cast<std::ptrdiff_t>(*it + length));
      writer.write(i, *it, staging);
      std::fill(staging.begin(), staging.end(), std::byte{0xAB});
    }
  }
  writer.flush(false);
  writer.close(comm, false);
  expect_reference_arrays(comm, file, leaves);
}

TEST(Hdf5Format, LocalMisuseThrowsOnTheCallingRankNamingTheLeaf) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4 * comm.size(), 2};
  std::vector<Owned> leaves;
  leaves.push_back(
      make_leaf("q", DType::int16, shape, block_of(shape, {comm.size()}, comm.rank())));
  leaves.push_back(make_leaf("none", DType::int16, shape, std::nullopt));
  const std::vector<std::byte>& data = leaves[0].data;  // 8 int16: 16 bytes
  Hdf5Writer writer(comm, dir / "data.h5", to_write(leaves), {});
  const auto names = [](const std::string& leaf) {
    return ThrowsMessage<InvalidArgument>(HasSubstr("leaf '" + leaf + "'"));
  };
  // Before place(), the wrong byte count, a leaf without a shard, an unknown array.
  EXPECT_THAT([&] { writer.write(0, 0, data); }, names("q"));
  EXPECT_THAT([&] { (void)writer.place(0, data.size() - 2); }, names("q"));
  EXPECT_THAT([&] { (void)writer.place(1, 0); }, names("none"));
  EXPECT_THROW((void)writer.place(2, 0), InvalidArgument);
  // Placed once only; writes inside the shard, in whole elements.
  writer.place(0, data.size());
  EXPECT_THAT([&] { (void)writer.place(0, data.size()); }, names("q"));
  EXPECT_THROW(writer.write(0, 2, data), InvalidArgument);                      // past the end
  EXPECT_THROW(writer.write(0, 1, std::span(data).first(2)), InvalidArgument);  // half elements
  writer.write(0, 0, data);
  writer.flush(false);
  writer.close(comm, false);
  // After close().
  EXPECT_THROW(writer.write(0, 0, data), InvalidArgument);
  EXPECT_THROW(writer.close(comm, false), InvalidArgument);
  std::vector<Owned> written = {leaves[0]};
  expect_reference_arrays(comm, dir / "data.h5", written);
}

TEST(Hdf5Format, MisuseFailsOnEveryRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4};
  // A box outside the shape on one rank: every rank throws, not only the holder.
  const std::vector<ArrayToWrite> bad = {array_to_write(
      "o", DType::float32, shape, comm.rank() == 0 ? std::optional(Box{{2}, {4}}) : std::nullopt)};
  EXPECT_THROW(Hdf5Writer(comm, dir / "b.h5", bad, {}), InvalidArgument);
  const std::vector<ArrayToWrite> bad_path = {
      array_to_write("a//b", DType::float32, shape, std::nullopt)};
  EXPECT_THROW(Hdf5Writer(comm, dir / "p.h5", bad_path, {}), InvalidArgument);

  // Ranks that disagree about the arrays get CollectiveMismatch instead of a hang.
  if (comm.size() > 1) {
    const std::vector<std::int64_t> mine = {comm.rank() == 1 ? 5 : 4};
    const std::vector<ArrayToWrite> differing = {
        array_to_write("m", DType::float32, mine, std::nullopt)};
    EXPECT_THROW(Hdf5Writer(comm, dir / "c.h5", differing, {}), CollectiveMismatch);
  }
}

TEST(Hdf5Format, UnclosedWriterClosesItsFileWhenDestroyed) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {6};
  const auto held_by_0 = comm.rank() == 0 ? std::optional(whole_box(shape)) : std::nullopt;
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("x", DType::int32, shape, held_by_0));
  leaves.push_back(make_leaf("y", DType::int32, shape, held_by_0));
  {
    Hdf5Writer writer(comm, dir / "d.h5", to_write(leaves), {});
    if (comm.rank() == 0) {
      writer.place(0, leaves[0].data.size());
      writer.write(0, 0, leaves[0].data);
    }
  }
  (void)write_all(comm, dir / "d.h5", leaves, {}, false);
  expect_reference_arrays(comm, dir / "d.h5", leaves);
}

}  // namespace
}  // namespace cairn::storage
