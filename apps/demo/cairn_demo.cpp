// cairn_demo: a small MPI save and restore, end to end.
//
// Every rank owns a block of a 2-D field (and a share of a particle array); the program saves
// them, with run information, in both storage formats, then restores the field on a
// different number of ranks with a different decomposition (1-D slabs on all ranks but the
// last), and checks every value. Exits non-zero on any mismatch.
//
//   mpiexec -n 4 cairn_demo [DIR]
#include <mpi.h>

#include <cairn/storage.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kRows = 480;
constexpr std::int64_t kCols = 640;

double field_value(std::int64_t i, std::int64_t j) {
  return std::sin(0.01 * static_cast<double>(i)) * std::cos(0.02 * static_cast<double>(j)) +
         static_cast<double>(i * kCols + j);
}

std::pair<std::int64_t, std::int64_t> split(std::int64_t n, int part, int parts) {
  return {n * part / parts, n * (part + 1) / parts - n * part / parts};
}

// A near-square process grid: rank r's block of the field.
cairn::Box block_of(int rank, int size) {
  int rows = 1;
  for (int d = 1; d * d <= size; ++d) {
    if (size % d == 0) rows = d;
  }
  const int cols = size / rows;
  auto [r0, rn] = split(kRows, rank / cols, rows);
  auto [c0, cn] = split(kCols, rank % cols, cols);
  return cairn::Box{{r0, c0}, {rn, cn}};
}

std::vector<double> fill(const cairn::Box& box) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(box.extent[0] * box.extent[1]));
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      values.push_back(field_value(box.offset[0] + i, box.offset[1] + j));
    }
  }
  return values;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(const std::filesystem::path& root) {
  cairn::Comm world(MPI_COMM_WORLD);
  const int rank = world.rank();
  const int size = world.size();
  auto say = [&](const std::string& text) {
    if (world.is_primary()) std::printf("%s\n", text.c_str());
  };

  const cairn::Box mine = block_of(rank, size);
  std::vector<double> field = fill(mine);
  std::vector<std::int64_t> ids(100);
  for (std::size_t k = 0; k < ids.size(); ++k) ids[k] = rank * 100 + static_cast<std::int64_t>(k);

  cairn::ArrayTree state;
  state.add_array("fields/temperature",
                  cairn::ArrayShard::host(field.data(), {kRows, kCols}, mine));
  state.add_array("particles/id", cairn::ArrayShard::host(ids.data(), {100 * size},
                                                          cairn::Box{{100 * rank}, {100}}));
  state.add_scalar("time", cairn::Scalar(12.5));
  state.add_json("run", boost::json::value{{"ranks", size}, {"grid", {kRows, kCols}}});

  int failures = 0;
  for (cairn::StorageFormat format : {cairn::StorageFormat::posix, cairn::StorageFormat::hdf5}) {
    if (!cairn::storage_format_available(format)) continue;
    const std::string name(cairn::storage_format_name(format));
    const auto dir = root / name;
    auto start = std::chrono::steady_clock::now();
    cairn::save_tree(world, dir, state, {.format = format});
    const double mib = static_cast<double>(kRows * kCols * 8 + 800 * size) / (1 << 20);
    say("saved " + std::to_string(mib).substr(0, 5) + " MiB on " + std::to_string(size) +
        " ranks as " + name + " in " + std::to_string(seconds_since(start)).substr(0, 6) + " s");

    // Restore on size-1 ranks (or 1) as row slabs.
    const int readers = size > 1 ? size - 1 : 1;
    MPI_Comm split_comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < readers ? 0 : MPI_UNDEFINED, rank, &split_comm);
    int bad = 0;
    if (split_comm != MPI_COMM_NULL) {
      cairn::Comm comm(split_comm);
      MPI_Comm_free(&split_comm);
      auto [r0, rn] = split(kRows, comm.rank(), comm.size());
      const cairn::Box slab{{r0, 0}, {rn, kCols}};
      std::vector<double> back(static_cast<std::size_t>(rn * kCols), -1.0);
      cairn::ArrayTree target;
      target.add_array("fields/temperature",
                       cairn::ArrayShard::host(back.data(), {kRows, kCols}, slab));
      target.add_scalar("time", cairn::Scalar(0.0));
      start = std::chrono::steady_clock::now();
      cairn::restore_tree(comm, dir, target);
      if (back != fill(slab)) bad = 1;
      if (target.at("time").as_scalar().as<double>() != 12.5) bad = 1;
      if (comm.is_primary()) {
        std::printf("restored the field on %d ranks as row slabs in %.4f s: %s\n", comm.size(),
                    seconds_since(start), bad ? "MISMATCH" : "every value matches");
      }
    }
    failures += static_cast<int>(world.sum(bad));
  }
  say(failures == 0 ? "demo: OK" : "demo: FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int code = 1;
  try {
    std::filesystem::path root = argc > 1 ? argv[1] : "cairn-demo-output";
    code = run(root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cairn_demo: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
