// A sync save copies no array, and streams strided views through its I/O buffer: the peak
// resident memory of save_tree() grows by at most a small constant plus one I/O buffer, far
// less than the tree it writes.
#include <cairn/storage.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "proc_memory.hpp"
#include "storage/storage_test_util.hpp"
#include "support/test_support.hpp"

using namespace cairn;

namespace {

// How much the peak resident memory grows during one save_tree() of `tree` into `dir` /
// "measured", after a warm-up save into `dir` / "warm" so that lazily loaded libraries are not
// counted. std::nullopt when the peak cannot be reset here. Collective.
std::optional<std::int64_t> save_peak_growth(const Comm& comm, const std::filesystem::path& dir,
                                             const ArrayTree& tree, TreeSaveOptions options) {
  TreeSaveOptions warm = options;
  warm.fsync = false;
  save_tree(comm, dir / "warm", tree, warm);
  const cairn_app::PeakRss measured =
      cairn_app::measure_peak_rss([&] { save_tree(comm, dir / "measured", tree, options); });
  if (measured.peak < 0) return std::nullopt;
  return measured.growth;
}

}  // namespace

TEST(StorageMemory, SyncSaveDoesNotCopyTheTree) {
  cairn::testing::SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  constexpr std::int64_t kLeafBytes = 64 << 20;
  constexpr std::int64_t kLeaves = 2;
  constexpr std::int64_t kAllowed = 40 << 20;  // constant + one I/O buffer (16 MiB)
  const std::int64_t n = kLeafBytes / 8;
  const std::vector<std::int64_t> shape = {n * comm.size()};
  const Box box{{n * comm.rank()}, {n}};

  std::vector<std::vector<double>> data(kLeaves);
  ArrayTree tree;
  for (std::int64_t k = 0; k < kLeaves; ++k) {
    data[k].assign(static_cast<std::size_t>(n), 1.0 + static_cast<double>(k));
    tree.add_array("leaf" + std::to_string(k), ArrayShard::host(data[k].data(), shape, box));
  }
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto measured = save_peak_growth(comm, tmp / std::string(storage_format_name(format)),
                                           tree, {.format = format});
    if (!measured) GTEST_SKIP() << "/proc/self/clear_refs is not writable here";
    const std::int64_t growth = *measured;
    EXPECT_LT(growth, kAllowed) << "peak RSS grew by " << growth / (1 << 20) << " MiB while saving "
                                << kLeaves * kLeafBytes / (1 << 20) << " MiB";
    RecordProperty("peak_growth_bytes_" + std::string(storage_format_name(format)),
                   std::to_string(growth));
    std::fprintf(stderr, "[rank %d] %s save of %lld MiB: peak RSS grew by %.1f MiB\n", comm.rank(),
                 std::string(storage_format_name(format)).c_str(),
                 static_cast<long long>(kLeaves * kLeafBytes >> 20),
                 static_cast<double>(growth) / (1 << 20));
  }
}

TEST(StorageMemory, SyncSaveStreamsStridedViews) {
  cairn::testing::SharedTempDir tmp;
  Comm comm(MPI_COMM_WORLD);
  // A 64 MiB shard held column-major (strides 1, rows): every byte goes through packing.
  constexpr std::int64_t kRows = 4096;
  constexpr std::int64_t kCols = (64 << 20) / 8 / kRows;
  constexpr std::int64_t kAllowed = 40 << 20;  // constant + one I/O buffer (16 MiB)
  const std::vector<std::int64_t> shape = {kRows * comm.size(), kCols};
  const Box box{{kRows * comm.rank(), 0}, {kRows, kCols}};
  std::vector<double> column_major(static_cast<std::size_t>(kRows * kCols), 2.5);
  ArrayTree tree;
  tree.add_array(
      "transposed",
      {.global_shape = shape, .box = box, .data = column_major.data(), .strides = {1, kRows}});
  for (StorageFormat format : cairn::testing::available_formats()) {
    SCOPED_TRACE(std::string(storage_format_name(format)));
    const auto measured = save_peak_growth(comm, tmp / std::string(storage_format_name(format)),
                                           tree, {.format = format, .fsync = false});
    if (!measured) GTEST_SKIP() << "/proc/self/clear_refs is not writable here";
    const std::int64_t growth = *measured;
    EXPECT_LT(growth, kAllowed) << "peak RSS grew by " << growth / (1 << 20)
                                << " MiB while saving a 64 MiB strided view";
    std::fprintf(stderr, "[rank %d] %s save of a 64 MiB strided view: peak RSS grew by %.1f MiB\n",
                 comm.rank(), std::string(storage_format_name(format)).c_str(),
                 static_cast<double>(growth) / (1 << 20));
  }
}
