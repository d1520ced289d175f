// The hdf5 format directly (Hdf5Writer + Hdf5Reader): every dtype at any rank count with 1-d
// and 2-d decompositions, ranks without a shard, replicated leaves, values, leaves streamed
// one by one (also from a background thread) or in pieces, sub-box reads, regular grids
// stored one chunk per shard, and files read by h5py. Damaged files and misuse:
// test_hdf5_errors.cpp.
#include <cairn/comm.hpp>
#include <cairn/tree.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <boost/json/parse.hpp>
#include <complex>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hdf5_test_util.hpp"
#include "storage/format/hdf5/reader.hpp"
#include "storage/format/hdf5/writer.hpp"
#include "support/test_support.hpp"

namespace cairn::storage {
namespace {

using namespace hdf5_test;
using testing::SharedTempDir;

// ------------------------------------------------------------------ round trips

TEST(Hdf5Format, EveryDtypeRoundTripsWith1dAnd2dDecompositions) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<std::int64_t> shape1 = {4 * n + 3};
  const std::vector<std::int64_t> shape2 = {2 * n + 1, 7};
  std::vector<Owned> leaves;
  for (DType dtype : all_dtypes()) {
    const std::string name(dtype_name(dtype));
    leaves.push_back(make_leaf("a/" + name, dtype, shape1, block_of(shape1, {n}, comm.rank())));
    leaves.push_back(
        make_leaf("b/" + name, dtype, shape2, block_of(shape2, grid_2d(n), comm.rank())));
    // 0-d: written by the last rank only.
    leaves.push_back(make_leaf("c/" + name, dtype, {},
                               comm.rank() == n - 1 ? std::optional<Box>(Box{}) : std::nullopt));
  }
  std::sort(leaves.begin(), leaves.end(),
            [](const Owned& x, const Owned& y) { return x.path < y.path; });
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);
  expect_reference_arrays(comm, file, leaves);
}

TEST(Hdf5Format, RanksWithoutShardsAndEmptyArrays) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int holders = std::max(1, n - 1);  // the last rank holds nothing when n > 1
  const std::vector<std::int64_t> shape = {5, 3 * holders};
  std::optional<Box> box;
  if (comm.rank() < holders) box = block_of(shape, {1, holders}, comm.rank());
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("empty", DType::float32, {0, 3}, std::nullopt));
  leaves.push_back(make_leaf("partial", DType::int16, shape, box));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);

  const LeafRecord empty = record_of("empty", DType::float32, {0, 3});
  const LeafRecord partial = record_of("partial", DType::int16, shape);
  const std::vector<const LeafRecord*> records = {&empty, &partial};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  EXPECT_TRUE(read_box(reader, "empty", DType::float32, whole_box(empty.shape)).empty());
  EXPECT_EQ(read_box(reader, "partial", DType::int16, whole_box(shape)),
            reference_box(DType::int16, shape, whole_box(shape)));
  reader.close();
}

TEST(Hdf5Format, ReplicatedLeafIsWrittenByOneRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {6, 4};
  const int writer = comm.size() - 1;  // not the primary when there are several ranks
  std::vector<Owned> leaves;
  leaves.push_back(
      make_leaf("r", DType::float64, shape,
                comm.rank() == writer ? std::optional(whole_box(shape)) : std::nullopt));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);

  const LeafRecord record = record_of("r", DType::float64, shape);
  const std::vector<const LeafRecord*> records = {&record};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  EXPECT_EQ(read_box(reader, "r", DType::float64, whole_box(shape)),
            reference_box(DType::float64, shape, whole_box(shape)));
  reader.close();
}

TEST(Hdf5Format, WriterStreamsLeavesOneByOne) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  // The last rank writes nothing for the middle leaf (at 1 rank, nobody writes it).
  const int holders = std::max(1, n - 1);
  const std::vector<std::int64_t> first = {4 * n + 1};
  const std::vector<std::int64_t> middle = {3 * holders, 2};
  const std::vector<std::int64_t> last = {2 * n + 1, 3};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("a/first", DType::float64, first, block_of(first, {n}, r)));
  leaves.push_back(
      make_leaf("a/middle", DType::int32, middle,
                r < n - 1 ? std::optional(block_of(middle, {holders}, r)) : std::nullopt));
  leaves.push_back(make_leaf("b/last", DType::uint8, last, block_of(last, grid_2d(n), r)));
  const auto arrays = to_write(leaves);
  const auto file = dir / "data.h5";

  Hdf5Writer writer(comm, file, arrays, {});
  // One staging buffer, refilled for every leaf: write() must not keep the pointer.
  std::vector<std::byte> staging;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const Owned& leaf = leaves[i];
    if (!leaf.box) {
      EXPECT_THROW((void)writer.place(i, 0), InvalidArgument) << leaf.path;
      continue;
    }
    staging = leaf.data;
    EXPECT_EQ(writer.place(i, staging.size()).file, "data.h5");
    writer.write(i, 0, staging);
    std::fill(staging.begin(), staging.end(), std::byte{0xAB});
  }
  writer.flush(true);
  writer.close(comm, true);
  // At 1 rank nobody writes the middle leaf.
  expect_reference_arrays(comm, file, leaves, n == 1 ? "a/middle" : "");
}

TEST(Hdf5Format, WriterOnABackgroundThreadWhileAnotherThreadReads) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI does not provide MPI_THREAD_MULTIPLE";
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const Comm background(MPI_COMM_WORLD);  // the writer thread's own communicator
  const int n = comm.size();
  const std::vector<std::int64_t> shape = {8 * n, 16};
  const Box box = block_of(shape, {n}, comm.rank());
  std::vector<Owned> source;
  source.push_back(make_leaf("source", DType::float64, shape, box));
  (void)write_all(comm, dir / "source.h5", source);
  const LeafRecord source_record = record_of("source", DType::float64, shape);
  const std::vector<const LeafRecord*> source_records = {&source_record};
  Hdf5Reader reader(comm, dir / "source.h5");
  reader.open(source_records);

  // HDF5 is not thread-safe: without hdf5_mutex() these overlapping calls corrupt its state.
  std::vector<Owned> leaves;
  for (int k = 0; k < 24; ++k) {
    leaves.push_back(make_leaf("f/" + std::to_string(10 + k), DType::float32, shape, box));
  }
  std::atomic<bool> done{false};
  std::exception_ptr error;
  std::thread writer([&] {
    try {
      (void)write_all(background, dir / "data.h5", leaves);
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
  });
  const std::vector<std::byte> expected = reference_box(DType::float64, shape, whole_box(shape));
  int reads = 0;
  int wrong = 0;
  do {
    wrong += read_box(reader, "source", DType::float64, whole_box(shape)) != expected ? 1 : 0;
    ++reads;
  } while (!done);
  writer.join();
  reader.close();
  if (error) std::rethrow_exception(error);
  EXPECT_EQ(wrong, 0) << "of " << reads << " reads";

  Hdf5Reader check(comm, dir / "data.h5");
  for (const Owned& leaf : leaves) {
    const LeafRecord record = record_of(leaf.path, leaf.dtype, leaf.shape);
    const std::vector<const LeafRecord*> records = {&record};
    check.open(records);
    EXPECT_EQ(read_box(check, leaf.path, leaf.dtype, box), leaf.data) << leaf.path;
  }
  check.close();
}

TEST(Hdf5Format, SubBoxesAcrossShardBoundaries) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<std::int64_t> shape = {4 * n + 2, 9};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("u", DType::float32, shape, block_of(shape, grid_2d(n), comm.rank())));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);

  const LeafRecord record = record_of("u", DType::float32, shape);
  const std::vector<const LeafRecord*> records = {&record};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  // A box straddling every shard boundary, and one shifted per rank.
  const std::vector<Box> boxes = {
      {{1, 1}, {shape[0] - 2, 7}},
      {{comm.rank(), 2 + comm.rank() % 3}, {shape[0] - comm.rank() - 1, 4}},
      {{2, 3}, {0, 2}}};
  for (const Box& box : boxes) {
    EXPECT_EQ(read_box(reader, "u", DType::float32, box), reference_box(DType::float32, shape, box))
        << to_string(box);
  }
  EXPECT_THROW(read_box(reader, "u", DType::float32, {{0, 0}, {shape[0] + 1, 1}}), InvalidArgument);
  EXPECT_THROW(read_box(reader, "v", DType::float32, whole_box(shape)), InvalidArgument);
  reader.close();
}

/// A shard record of `box` of `leaf` (only what Hdf5Reader reads: the box and its bytes).
ShardRecord shard_of(const LeafRecord& leaf, const Box& box) {
  ShardRecord shard;
  shard.box = box;
  shard.file = "data.h5";
  shard.bytes = static_cast<std::uint64_t>(volume(box)) * dtype_size(leaf.dtype);
  return shard;
}

/// Reads `box` of `leaf` as the stream of a shard of that box, in three parts, and checks it
/// against the reference array.
void expect_shard_stream(Hdf5Reader& reader, const LeafRecord& leaf, const Box& box) {
  const ShardRecord shard = shard_of(leaf, box);
  const std::size_t elem = dtype_size(leaf.dtype);
  std::vector<std::byte> got(shard.bytes, std::byte{0xEE});
  const std::uint64_t third = shard.bytes / elem / 3 * elem;
  for (const auto& [first, bytes] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {0, third}, {third, third}, {2 * third, shard.bytes - 2 * third}}) {
    reader.prefetch(leaf, shard, first, bytes);
    reader.read(leaf, shard, first, bytes, got.data() + first);
  }
  EXPECT_EQ(got, reference_box(leaf.dtype, leaf.shape, box)) << leaf.path << " " << to_string(box);
}

TEST(Hdf5Format, RegularGridsAreStoredOneChunkPerShard) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<int> blocks_grid = grid_2d(n);
  const std::vector<int> columns_grid = {1, n};
  const std::vector<std::int64_t> blocks_shape = {5 * n + 2, 3 * n + 1};
  const std::vector<std::int64_t> columns_shape = {7, 4 * n + 3};
  const std::vector<std::int64_t> uneven_shape = {2 * n + 1, 5};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("blocks", DType::float64, blocks_shape,
                             regular_block_of(blocks_shape, blocks_grid, comm.rank())));
  leaves.push_back(make_leaf("columns", DType::int16, columns_shape,
                             regular_block_of(columns_shape, columns_grid, comm.rank())));
  // Floor splits: the first blocks are the smaller ones, not a regular grid: contiguous.
  leaves.push_back(make_leaf("uneven", DType::float64, uneven_shape,
                             block_of(uneven_shape, blocks_grid, comm.rank())));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);

  // The chunks h5py must see: a grid that splits the rows' insides stores a chunk per shard.
  const auto chunks_of = [](const std::vector<std::int64_t>& shape, const std::vector<int>& grid) {
    if (grid[1] == 1) return std::string("None");
    return "(" + std::to_string((shape[0] + grid[0] - 1) / grid[0]) + ", " +
           std::to_string((shape[1] + grid[1] - 1) / grid[1]) + ")";
  };
  if (h5py_available()) {
    const std::string script = R"(
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
def reference(shape):
    return np.arange(shape[0] * shape[1]).reshape(shape)
g = reference(f["blocks"].shape)
assert np.array_equal(f["blocks"][()], (g % 64) * 0.5 - 8.0)
g = reference(f["columns"].shape)
assert np.array_equal(f["columns"][()], (g % 100 - 50).astype(np.int16))
g = reference(f["uneven"].shape)
assert np.array_equal(f["uneven"][()], (g % 64) * 0.5 - 8.0)
chunks = {name: f[name].chunks for name in ("blocks", "columns", "uneven")}
assert chunks == {"blocks": )" +
                               chunks_of(blocks_shape, blocks_grid) + R"(, "columns": )" +
                               chunks_of(columns_shape, columns_grid) +
                               R"(, "uneven": None}, chunks
for name in ("blocks", "columns"):
    assert f[name].compression is None, name
)";
    EXPECT_TRUE(python_ok(dir.path(), script, file));
  }

  // cairn reads any box (chunk by chunk where the dataset is chunked) and shard streams:
  // a shard that is a chunk (one region of the file), and shards of another decomposition.
  expect_reference_arrays(comm, file, leaves);
  std::vector<LeafRecord> records;
  for (const Owned& leaf : leaves) records.push_back(record_of(leaf.path, leaf.dtype, leaf.shape));
  const std::vector<const LeafRecord*> pointers = {&records[0], &records[1], &records[2]};
  Hdf5Reader reader(comm, file);
  reader.open(pointers);
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const std::vector<std::int64_t>& shape = leaves[k].shape;
    if (leaves[k].box && volume(*leaves[k].box) > 0) {
      expect_shard_stream(reader, records[k], *leaves[k].box);
    }
    expect_shard_stream(reader, records[k], whole_box(shape));
    expect_shard_stream(reader, records[k], {{1, 1}, {shape[0] - 2, shape[1] - 2}});
    expect_shard_stream(reader, records[k], block_of(shape, {n + 1, 1}, comm.rank()));
  }
  reader.close();
}

TEST(Hdf5Format, ChunkedDatasetsWrittenElsewhereAreRead) {
  if (!h5py_available()) GTEST_SKIP() << "h5py is not installed";
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {10, 12};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("fields/u", DType::float64, shape,
                             comm.rank() == 0 ? std::optional(whole_box(shape)) : std::nullopt));
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);
  // Chunks that match no shard, edge chunks sticking out of the array.
  ASSERT_TRUE(python_ok(dir.path(), R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    g = np.arange(120).reshape(10, 12)
    f.create_dataset("chunked", data=(g % 64) * 0.5 - 8.0, chunks=(3, 5))
)",
                        file));
  const LeafRecord record = record_of("chunked", DType::float64, shape);
  const std::vector<const LeafRecord*> records = {&record};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  for (const Box& box : std::vector<Box>{whole_box(shape),
                                         {{1, 2}, {7, 9}},
                                         {{3, 5}, {3, 5}},
                                         {{9, 11}, {1, 1}},
                                         {{comm.rank(), 0}, {2, 12}}}) {
    EXPECT_EQ(read_box(reader, "chunked", DType::float64, box),
              reference_box(DType::float64, shape, box))
        << to_string(box);
    expect_shard_stream(reader, record, box);
  }
  reader.close();
}

// ------------------------------------------------------------------ values and h5py

TEST(Hdf5Format, ValuesAreStoredAsSmallDatasets) {
  const SharedTempDir dir;
  // The primary writes the values: make it the last rank, not rank 0.
  CommOptions options;
  options.primary_rank = testing::world_size() - 1;
  const Comm comm(MPI_COMM_WORLD, options);
  ArrayTree tree;
  tree.add_scalar("meta/step", Scalar(std::int32_t{42}));
  tree.add_scalar("meta/dt", Scalar(0.125));
  tree.add_scalar("meta/flag", Scalar(true));
  tree.add_scalar("meta/z", Scalar(std::complex<double>(1.5, -2.0)));
  tree.add_string("meta/name", "température");
  tree.add_string("meta/nothing", "");
  tree.add_json("meta/config", boost::json::parse(R"({"a": [1, 2], "b": "x"})"));
  std::vector<ValueToWrite> values;
  for (const std::string& path : tree.sorted_paths()) values.push_back({path, tree.find(path)});
  const auto file = dir / "data.h5";
  EXPECT_TRUE(write_all(comm, file, {}, values).empty());

  // Scalars are 0-d datasets of their dtype: the reader reads them as 0-d arrays.
  const LeafRecord step = record_of("meta/step", DType::int32, {});
  const LeafRecord dt = record_of("meta/dt", DType::float64, {});
  const LeafRecord flag = record_of("meta/flag", DType::boolean, {});
  const LeafRecord z = record_of("meta/z", DType::complex128, {});
  const std::vector<const LeafRecord*> records = {&step, &dt, &flag, &z};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  std::int32_t step_value = 0;
  double dt_value = 0;
  bool flag_value = false;
  std::complex<double> z_value;
  reader.read("meta/step", {}, &step_value);
  reader.read("meta/dt", {}, &dt_value);
  reader.read("meta/flag", {}, &flag_value);
  reader.read("meta/z", {}, &z_value);
  EXPECT_EQ(step_value, 42);
  EXPECT_EQ(dt_value, 0.125);
  EXPECT_TRUE(flag_value);
  EXPECT_EQ(z_value, std::complex<double>(1.5, -2.0));
  reader.close();

  if (!h5py_available()) GTEST_SKIP() << "h5py is not installed: strings not checked";
  EXPECT_TRUE(python_ok(dir.path(), R"(
import json, sys, h5py
f = h5py.File(sys.argv[1], "r")
m = f["meta"]
for name in ("name", "nothing", "config"):  # variable-length UTF-8: str through .asstr()
    info = h5py.check_string_dtype(m[name].dtype)
    assert info.encoding == "utf-8" and info.length is None, (name, info)
assert m["name"].asstr()[()] == "température", m["name"][()]
assert m["nothing"].asstr()[()] == "", m["nothing"][()]
assert json.loads(m["config"].asstr()[()]) == {"a": [1, 2], "b": "x"}
assert m["step"][()] == 42 and m["step"].dtype == "int32"
assert m["flag"][()] == True and m["flag"].dtype == bool
assert m["z"][()] == complex(1.5, -2.0)
kinds = {k: m[k].attrs["cairn_kind"] for k in m}
assert kinds == {"config": "json", "dt": "scalar", "flag": "scalar", "name": "string",
                 "nothing": "string", "step": "scalar", "z": "scalar"}, kinds
)",
                        file));
}

TEST(Hdf5Format, H5pyReadsTheFile) {
  if (!h5py_available()) GTEST_SKIP() << "h5py is not installed";
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<std::int64_t> shape = {2 * n + 1, 5};
  const Box box = block_of(shape, grid_2d(n), comm.rank());
  std::vector<Owned> leaves;
  for (DType dtype : {DType::boolean, DType::int32, DType::uint16, DType::float16, DType::bfloat16,
                      DType::float64, DType::complex64}) {
    leaves.push_back(make_leaf("fields/" + std::string(dtype_name(dtype)), dtype, shape, box));
  }
  const auto file = dir / "data.h5";
  write_and_check_records(comm, file, leaves);
  const std::string script = R"(
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
g = np.arange()" + std::to_string(shape[0] * shape[1]) +
                             R"().reshape()" + std::to_string(shape[0]) + R"(, 5)
real = (g % 64) * 0.5 - 8.0
expected = {"bool": g % 3 == 0, "int32": (g % 100 - 50).astype(np.int32),
            "uint16": (g % 200).astype(np.uint16), "float16": real.astype(np.float16),
            "float64": real, "complex64": (real - 2j * real).astype(np.complex64)}
for name, want in expected.items():
    d = f["fields"][name]
    assert d.shape == want.shape, (name, d.shape)
    assert d.dtype == want.dtype, (name, d.dtype)
    assert np.array_equal(d[()], want), name
    assert d.attrs["cairn_dtype"] == name, name
b = f["fields/bfloat16"]
assert b.shape == g.shape and b.dtype.kind == "f" and b.attrs["cairn_dtype"] == "bfloat16"
assert np.array_equal(b[()].astype(np.float64), real)
)";
  EXPECT_TRUE(python_ok(dir.path(), script, file));
}

}  // namespace
}  // namespace cairn::storage
