// Writes the format-version-1 sample trees of tests/data/v1 (see README.md there): run once,
// on exactly 2 MPI ranks, with the cairn of format version 1; never with a newer one.
//
//   make_v1 <output directory>   -> <output directory>/posix and, when available, /hdf5
#include <mpi.h>

#include <cairn/comm.hpp>
#include <cairn/storage.hpp>
#include <cairn/tree.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

namespace {

constexpr std::int64_t kRows = 6;
constexpr std::int64_t kCols = 5;
constexpr std::int64_t kIds = 7;
constexpr std::int64_t kWeights = 4;

// The values, one formula per leaf (README.md repeats them).
double temperature(std::int64_t i, std::int64_t j) { return 100.0 * i + j; }
std::int32_t id(std::int64_t k) { return static_cast<std::int32_t>(10 * k - 30); }
float weight(std::int64_t k) { return 0.25f * static_cast<float>(k) + 1.0f; }

void write(const cairn::Comm& comm, const std::filesystem::path& dir, cairn::StorageFormat format) {
  const int rank = comm.rank();
  // "fields/temperature": rows [0, 3) on rank 0 and [3, 6) on rank 1.
  const std::int64_t row0 = rank == 0 ? 0 : 3;
  const std::int64_t rows = 3;
  std::vector<double> t;
  for (std::int64_t i = row0; i < row0 + rows; ++i) {
    for (std::int64_t j = 0; j < kCols; ++j) t.push_back(temperature(i, j));
  }
  // "particles/ids": elements [0, 2) on rank 0 and [2, 7) on rank 1.
  const std::int64_t k0 = rank == 0 ? 0 : 2;
  const std::int64_t count = rank == 0 ? 2 : 5;
  std::vector<std::int32_t> ids;
  for (std::int64_t k = k0; k < k0 + count; ++k) ids.push_back(id(k));
  // "mesh/weights": the same whole array on both ranks.
  std::vector<float> w;
  for (std::int64_t k = 0; k < kWeights; ++k) w.push_back(weight(k));

  cairn::ArrayTree tree;
  tree.add_array("fields/temperature",
                 cairn::ArrayShard::host(t.data(), {kRows, kCols}, {{row0, 0}, {rows, kCols}}));
  tree.add_array("particles/ids", cairn::ArrayShard::host(ids.data(), {kIds}, {{k0}, {count}}));
  tree.add_array("mesh/weights", cairn::ArrayShard::host(w.data(), {kWeights}, {}, true));
  tree.add_scalar("step", cairn::Scalar(std::int64_t{42}));
  tree.add_string("run/name", "cairn v1 sample");
  cairn::save_tree(comm, dir, tree, {.format = format});
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    cairn::Comm comm(MPI_COMM_WORLD);
    if (argc != 2 || comm.size() != 2) {
      if (comm.is_primary()) std::fprintf(stderr, "usage: mpiexec -n 2 make_v1 <output dir>\n");
      status = 2;
    } else {
      const std::filesystem::path out = argv[1];
      write(comm, out / "posix", cairn::StorageFormat::posix);
      if (cairn::storage_format_available(cairn::StorageFormat::hdf5)) {
        write(comm, out / "hdf5", cairn::StorageFormat::hdf5);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_v1: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
