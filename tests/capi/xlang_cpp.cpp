// Cross-language checkpoints, C++ side: `xlang_cpp DIR...` restores each checkpoint (written
// by xlang_c and xlang_fortran) with the C++ API, as saved with whole arrays, and checks that
// every array leaf holds exactly the bytes of the reference arrays of tests/capi/xlang_c.c,
// so that a C and a Fortran checkpoint of the same data are byte-for-byte the same. Exits
// non-zero on any failure.
#include <mpi.h>

#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>

#include <complex>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

// The bytes every checkpoint must hold for an array leaf.
template <class T>
bool same_bytes(const cairn::ArrayTree& tree, const std::string& path,
                const std::vector<std::int64_t>& shape, const std::vector<T>& expected) {
  const auto& shard = tree.at(path).as_array();
  if (shard.dtype != cairn::dtype_of<T>() || shard.global_shape != shape ||
      shard.local_bytes() != static_cast<std::int64_t>(expected.size() * sizeof(T))) {
    std::fprintf(stderr, "xlang_cpp: leaf '%s' has another dtype or shape\n", path.c_str());
    return false;
  }
  if (std::memcmp(shard.data, expected.data(), expected.size() * sizeof(T)) != 0) {
    std::fprintf(stderr, "xlang_cpp: leaf '%s' differs from the reference bytes\n", path.c_str());
    return false;
  }
  return true;
}

bool check(const cairn::Comm& comm, const std::string& dir) {
  cairn::CheckpointManager manager(comm, dir, {.read_only = true});
  const cairn::ArrayTreeRestore args(cairn::AsSavedOptions{.whole_arrays = true});
  const auto tree = cairn::Checkpointer::result_as<cairn::ArrayTree>(manager.restore({}, &args));
  std::vector<double> u(8 * 6);
  for (std::size_t y = 0; y < 8; ++y) {
    for (std::size_t x = 0; x < 6; ++x) u[y * 6 + x] = 100.0 * static_cast<double>(y) + x + 1.0;
  }
  bool ok = same_bytes(tree, "fields/u", {8, 6}, u);
  ok = same_bytes(tree, "n", {3}, std::vector<std::int32_t>{7, 1, -1}) && ok;
  ok = same_bytes(tree, "z", {2}, std::vector<std::complex<double>>{{1.0, -1.0}, {2.0, 0.5}}) && ok;
  ok = tree.at("time").as_scalar() == cairn::Scalar(0.5) && ok;
  ok = tree.at("name").as_string() == "heat" && ok;
  if (ok && comm.is_primary())
    std::printf("xlang_cpp: '%s' holds the reference bytes\n", dir.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    cairn::Comm comm(MPI_COMM_WORLD);
    for (int i = 1; i < argc; ++i) {
      if (!check(comm, argv[i])) status = 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xlang_cpp: %s\n", e.what());
    status = 1;
  }
  if (argc < 2) status = 2;
  MPI_Finalize();
  return status;
}
