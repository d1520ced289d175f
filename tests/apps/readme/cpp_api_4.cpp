// docs/cpp-api.md's C++ block 4: save_tree in hdf5 and restore_tree in another decomposition. The
// harness saves rows and restores columns, and checks them.
#include "readme_harness.hpp"

int main(int argc, char** argv) {
  return readme::run(argc, argv, [] {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::int64_t ny = 12, nx = 9;
    const cairn::Box my_box{{readme::part_first(ny, rank, size), 0},
                            {readme::part_count(ny, rank, size), nx}};
    const cairn::Box other_box{{0, readme::part_first(nx, rank, size)},
                               {ny, readme::part_count(nx, rank, size)}};
    std::vector<double> u(static_cast<std::size_t>(my_box.extent[0] * nx));
    for (std::size_t i = 0; i < u.size(); ++i) {
      u[i] = static_cast<double>(my_box.offset[0] * nx) + static_cast<double>(i);
    }
    std::vector<double> v(static_cast<std::size_t>(ny * other_box.extent[1]), -1.0);
    const double t = 0.5;
    if (!cairn::storage_format_available(cairn::StorageFormat::hdf5)) {
      std::printf("docs/cpp-api.md block 4 saves in hdf5, which this build lacks: skipped\n");
      return;
    }

#include "cpp_api_4.inc"

    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t x = 0; x < other_box.extent[1]; ++x) {
        readme::check(v[static_cast<std::size_t>(y * other_box.extent[1] + x)] ==
                          static_cast<double>(y * nx + other_box.offset[1] + x),
                      "the columns restored differ from the rows saved");
      }
    }
    comm.barrier("block 4 checked");
    if (comm.is_primary()) std::filesystem::remove_all("ckpt");
  });
}
