// The hdf5 format directly (write_hdf5 + Hdf5Reader): every dtype at any rank count with 1-d
// and 2-d decompositions, ranks without a shard, replicated leaves, values, sub-box reads,
// files read by h5py, and the errors a damaged or mismatched file gives.
#include <cairn/comm.hpp>
#include <cairn/tree.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "storage/checksum.hpp"
#include "storage/hdf5_format.hpp"
#include "support/test_support.hpp"

namespace cairn::storage {
namespace {

using ::testing::HasSubstr;
using testing::SharedTempDir;

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

/// Writes `leaves` and checks the records this rank gets back.
void write_and_check_records(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves,
                             std::span<const Hdf5ValueToWrite> values = {}) {
  const auto arrays = to_write(leaves);
  const auto records = write_hdf5(comm, file, arrays, values, 1 << 20, true);
  std::size_t k = 0;
  for (const Owned& leaf : leaves) {
    if (!leaf.box) continue;
    ASSERT_LT(k, records.size()) << leaf.path;
    const ShardRecord& r = records[k++];
    EXPECT_EQ(r.rank, comm.rank());
    EXPECT_EQ(r.box, *leaf.box) << leaf.path;
    EXPECT_EQ(r.file, "data.h5");
    EXPECT_EQ(r.bytes, leaf.data.size()) << leaf.path;
    EXPECT_EQ(r.checksum, checksum_of(leaf.data)) << leaf.path;
  }
  EXPECT_EQ(k, records.size());
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

  std::vector<LeafRecord> records;
  for (const Owned& leaf : leaves) records.push_back(record_of(leaf.path, leaf.dtype, leaf.shape));
  std::vector<const LeafRecord*> pointers;
  for (const LeafRecord& r : records) pointers.push_back(&r);
  Hdf5Reader reader(comm, file);
  reader.open(pointers);
  for (const Owned& leaf : leaves) {
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

TEST(Hdf5Format, StridedShardIsPackedAndChecksummedAsWritten) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {3, 4 * comm.size()};
  const Box box = block_of(shape, {1, comm.size()}, comm.rank());
  // The box stored column-major: element (i, j) at j * 3 + i.
  const std::vector<std::byte> row_major = reference_box(DType::int32, shape, box);
  std::vector<std::int32_t> column_major(12);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      std::memcpy(&column_major[static_cast<std::size_t>(j * 3 + i)],
                  row_major.data() + 4 * (i * 4 + j), 4);
    }
  }
  ArrayShard shard = ArrayShard::host(column_major.data(), shape, box);
  shard.strides = {1, 3};
  const std::vector<Hdf5ArrayToWrite> arrays = {{"s", DType::int32, shape, &shard}};
  const auto file = dir / "data.h5";
  const auto written = write_hdf5(comm, file, arrays, {}, 16, false);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].checksum, checksum_of(row_major));

  const LeafRecord record = record_of("s", DType::int32, shape);
  const std::vector<const LeafRecord*> records = {&record};
  Hdf5Reader reader(comm, file);
  reader.open(records);
  EXPECT_EQ(read_box(reader, "s", DType::int32, box), row_major);
  reader.close();
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
  EXPECT_TRUE(write_hdf5(comm, file, {}, values, 1 << 20, true).empty());

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

TEST(Hdf5Format, MisuseFailsOnEveryRank) {
  const SharedTempDir dir;
  const Comm comm(MPI_COMM_WORLD);
  const std::vector<std::int64_t> shape = {4};
  std::vector<float> data(4, 1.0f);
  // Device memory is not supported (yet): every rank throws, not only the holder.
  ArrayShard device = ArrayShard::host(data.data(), shape);
  device.memory = MemoryKind::cuda_device;
  const std::vector<Hdf5ArrayToWrite> arrays = {
      {"d", DType::float32, shape, comm.rank() == 0 ? &device : nullptr}};
  EXPECT_THROW((void)write_hdf5(comm, dir / "a.h5", arrays, {}, 1 << 20, false), Unsupported);

  // A box outside the shape.
  ArrayShard outside = ArrayShard::host(data.data(), shape, Box{{2}, {4}});
  const std::vector<Hdf5ArrayToWrite> bad = {
      {"o", DType::float32, shape, comm.rank() == 0 ? &outside : nullptr}};
  EXPECT_THROW((void)write_hdf5(comm, dir / "b.h5", bad, {}, 1 << 20, false), InvalidArgument);

  // Ranks that disagree about the arrays get CollectiveMismatch instead of a hang.
  if (comm.size() > 1) {
    const std::vector<std::int64_t> mine = {comm.rank() == 1 ? 5 : 4};
    const std::vector<Hdf5ArrayToWrite> differing = {{"m", DType::float32, mine, nullptr}};
    EXPECT_THROW((void)write_hdf5(comm, dir / "c.h5", differing, {}, 1 << 20, false),
                 CollectiveMismatch);
  }
}

}  // namespace
}  // namespace cairn::storage
