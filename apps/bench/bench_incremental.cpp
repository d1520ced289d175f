// cairn's incremental case: a 2-D float64 field saved for kSteps steps through a
// CheckpointManager in the posix format, with CheckpointManagerOptions::incremental off and on.
// Before each step after the first, a band of a tenth of the rows changes, and the band lies
// one band lower at each step (a front moving through the field), so that the changed bytes of
// each rank's block are contiguous. Every step records its save time (synchronous, with fsync),
// the bytes the save wrote — the leaf's stored bytes less those it refers to in an earlier step
// (read_tree_info) — and, as a cross-check, the bytes the file system allocated to the step's
// own shard files (st_blocks, which counts no hole the save left where it referred to a chunk).
// The last step is then restored after dropping the page cache and compared with the field,
// exactly. The ratios on / off are apps/bench/bench_incremental.py's.
//
// Size: the field is one leaf of the main tree (rows x cols, 256 MiB at the default 2 GiB run,
// 8 MiB in quick mode) in 2-D blocks, with the default checksum chunks (1 MiB), the unit an
// incremental save writes or refers to. Public API only.
#include <sys/stat.h>

#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <boost/json/value_from.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench_common.hpp"

namespace bench {
namespace {

constexpr int kSteps = 6;
constexpr double kChangedFraction = 0.1;

// The rows [begin, end) that change before step `step` (1..kSteps-1): a tenth of the rows,
// `step` bands down from the top (back at the top when the field has too few rows for that).
std::pair<std::int64_t, std::int64_t> band_of(std::int64_t rows, int step) {
  const auto height = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(static_cast<double>(rows) * kChangedFraction));
  const std::int64_t begin = (step * height) % (rows - height + 1);
  return {begin, begin + height};
}

// Gives the rows of `band` in this rank's block `box` of the rows x cols field the values of
// step `step`: different from every earlier step's, and exact in float64.
void change_band(std::vector<double>& block, const cairn::Box& box, std::int64_t cols,
                 std::pair<std::int64_t, std::int64_t> band, int step) {
  const std::int64_t first = std::max(band.first, box.offset[0]);
  const std::int64_t last = std::min(band.second, box.offset[0] + box.extent[0]);
  for (std::int64_t i = first; i < last; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      const auto k = static_cast<std::size_t>((i - box.offset[0]) * box.extent[1] + j);
      block[k] =
          static_cast<double>(step) * 1e12 + static_cast<double>(i * cols + box.offset[1] + j);
    }
  }
}

// Bytes of the array leaves of the save in `dir` that the save itself wrote: their stored
// bytes less those that lie in an earlier save's files. Collective over `world`.
std::int64_t written_bytes(const cairn::Comm& world, const std::filesystem::path& dir) {
  std::uint64_t bytes = 0;
  for (const cairn::SavedLeafInfo& leaf : cairn::read_tree_info(world, dir).leaves) {
    bytes += leaf.stored_bytes - leaf.referenced_bytes;
  }
  return static_cast<std::int64_t>(bytes);
}

// Bytes allocated to the shard files of the save in `dir` that it wrote itself: every file of
// shards/ but the links to earlier saves' files (r<k>.bin). Rank 0's count, on every rank.
// Collective over MPI_COMM_WORLD.
std::int64_t allocated_bytes(const std::filesystem::path& dir) {
  std::int64_t bytes = 0;
  if (world_rank() == 0) {
    for (const auto& entry : std::filesystem::directory_iterator(dir / "shards")) {
      if (entry.path().filename().string().starts_with("r")) continue;
      struct stat st {};
      if (::stat(entry.path().c_str(), &st) != 0) {
        throw std::runtime_error("stat '" + entry.path().string() + "': " + std::strerror(errno));
      }
      bytes += static_cast<std::int64_t>(st.st_blocks) * 512;
    }
  }
  return world_max(bytes);
}

double median_of(std::vector<double> values) {
  std::ranges::sort(values);
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// `run.reps` repetitions of: kSteps saves of the field through a manager with incremental
// saves `on` or off, then a restore of the last step after dropping the page cache, checked
// exactly. Records "cairn.posix.incremental.<on|off>.save" (seconds: the median over the steps
// after the first, which are those an incremental save can refer to an earlier step for) and
// ".restore". Collective over MPI_COMM_WORLD.
void measure(const Run& run, const cairn::Comm& world, const std::filesystem::path& root, bool on) {
  const Shape shape{.leaves = 1, .rows = run.shape.rows, .cols = run.shape.cols};
  const cairn::Box box = block_of(shape, world.rank(), world.size());
  const std::int64_t data_bytes = shape.total_bytes();
  const std::string name = std::string("cairn.posix.incremental.") + (on ? "on" : "off");
  const cairn::TreeSaveOptions options{.format = cairn::StorageFormat::posix,
                                       .io_buffer_bytes = run.io_buffer_bytes};
  for (int rep = 0; rep < run.reps; ++rep) {
    remove_tree(root);
    std::vector<double> field = fill_box(shape, 0, box);
    cairn::ArrayTree tree;
    tree.add_array("field", cairn::ArrayShard::host(field.data(), {shape.rows, shape.cols}, box));
    cairn::CheckpointManager manager(world, root, {.incremental = on, .enable_async = false});
    std::vector<double> seconds;
    std::vector<std::int64_t> written;
    std::vector<std::int64_t> allocated;
    drop_caches(run.drop);
    for (int step = 0; step < kSteps; ++step) {
      if (step > 0) change_band(field, box, shape.cols, band_of(shape.rows, step), step);
      bool saved = false;
      seconds.push_back(
          timed([&] { saved = manager.save(step, cairn::ArrayTreeSave(tree, options)); }));
      if (!saved)
        throw std::runtime_error(name + ": the manager did not save step " + std::to_string(step));
      written.push_back(written_bytes(world, manager.step_path(step)));
      allocated.push_back(allocated_bytes(manager.step_path(step)));
    }
    const std::vector<double> later_seconds(seconds.begin() + 1, seconds.end());
    const boost::json::object common{{"data_bytes", data_bytes},
                                     {"steps", kSteps},
                                     {"changed_fraction", kChangedFraction},
                                     {"chunk_bytes", cairn::TreeSaveOptions{}.checksum_chunk_bytes},
                                     {"incremental", on}};
    boost::json::object save = common;
    save["step_seconds"] = boost::json::value_from(seconds);
    save["step_written_bytes"] = boost::json::value_from(written);
    save["step_allocated_bytes"] = boost::json::value_from(allocated);
    run.recorder->add(name + ".save", rep, median_of(later_seconds), data_bytes, std::move(save));

    std::vector<double> restored(field.size(), -1.0);
    cairn::ArrayTree target;
    target.add_array("field",
                     cairn::ArrayShard::host(restored.data(), {shape.rows, shape.cols}, box));
    const std::string dropped = drop_caches(run.drop);
    const double restore_seconds = timed([&] {
      cairn::ArrayTreeRestore args(target, {.restore_concurrent_bytes = run.io_buffer_bytes});
      (void)manager.restore(kSteps - 1, &args);
    });
    std::int64_t mismatches = 0;
    for (std::size_t k = 0; k < field.size(); ++k) mismatches += restored[k] != field[k] ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &mismatches, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (mismatches != 0) {
      throw std::runtime_error(name + " (repetition " + std::to_string(rep) +
                               "): " + std::to_string(mismatches) + " restored values of step " +
                               std::to_string(kSteps - 1) + " differ from the field");
    }
    boost::json::object restore = common;
    restore["page_cache"] = dropped;
    run.recorder->add(name + ".restore", rep, restore_seconds, data_bytes, std::move(restore));
  }
  remove_tree(root);
}

}  // namespace

void run_cairn_incremental(const Run& run) {
  cairn::Comm world(MPI_COMM_WORLD);
  const auto base = run.dir / "cairn-incremental-posix";
  for (const bool on : {false, true}) measure(run, world, base / (on ? "on" : "off"), on);
  remove_tree(base);
}

}  // namespace bench
