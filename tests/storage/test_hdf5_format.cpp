// The hdf5 format directly (Hdf5Writer + Hdf5Reader): every dtype at any rank count with 1-d
// and 2-d decompositions, ranks without a shard, replicated leaves, values, leaves streamed
// one by one (also from a background thread) or in pieces, sub-box reads, files read by h5py,
// and the errors a damaged or mismatched file or a misused writer gives.
#include <cairn/comm.hpp>
#include <cairn/tree.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <boost/json/parse.hpp>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/checksum.hpp"
#include "storage/hdf5/reader.hpp"
#include "storage/hdf5/writer.hpp"
#include "support/test_support.hpp"

namespace cairn::storage {
namespace {

using ::testing::HasSubstr;
using testing::SharedTempDir;
using ::testing::ThrowsMessage;

// ------------------------------------------------------------------ reference data

/// Element `g` (global row-major index) of the reference array: a formula that h5py can
/// recompute (see H5pyReadsTheFile).
void reference_element(DType dtype, std::int64_t g, std::byte* out) {
  const double value = is_unsigned_integer(dtype) ? static_cast<double>(g % 200)
                       : is_floating(dtype) || is_complex(dtype)
                           ? static_cast<double>(g % 64) * 0.5 - 8.0
                           : static_cast<double>(g % 100 - 50);
  if (dtype == DType::boolean) {
    const std::uint8_t flag = g % 3 == 0 ? 1 : 0;
    std::memcpy(out, &flag, 1);
  } else if (is_complex(dtype)) {
    const std::complex<double> z(value, -2.0 * value);
    convert(DType::complex128, &z, dtype, out, 1);
  } else {
    convert(DType::float64, &value, dtype, out, 1);
  }
}

std::vector<std::byte> reference_box(DType dtype, const std::vector<std::int64_t>& shape,
                                     const Box& box) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> whole(static_cast<std::size_t>(volume(shape)) * size);
  for (std::int64_t g = 0; g < volume(shape); ++g) {
    reference_element(dtype, g, whole.data() + static_cast<std::size_t>(g) * size);
  }
  std::vector<std::byte> out(static_cast<std::size_t>(volume(box)) * size);
  if (!out.empty()) copy_region(size, whole.data(), whole_box(shape), out.data(), box, box);
  return out;
}

std::int64_t split(std::int64_t n, int parts, int i) { return n * i / parts; }

/// Rank r's block of `shape` over a process grid of `grid` (one entry per split dimension).
Box block_of(const std::vector<std::int64_t>& shape, const std::vector<int>& grid, int r) {
  Box box = whole_box(shape);
  int rest = r;
  for (std::size_t d = grid.size(); d-- > 0;) {
    const int coordinate = rest % grid[d];
    rest /= grid[d];
    box.offset[d] = split(shape[d], grid[d], coordinate);
    box.extent[d] = split(shape[d], grid[d], coordinate + 1) - box.offset[d];
  }
  return box;
}

std::vector<int> grid_2d(int size) {
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  return {dims[0], dims[1]};
}

/// An array leaf to write, owning its data.
struct Owned {
  std::string path;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::optional<Box> box;  // nullopt: this rank writes nothing
  std::vector<std::byte> data;
  ArrayShard shard;
};

Owned make_leaf(std::string path, DType dtype, std::vector<std::int64_t> shape,
                std::optional<Box> box) {
  Owned leaf{std::move(path), dtype, std::move(shape), std::move(box), {}, {}};
  if (leaf.box) {
    leaf.data = reference_box(dtype, leaf.shape, *leaf.box);
    leaf.shard.dtype = dtype;
    leaf.shard.global_shape = leaf.shape;
    leaf.shard.box = *leaf.box;
    leaf.shard.data = leaf.data.data();
  }
  return leaf;
}

std::vector<Hdf5ArrayToWrite> to_write(const std::vector<Owned>& leaves) {
  std::vector<Hdf5ArrayToWrite> out;
  for (const Owned& leaf : leaves) {
    out.push_back({leaf.path, leaf.dtype, leaf.shape, leaf.box ? &leaf.shard : nullptr});
  }
  return out;
}

LeafRecord record_of(std::string path, DType dtype, std::vector<std::int64_t> shape) {
  LeafRecord record;
  record.path = std::move(path);
  record.kind = LeafKind::array;
  record.format = StorageFormat::hdf5;
  record.dtype = dtype;
  record.shape = std::move(shape);
  return record;
}

std::vector<std::byte> read_box(Hdf5Reader& reader, const std::string& path, DType dtype,
                                const Box& box) {
  std::vector<std::byte> out(static_cast<std::size_t>(volume(box)) * dtype_size(dtype),
                             std::byte{0xEE});
  reader.read(path, box, out.data());
  return out;
}

/// The checksum chunk of Hdf5ArrayToWrite by default.
constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;

/// Writes `leaves` and `values` with one Hdf5Writer, leaf by leaf; returns this rank's
/// records. Collective.
std::vector<ShardRecord> write_all(const Comm& comm, const std::filesystem::path& file,
                                   const std::vector<Owned>& leaves,
                                   std::span<const Hdf5ValueToWrite> values = {},
                                   bool fsync = true) {
  const auto arrays = to_write(leaves);
  Hdf5Writer writer(comm, file, arrays, values);
  EXPECT_EQ(writer.array_count(), leaves.size());
  std::vector<ShardRecord> records;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const void* data = leaves[i].box ? leaves[i].data.data() : nullptr;
    if (auto record = writer.write(i, data)) records.push_back(std::move(*record));
  }
  writer.finish(fsync);
  return records;
}

/// Writes `leaves` and checks the records this rank gets back.
void write_and_check_records(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves,
                             std::span<const Hdf5ValueToWrite> values = {}) {
  const auto records = write_all(comm, file, leaves, values);
  std::size_t k = 0;
  for (const Owned& leaf : leaves) {
    if (!leaf.box) continue;
    ASSERT_LT(k, records.size()) << leaf.path;
    const ShardRecord& r = records[k++];
    EXPECT_EQ(r.rank, comm.rank());
    EXPECT_EQ(r.box, *leaf.box) << leaf.path;
    EXPECT_EQ(r.file, "data.h5");
    EXPECT_EQ(r.bytes, leaf.data.size()) << leaf.path;
    EXPECT_EQ(r.checksums, chunk_checksums_of(leaf.data, kChunk)) << leaf.path;
  }
  EXPECT_EQ(k, records.size());
}

/// Reads every leaf of `leaves` whole from `file` and checks it against the reference array,
/// and this rank's box against its data, except `unwritten` (a leaf no rank wrote, whose
/// contents are undefined). Collective.
void expect_reference_arrays(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves, const std::string& unwritten = {}) {
  std::vector<LeafRecord> records;
  for (const Owned& leaf : leaves) records.push_back(record_of(leaf.path, leaf.dtype, leaf.shape));
  std::vector<const LeafRecord*> pointers;
  for (const LeafRecord& record : records) pointers.push_back(&record);
  Hdf5Reader reader(comm, file);
  reader.open(pointers);
  for (const Owned& leaf : leaves) {
    if (leaf.path == unwritten) continue;
    const Box whole = whole_box(leaf.shape);
    EXPECT_EQ(read_box(reader, leaf.path, leaf.dtype, whole),
              reference_box(leaf.dtype, leaf.shape, whole))
        << leaf.path << " on rank " << comm.rank();
    if (leaf.box) {
      EXPECT_EQ(read_box(reader, leaf.path, leaf.dtype, *leaf.box), leaf.data) << leaf.path;
    }
  }
  reader.close();
}

/// Runs `script` with /usr/bin/python3 on rank 0 (argument: the file); true on every rank
/// when it exited with 0. Collective.
bool python_ok(const std::filesystem::path& dir, const std::string& script,
               const std::filesystem::path& file) {
  int ok = 0;
  if (testing::world_rank() == 0) {
    const auto script_file = dir / "check.py";
    std::ofstream(script_file) << script;
    const std::string command =
        "/usr/bin/python3 '" + script_file.string() + "' '" + file.string() + "'";
    ok = std::system(command.c_str()) == 0 ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok == 1;
}

bool h5py_available() {
  int ok = 0;
  if (testing::world_rank() == 0) {
    ok = std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") == 0 ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok == 1;
}

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
    staging = leaf.data;
    const auto record = writer.write(i, leaf.box ? staging.data() : nullptr);
    std::fill(staging.begin(), staging.end(), std::byte{0xAB});
    ASSERT_EQ(record.has_value(), leaf.box.has_value()) << leaf.path;
    if (record) {
      EXPECT_EQ(record->rank, r);
      EXPECT_EQ(record->box, *leaf.box) << leaf.path;
      EXPECT_EQ(record->file, "data.h5");
      EXPECT_EQ(record->bytes, leaf.data.size()) << leaf.path;
      EXPECT_EQ(record->checksums, chunk_checksums_of(leaf.data, kChunk)) << leaf.path;
    }
  }
  writer.finish(true);
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
  std::vector<Hdf5ValueToWrite> values;
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
assert m["name"][()].decode("utf-8") == "température", m["name"][()]
assert m["nothing"][()] == b"", m["nothing"][()]
assert json.loads(m["config"][()]) == {"a": [1, 2], "b": "x"}
assert m["step"][()] == 42 and m["step"].dtype == "int32"
assert m["flag"][()] == True and m["flag"].dtype == bool
assert m["z"][()] == complex(1.5, -2.0)
kinds = {k: m[k].attrs["cairn_kind"] for k in m}
assert kinds == {"config": b"json", "dt": b"scalar", "flag": b"scalar", "name": b"string",
                 "nothing": b"string", "step": b"scalar", "z": b"scalar"}, kinds
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
    assert d.attrs["cairn_dtype"] == name.encode(), name
b = f["fields/bfloat16"]
assert b.shape == g.shape and b.dtype.kind == "f" and b.attrs["cairn_dtype"] == b"bfloat16"
assert np.array_equal(b[()].astype(np.float64), real)
)";
  EXPECT_TRUE(python_ok(dir.path(), script, file));
}

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
    f.create_dataset("chunked", data=np.zeros((4, 6)), chunks=(2, 3))
)",
                        file));
  for (const auto& [path, words] :
       std::vector<std::pair<std::string, std::string>>{{"soft", "soft or external link"},
                                                        {"external", "soft or external link"},
                                                        {"chunked", "not contiguous"}}) {
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

TEST(Hdf5Format, WriterTakesShardsInPieces) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int r = comm.rank();
  const std::vector<std::int64_t> cube = {2 * n + 1, 5, 3};
  const std::vector<std::int64_t> line = {n + 2};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("p/cube", DType::float64, cube, block_of(cube, {n}, r)));
  leaves.push_back(make_leaf("p/line", DType::int32, line, block_of(line, {n}, r)));
  // Each rank cuts its box in runs of another length (rows of 15 elements: the runs of the
  // small lengths split rows); the collective piece count is the most runs of any rank.
  const Box& box = *leaves[0].box;
  const std::vector<Box> runs = split_into_runs(box, 4 + 5 * r);
  int most = static_cast<int>(runs.size());
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  auto arrays = to_write(leaves);
  arrays[0].pieces = static_cast<std::size_t>(most) + 1;  // one more: every rank ends empty
  arrays[1].pieces = 2;
  const auto file = dir / "data.h5";

  Hdf5Writer writer(comm, file, arrays, {});
  // The last rank writes its whole box with write(), the others run by run from a staging
  // buffer that is overwritten after each call.
  std::optional<ShardRecord> record;
  if (r == n - 1) {
    record = writer.write(0, leaves[0].data.data());
  } else {
    std::vector<std::byte> staging;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      staging.assign(static_cast<std::size_t>(volume(runs[k])) * sizeof(double), std::byte{0});
      copy_region(sizeof(double), leaves[0].data.data(), box, staging.data(), runs[k], runs[k]);
      auto got = writer.write_piece(0, &runs[k], staging.data());
      EXPECT_EQ(got.has_value(), k + 1 == runs.size()) << "run " << k;
      if (got) record = std::move(got);
      std::fill(staging.begin(), staging.end(), std::byte{0xAB});
    }
    writer.skip(0);
  }
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->box, box);
  EXPECT_EQ(record->bytes, leaves[0].data.size());
  EXPECT_EQ(record->checksums, chunk_checksums_of(leaves[0].data, kChunk));
  // The second leaf in one run and one empty call, as write() makes them.
  const auto line_record = writer.write_piece(1, &*leaves[1].box, leaves[1].data.data());
  ASSERT_TRUE(line_record.has_value());
  EXPECT_EQ(line_record->checksums, chunk_checksums_of(leaves[1].data, kChunk));
  (void)writer.write_piece(1, nullptr, nullptr);
  writer.finish(false);
  expect_reference_arrays(comm, file, leaves);
}

TEST(Hdf5Format, PiecesThatDoNotContinueTheBoxFailOnEveryRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<std::int64_t> shape = {4 * n, 2};
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("q", DType::int16, shape, block_of(shape, {n}, comm.rank())));
  const Box& box = *leaves[0].box;
  const std::vector<Box> runs = split_into_runs(box, 2);  // 4 rows of 2
  ASSERT_EQ(runs.size(), 4U);
  auto arrays = to_write(leaves);
  arrays[0].pieces = 4;
  std::vector<std::byte> staging(2 * sizeof(std::int16_t));
  const int culprit = n - 1;
  const bool misuses = comm.rank() == culprit;

  // The culprit passes its runs out of order (the second first), or stops one run short.
  for (const bool out_of_order : {true, false}) {
    Hdf5Writer writer(comm, dir / (out_of_order ? "order.h5" : "short.h5"), arrays, {});
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t which = misuses && out_of_order && k < 2 ? 1 - k : k;
      const bool passes = !(misuses && !out_of_order && k == 3);
      (void)writer.write_piece(0, passes ? &runs[which] : nullptr,
                               passes ? staging.data() : nullptr);
    }
    EXPECT_THAT([&] { writer.finish(false); },
                ThrowsMessage<InvalidArgument>(HasSubstr(
                    out_of_order ? "does not continue the box" : "cover 6 of the 8 elements")));
  }

  // A piece count of 0, or counts that differ between ranks, fail at once on every rank.
  arrays[0].pieces = 0;
  EXPECT_THROW(Hdf5Writer(comm, dir / "zero.h5", arrays, {}), InvalidArgument);
  if (n > 1) {
    arrays[0].pieces = misuses ? 3 : 4;
    EXPECT_THROW(Hdf5Writer(comm, dir / "counts.h5", arrays, {}), CollectiveMismatch);
  }
}

TEST(Hdf5Format, MisuseFailsOnEveryRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4};
  std::vector<float> data(4, 1.0f);
  // A box outside the shape, and a shard of another dtype: every rank throws, not only the
  // holder.
  ArrayShard outside = ArrayShard::host(data.data(), shape, Box{{2}, {4}});
  const std::vector<Hdf5ArrayToWrite> bad = {
      {"o", DType::float32, shape, comm.rank() == 0 ? &outside : nullptr}};
  EXPECT_THROW(Hdf5Writer(comm, dir / "b.h5", bad, {}), InvalidArgument);
  const ArrayShard floats = ArrayShard::host(data.data(), shape);
  const std::vector<Hdf5ArrayToWrite> other_dtype = {
      {"d", DType::float64, shape, comm.rank() == 0 ? &floats : nullptr}};
  EXPECT_THROW(Hdf5Writer(comm, dir / "d.h5", other_dtype, {}), InvalidArgument);

  // Ranks that disagree about the arrays get CollectiveMismatch instead of a hang.
  if (comm.size() > 1) {
    const std::vector<std::int64_t> mine = {comm.rank() == 1 ? 5 : 4};
    const std::vector<Hdf5ArrayToWrite> differing = {{"m", DType::float32, mine, nullptr}};
    EXPECT_THROW(Hdf5Writer(comm, dir / "c.h5", differing, {}), CollectiveMismatch);
  }
}

TEST(Hdf5Format, WriterMisuseFailsOnEveryRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const int last = comm.size() - 1;
  const std::vector<std::int64_t> shape = {6};
  const auto held_by_0 = comm.rank() == 0 ? std::optional(whole_box(shape)) : std::nullopt;
  std::vector<Owned> leaves;
  leaves.push_back(make_leaf("x", DType::int32, shape, held_by_0));
  leaves.push_back(make_leaf("y", DType::int32, shape, held_by_0));
  const auto arrays = to_write(leaves);
  const auto mine = [&](std::size_t i) -> const void* {
    return comm.rank() == 0 ? leaves[i].data.data() : nullptr;
  };
  const std::vector<std::byte> stray(24);

  // No data for a rank's shard, or data from a rank without one: remembered, the rank keeps
  // taking part, and finish() throws on every rank naming the leaf.
  for (const int culprit : {0, last}) {
    if (culprit == last && last == 0) continue;  // at 1 rank, rank 0 holds every shard
    Hdf5Writer writer(comm, dir / "a.h5", arrays, {});
    const void* x = comm.rank() != culprit ? mine(0) : culprit == 0 ? nullptr : stray.data();
    const auto record = writer.write(0, x);
    if (comm.rank() == culprit) {
      EXPECT_FALSE(record.has_value());
    }
    (void)writer.write(1, mine(1));
    EXPECT_THAT([&] { writer.finish(false); },
                ThrowsMessage<InvalidArgument>(HasSubstr("leaf 'x'")));
  }

  // Indices out of order (on one rank or all): each call still writes the next array, so
  // no rank hangs, and finish() throws on every rank.
  for (const int culprit : {last, -1}) {
    Hdf5Writer writer(comm, dir / "b.h5", arrays, {});
    for (const std::size_t k : {0, 1}) {
      const bool misuses = culprit == -1 || comm.rank() == culprit;
      const std::size_t index = misuses ? 1 - k : k;
      const auto record = writer.write(index, mine(index));
      if (misuses) {
        EXPECT_FALSE(record.has_value());
      }
    }
    EXPECT_THAT([&] { writer.finish(false); },
                ThrowsMessage<InvalidArgument>(HasSubstr("write of array 1 fell on array 0")));
    EXPECT_THROW(writer.finish(false), InvalidArgument);
    EXPECT_THROW((void)writer.write(0, nullptr), InvalidArgument);
  }

  // finish() before every array was written.
  {
    Hdf5Writer writer(comm, dir / "c.h5", arrays, {});
    (void)writer.write(0, mine(0));
    EXPECT_THAT([&] { writer.finish(false); }, ThrowsMessage<InvalidArgument>(HasSubstr("1 of 2")));
  }

  // Ranks that made different numbers of write() calls (possible without a hang only over
  // arrays without elements) get CollectiveMismatch from finish().
  if (comm.size() > 1) {
    const std::vector<Hdf5ArrayToWrite> with_empty = {arrays[0], {"z", DType::int32, {0}, {}}};
    Hdf5Writer writer(comm, dir / "e.h5", with_empty, {});
    (void)writer.write(0, mine(0));
    if (comm.rank() == 0) (void)writer.write(1, nullptr);
    EXPECT_THROW(writer.finish(false), CollectiveMismatch);
  }

  // An unfinished writer closes its file when destroyed: the file can be written again.
  {
    Hdf5Writer writer(comm, dir / "d.h5", arrays, {});
    (void)writer.write(0, mine(0));
  }
  (void)write_all(comm, dir / "d.h5", leaves, {}, false);
  const LeafRecord y = record_of("y", DType::int32, shape);
  const std::vector<const LeafRecord*> records = {&y};
  Hdf5Reader reader(comm, dir / "d.h5");
  reader.open(records);
  EXPECT_EQ(read_box(reader, "y", DType::int32, whole_box(shape)),
            reference_box(DType::int32, shape, whole_box(shape)));
  reader.close();
}

}  // namespace
}  // namespace cairn::storage
