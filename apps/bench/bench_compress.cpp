// cairn's compression case: for each compression (none, zstd at its default level with the
// bytes shuffled first — the default — and without, zfp with an absolute error bound of 1e-6) and
// each data set (a smooth 2-D field, uniform random float64), a timed sync save, the bytes it left
// on disk, a timed restore after dropping the page cache, and a check of the restored values (exact
// for none and zstd, within the bound for zfp). The ratios to `none` are
// apps/bench/bench_compression.py's.
//
// Size: each data set is one leaf of (rows / 2) x cols float64 in 2-D blocks, a sixteenth of
// the main tree (128 MiB at the default 2 GiB run, 4 MiB in quick mode), so that the 4
// compressions x 2 data sets x the repetitions stay under about a minute per format on a
// 2-core machine, where zstd and zfp run on the cores the 4 ranks share. Public API only.
#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

#include "bench_common.hpp"

namespace bench {
namespace {

// A compression of the case: its name in the records, what it is, and its error bound (0:
// lossless).
struct CompressionCase {
  std::string name;
  std::string description;
  cairn::Compression compression;
  double bound = 0;
};

std::vector<CompressionCase> compression_cases() {
  constexpr double kZfpBound = 1e-6;
  return {
      {"none", "none", cairn::Compression::none(), 0},
      {"zstd", "shuffle + zstd, default level", cairn::Compression::zstd(), 0},
      {"zstd_plain", "zstd alone, default level", cairn::Compression::zstd(0, false), 0},
      {"zfp", "zfp, absolute error 1e-6", cairn::Compression::zfp_absolute(kZfpBound), kZfpBound}};
}

// The smooth field: the shape of a heated plate after some diffusion — a hot top edge decaying
// into the plate plus two warm blobs — at element (i, j) of a rows x cols grid.
double field_at(std::int64_t rows, std::int64_t cols, std::int64_t i, std::int64_t j) {
  const double y = static_cast<double>(i) / static_cast<double>(rows);
  const double x = static_cast<double>(j) / static_cast<double>(cols);
  const auto blob = [&](double y0, double x0, double width) {
    return std::exp(-((y - y0) * (y - y0) + (x - x0) * (x - x0)) / (2 * width * width));
  };
  return std::exp(-y / 0.08) + 0.8 * blob(0.375, 0.275, 0.05) + 0.5 * blob(0.7, 0.7, 0.08);
}

// This rank's block of data set `data` ("field" or "random") on the rows x cols grid.
std::vector<double> make_data(const std::string& data, std::int64_t rows, std::int64_t cols,
                              const cairn::Box& box) {
  std::vector<double> values(static_cast<std::size_t>(box.extent[0] * box.extent[1]));
  if (data == "random") {
    std::mt19937_64 engine(20261125U + static_cast<unsigned>(world_rank()));
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (double& v : values) v = uniform(engine);
    return values;
  }
  std::size_t k = 0;
  for (std::int64_t i = 0; i < box.extent[0]; ++i) {
    for (std::int64_t j = 0; j < box.extent[1]; ++j) {
      values[k++] = field_at(rows, cols, box.offset[0] + i, box.offset[1] + j);
    }
  }
  return values;
}

// Sum of the sizes of the regular files under `dir` (rank 0's count, on every rank).
// Collective over MPI_COMM_WORLD.
std::int64_t bytes_on_disk(const std::filesystem::path& dir) {
  std::int64_t bytes = 0;
  if (world_rank() == 0) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file()) bytes += static_cast<std::int64_t>(entry.file_size());
    }
  }
  return world_max(bytes);
}

// The largest |restored - saved| over every rank.
double world_max_error(const std::vector<double>& saved, const std::vector<double>& restored) {
  double error = 0;
  for (std::size_t k = 0; k < saved.size(); ++k) {
    const double d = std::abs(restored[k] - saved[k]);
    error = std::isnan(d) ? INFINITY : std::max(error, d);
  }
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return error;
}

// A save of a tiny tree with `c`: loads what a first save touches, and tells whether this
// build and format can store `c` (the Unsupported message when not, "" when it can).
// Collective over MPI_COMM_WORLD.
std::string try_compression(const cairn::Comm& world, const std::filesystem::path& dir,
                            cairn::StorageFormat format, const CompressionCase& c) {
  std::vector<double> small(64, 1.0);
  cairn::ArrayTree tree;
  tree.add_array("warm", cairn::ArrayShard::host(small.data(), {64 * world.size()},
                                                 cairn::Box{{64 * world.rank()}, {64}}));
  cairn::Checkpointer ckpt(world, std::make_shared<cairn::ArrayTreeHandler>());
  std::string unsupported;
  try {
    ckpt.save(dir, cairn::ArrayTreeSave(tree, {.format = format, .compression = c.compression}),
              {.force = true});
  } catch (const cairn::Unsupported& e) {
    unsupported = e.what();
  }
  remove_tree(dir);
  return unsupported;
}

// What one save-and-restore loop measures: the format, the data set and where it goes.
struct DataCase {
  cairn::StorageFormat format;
  std::string prefix;  // "cairn.<format>.compress."
  std::string data;    // "field" or "random"
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  cairn::Box box;
  std::filesystem::path dir;
};

// `run.reps` repetitions of: save `d` with `c`, count its bytes on disk, restore it after
// dropping the page cache, check the values (every repetition: the check is cheap next to the
// I/O). Collective over MPI_COMM_WORLD.
void measure(const Run& run, cairn::Checkpointer& ckpt, const DataCase& d,
             const CompressionCase& c) {
  const std::vector<double> saved = make_data(d.data, d.rows, d.cols, d.box);
  std::vector<double> restored(saved.size(), -1.0);
  cairn::ArrayTree tree;
  tree.add_array(d.data, cairn::ArrayShard::host(saved.data(), {d.rows, d.cols}, d.box));
  cairn::ArrayTree target;
  target.add_array(d.data, cairn::ArrayShard::host(restored.data(), {d.rows, d.cols}, d.box));
  const std::int64_t data_bytes = d.rows * d.cols * 8;
  const std::string name = d.prefix + c.name + "." + d.data;
  const cairn::TreeSaveOptions options{
      .format = d.format, .io_buffer_bytes = run.io_buffer_bytes, .compression = c.compression};
  for (int rep = 0; rep < run.reps; ++rep) {
    remove_tree(d.dir);
    drop_caches(run.drop);
    const double save_seconds =
        timed([&] { ckpt.save(d.dir, cairn::ArrayTreeSave(tree, options)); });
    const std::int64_t disk = bytes_on_disk(d.dir);
    const boost::json::object common{{"data_bytes", data_bytes},
                                     {"disk_bytes", disk},
                                     {"compression", c.description},
                                     {"data", d.data}};
    run.recorder->add(name + ".save", rep, save_seconds, disk, common);
    std::fill(restored.begin(), restored.end(), -1.0);
    const std::string dropped = drop_caches(run.drop);
    const double restore_seconds = timed([&] {
      cairn::ArrayTreeRestore args(target, {.restore_concurrent_bytes = run.io_buffer_bytes});
      (void)ckpt.restore(d.dir, &args);
    });
    const double error = world_max_error(saved, restored);
    if (!(error <= c.bound)) {
      char text[160];
      std::snprintf(text, sizeof text, "differ from the saved ones by up to %.3g (bound %.3g)",
                    error, c.bound);
      throw std::runtime_error(name + " (repetition " + std::to_string(rep) +
                               "): restored values " + text);
    }
    boost::json::object extra = common;
    extra["max_error"] = error;
    extra["page_cache"] = dropped;
    run.recorder->add(name + ".restore", rep, restore_seconds, disk, std::move(extra));
  }
  remove_tree(d.dir);
}

}  // namespace

void run_cairn_compress(const Run& run, const std::string& format_name) {
  const cairn::StorageFormat format = format_named(format_name);
  cairn::Comm world(MPI_COMM_WORLD);
  const auto base = run.dir / ("cairn-compress-" + format_name);
  remove_tree(base);
  if (world.is_primary()) std::filesystem::create_directories(base);
  world.barrier("bench-mkdir");
  const Shape shape{
      .leaves = 1, .rows = std::max<std::int64_t>(2, run.shape.rows / 2), .cols = run.shape.cols};
  cairn::Checkpointer ckpt(world, std::make_shared<cairn::ArrayTreeHandler>());
  const std::string prefix = "cairn." + format_name + ".compress.";
  for (const CompressionCase& c : compression_cases()) {
    const std::string unsupported = try_compression(world, base / "warm", format, c);
    if (!unsupported.empty()) {
      // Recorded once per compression; bench_compression.py shows it as unavailable.
      run.recorder->add(prefix + c.name + ".unavailable", 0, 0, 0,
                        {{"compression", c.description}, {"unavailable", unsupported}});
      continue;
    }
    for (const char* data : {"field", "random"}) {
      const DataCase d{format,
                       prefix,
                       data,
                       shape.rows,
                       shape.cols,
                       block_of(shape, world.rank(), world.size()),
                       base / (c.name + "-" + data)};
      measure(run, ckpt, d, c);
    }
  }
  remove_tree(base);
}

}  // namespace bench
