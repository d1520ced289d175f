// stats_writer ROOT FORMAT: saves step 1 under ROOT, in FORMAT (posix or hdf5), from every rank
// of MPI_COMM_WORLD, a tree whose values' statistics are known (cli_tool_test.sh, case
// leaf_stats, checks what `cairn inspect` and `cairn ls -l` show of them). Each array is cut
// into row slabs, one per rank.
//   f64    float64 (8, 6): i*6 + j - 10, but NaN at (2, 3), +inf at (5, 0), -inf at (6, 5):
//          min -10, max 37, 1 NaN, 2 inf
//   f32    float32 (10,): k/2 - 1: min -1, max 3.5
//   i32    int32 (8, 3): 5 - 3k: min -64, max 5
//   u8     uint8 (12,): 20k: min 0, max 220
//   h      float64 (5,) saved as float16: -2, 0.5, 1, +inf, 3: min -2, max 3, 1 inf
//   z      float64 (6, 4), zstd when built: 100 + k/4, but NaN at k = 7: min 100, max 105.75,
//          1 NaN
//   digits float64 (4,): 0.1 + 0.2, -1/3, -2/3, 3.7e-300: min -0.6666666666666666, max
//          0.30000000000000004 (every digit kept)
//   nan    float64 (4,): every value NaN: no min or max, 4 NaN
//   flags  bool (4,): no statistics
#include <cairn/cairn.hpp>
#include <cairn/config.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace {

// This rank's rows of `rows` and their first.
std::pair<std::int64_t, std::int64_t> slab(const cairn::Comm& comm, std::int64_t rows) {
  const std::int64_t first = rows * comm.rank() / comm.size();
  return {first, rows * (comm.rank() + 1) / comm.size() - first};
}

// Adds leaf `path` of `shape` (1-D or 2-D) whose element of flat index k is value(k), this
// rank holding its row slab.
template <class T, class F>
void add(cairn::ArrayTree& tree, const cairn::Comm& comm, const char* path,
         std::vector<std::int64_t> shape, F value) {
  const auto [first, count] = slab(comm, shape[0]);
  const std::int64_t cols = shape.size() > 1 ? shape[1] : 1;
  const auto data = std::make_shared<T[]>(static_cast<std::size_t>(count * cols));
  for (std::int64_t k = 0; k < count * cols; ++k) data[k] = value(first * cols + k);
  cairn::Box box{{first}, {count}};
  if (shape.size() > 1) box = {{first, 0}, {count, cols}};
  tree.add_array(path, cairn::ArrayShard::host(data.get(), shape, box), data);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    if (argc != 3) throw cairn::InvalidArgument("usage: stats_writer ROOT FORMAT");
    cairn::Comm comm(MPI_COMM_WORLD);
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    constexpr double kInf = std::numeric_limits<double>::infinity();
    cairn::ArrayTree tree;
    add<double>(tree, comm, "f64", {8, 6}, [&](std::int64_t k) {
      return k == 2 * 6 + 3 ? kNaN : k == 5 * 6 ? kInf : k == 6 * 6 + 5 ? -kInf : k - 10.0;
    });
    add<float>(tree, comm, "f32", {10}, [](std::int64_t k) { return k / 2.0f - 1.0f; });
    add<std::int32_t>(tree, comm, "i32", {8, 3},
                      [](std::int64_t k) { return static_cast<std::int32_t>(5 - 3 * k); });
    add<std::uint8_t>(tree, comm, "u8", {12},
                      [](std::int64_t k) { return static_cast<std::uint8_t>(20 * k); });
    add<double>(tree, comm, "h", {5}, [&](std::int64_t k) {
      const double values[] = {-2.0, 0.5, 1.0, kInf, 3.0};
      return values[k];
    });
    add<double>(tree, comm, "z", {6, 4},
                [&](std::int64_t k) { return k == 7 ? kNaN : 100.0 + k / 4.0; });
    add<double>(tree, comm, "digits", {4}, [](std::int64_t k) {
      const double values[] = {0.1 + 0.2, -1.0 / 3, -2.0 / 3, 3.7e-300};
      return values[k];
    });
    add<double>(tree, comm, "nan", {4}, [&](std::int64_t) { return kNaN; });
    add<bool>(tree, comm, "flags", {4}, [](std::int64_t k) { return k % 2 == 0; });

    cairn::TreeSaveOptions options{.format = cairn::storage_format_from_name(argv[2]).value()};
    options.save_args["h"] = {.dtype = cairn::DType::float16};
    if (CAIRN_HAVE_ZSTD) options.save_args["z"] = {.compression = cairn::Compression::zstd()};
    cairn::CheckpointManager mgr(comm, argv[1]);
    mgr.save(1, cairn::ArrayTreeSave(std::move(tree), options), {.force = true});
    mgr.wait_until_finished();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stats_writer: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
