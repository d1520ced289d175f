// Reference data, leaves to write and checks shared by the hdf5 format's tests.
#include "hdf5_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "support/test_support.hpp"

namespace cairn::storage::hdf5_test {
namespace {

std::int64_t split(std::int64_t n, int parts, int i) { return n * i / parts; }

}  // namespace

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

Box regular_block_of(const std::vector<std::int64_t>& shape, const std::vector<int>& grid, int r) {
  Box box = whole_box(shape);
  int rest = r;
  for (std::size_t d = grid.size(); d-- > 0;) {
    const int coordinate = rest % grid[d];
    rest /= grid[d];
    const std::int64_t step = (shape[d] + grid[d] - 1) / grid[d];
    box.offset[d] = std::min(shape[d], step * coordinate);
    box.extent[d] = std::min(shape[d], step * (coordinate + 1)) - box.offset[d];
  }
  return box;
}

std::vector<int> grid_2d(int size) {
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  return {dims[0], dims[1]};
}

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

std::vector<ArrayToWrite> to_write(const std::vector<Owned>& leaves) {
  std::vector<ArrayToWrite> out;
  for (const Owned& leaf : leaves)
    out.push_back(array_to_write(leaf.path, leaf.dtype, leaf.shape, leaf.box));
  return out;
}

ArrayToWrite array_to_write(std::string path, DType dtype, std::vector<std::int64_t> shape,
                            std::optional<Box> box) {
  ArrayToWrite array;
  static_cast<StoredArray&>(array) = {
      .path = std::move(path), .dtype = dtype, .shape = std::move(shape), .chunk_bytes = 1};
  array.box = std::move(box);
  return array;
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

std::vector<ShardPlacement> write_all(const Comm& comm, const std::filesystem::path& file,
                                      const std::vector<Owned>& leaves,
                                      std::span<const ValueToWrite> values, bool fsync) {
  const auto arrays = to_write(leaves);
  Hdf5Writer writer(comm, file, arrays, values);
  std::vector<ShardPlacement> placements;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].box) continue;
    placements.push_back(writer.place(i, leaves[i].data.size()));
    writer.write(i, 0, leaves[i].data);
  }
  writer.flush(fsync);
  writer.close(comm, fsync);
  return placements;
}

void write_and_check_records(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves,
                             std::span<const ValueToWrite> values) {
  const auto placements = write_all(comm, file, leaves, values);
  const auto holders = std::count_if(leaves.begin(), leaves.end(),
                                     [](const Owned& leaf) { return leaf.box.has_value(); });
  EXPECT_EQ(placements.size(), static_cast<std::size_t>(holders));
  for (const ShardPlacement& placement : placements) {
    EXPECT_EQ(placement.file, "data.h5");
    EXPECT_EQ(placement.byte_offset, 0U);
  }
}

void expect_reference_arrays(const Comm& comm, const std::filesystem::path& file,
                             const std::vector<Owned>& leaves, const std::string& unwritten) {
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
}  // namespace cairn::storage::hdf5_test
