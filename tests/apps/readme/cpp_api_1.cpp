// docs/cpp-api.md's C++ block 1: restore_tree into a new layout (a grown grid, a renamed leaf). The
// harness saves the "old" checkpoint (leaf "u", 6 x 8) and checks the restored 10 x 8
// "fields/u": the saved rows, then zeros.
#include "readme_harness.hpp"

int main(int argc, char** argv) {
  return readme::run(argc, argv, [] {
    cairn::Comm comm(MPI_COMM_WORLD);
    const std::int64_t old_ny = 6, ny = 10, nx = 8;
    const int rank = comm.rank(), size = comm.size();
    {
      const cairn::Box rows{{readme::part_first(old_ny, rank, size), 0},
                            {readme::part_count(old_ny, rank, size), nx}};
      std::vector<double> u(static_cast<std::size_t>(rows.extent[0] * nx));
      for (std::size_t i = 0; i < u.size(); ++i) {
        u[i] = static_cast<double>(rows.offset[0] * nx) + static_cast<double>(i) + 1.0;
      }
      cairn::ArrayTree old;
      old.add_array("u", cairn::ArrayShard::host(u.data(), {old_ny, nx}, rows));
      cairn::save_tree(comm, "old/100/state", old);
    }
    const cairn::Box columns{{0, readme::part_first(nx, rank, size)},
                             {ny, readme::part_count(nx, rank, size)}};
    std::vector<double> v(static_cast<std::size_t>(ny * columns.extent[1]), -1.0);
    cairn::ArrayTree target;
    target.add_array("fields/u", cairn::ArrayShard::host(v.data(), {ny, nx}, columns));

#include "cpp_api_1.inc"

    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t x = 0; x < columns.extent[1]; ++x) {
        const double want =
            y < old_ny ? static_cast<double>(y * nx + columns.offset[1] + x) + 1.0 : 0.0;
        readme::check(v[static_cast<std::size_t>(y * columns.extent[1] + x)] == want,
                      "fields/u is not the old u, padded with zeros");
      }
    }
    if (comm.is_primary()) std::filesystem::remove_all("old");
  });
}
