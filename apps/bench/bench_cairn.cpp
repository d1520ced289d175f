// cairn's cases: sync and async saves, restores (time and peak memory) on the same and on
// other decompositions, the metadata-heavy tree. Public API only.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>

#include "bench_common.hpp"

namespace bench {
namespace {

cairn::ArrayTree big_tree(const Shape& shape, std::vector<std::vector<double>>& blocks,
                          const cairn::Box& box) {
  cairn::ArrayTree tree;
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    tree.add_array(leaf_path(leaf),
                   cairn::ArrayShard::host(blocks[static_cast<std::size_t>(leaf)].data(),
                                           {shape.rows, shape.cols}, box));
  }
  return tree;
}

// "2-D blocks on a 2 x 2 grid": the layout of block_of() on `size` ranks.
std::string blocks_layout(int size) {
  const auto [grid_rows, grid_cols] = grid_of(size);
  return "2-D blocks on a " + std::to_string(grid_rows) + " x " + std::to_string(grid_cols) +
         " grid";
}

void check(const std::string& name, std::int64_t local_mismatches) {
  if (world_max(local_mismatches) != 0) {
    throw std::runtime_error(name + ": restored data differs from the data saved");
  }
}

// Growth of the peak RSS across `body`, maximum over ranks (-1 when the peak cannot be reset).
template <class Body>
std::int64_t peak_growth(Body&& body) {
  return world_max(measure_peak_rss(std::forward<Body>(body)).growth);
}

// Loads the libraries and HDF5 state a first save touches, so that rep 0 is not special.
void warm_up(const cairn::Comm& comm, const std::filesystem::path& dir,
             cairn::StorageFormat format) {
  std::vector<double> small(64, 1.0);
  cairn::ArrayTree tree;
  tree.add_array("warm", cairn::ArrayShard::host(small.data(), {64 * comm.size()},
                                                 cairn::Box{{64 * comm.rank()}, {64}}));
  cairn::Checkpointer ckpt(comm, std::make_shared<cairn::ArrayTreeHandler>());
  ckpt.save(dir, cairn::ArrayTreeSave(tree, {.format = format}), {.force = true});
  remove_tree(dir);
}

// The first `members` ranks of the world as a communicator of their own (empty elsewhere).
// Collective over MPI_COMM_WORLD.
std::optional<cairn::Comm> first_ranks(int members) {
  const bool member = world_rank() < members;
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, world_rank(), &split);
  std::optional<cairn::Comm> comm;
  if (member) {
    comm.emplace(split);
    MPI_Comm_free(&split);
  }
  return comm;
}

using BoxOf = cairn::Box (*)(const Shape&, int rank, int size);

// One way to read the large tree back: how many ranks, in which decomposition, and how many
// ranks saved it (for the record).
struct RestoreCase {
  std::string name;
  int readers = 1;
  BoxOf box_of = block_of;
  std::string layout;
  int saved_ranks = 1;
};

// Restores the large tree saved in `dir` on the first `c.readers` world ranks, each into its
// box of `c.box_of`, with cairn's I/O buffer of `run.io_buffer_bytes`, and records the time
// and the peak RSS growth (the target buffers are allocated and touched before the peak is
// reset, so the growth is what the restore itself allocates). Rep 0 checks every value.
// Collective over MPI_COMM_WORLD.
void restore_case(const Run& run, const std::filesystem::path& dir, const RestoreCase& c, int rep) {
  const Shape& shape = run.shape;
  std::optional<cairn::Comm> comm = first_ranks(c.readers);
  std::unique_ptr<cairn::Checkpointer> ckpt;
  std::vector<std::vector<double>> parts;
  cairn::ArrayTree target;
  cairn::Box box;
  if (comm) {
    ckpt =
        std::make_unique<cairn::Checkpointer>(*comm, std::make_shared<cairn::ArrayTreeHandler>());
    box = c.box_of(shape, comm->rank(), comm->size());
    for (int leaf = 0; leaf < shape.leaves; ++leaf) {
      parts.emplace_back(static_cast<std::size_t>(box.extent[0] * box.extent[1]), -1.0);
      target.add_array(leaf_path(leaf),
                       cairn::ArrayShard::host(parts.back().data(), {shape.rows, shape.cols}, box));
    }
  }
  const std::string dropped = drop_caches(run.drop);
  double seconds = 0;
  const std::int64_t growth = peak_growth([&] {
    seconds = timed([&] {
      if (!comm) return;
      cairn::ArrayTreeRestore args(target, {.restore_concurrent_bytes = run.io_buffer_bytes});
      (void)ckpt->restore(dir, &args);
    });
  });
  if (rep == 0) {
    std::int64_t bad = 0;
    for (int leaf = 0; comm && leaf < shape.leaves; ++leaf) {
      bad += count_mismatches(shape, leaf, box, parts[static_cast<std::size_t>(leaf)]);
    }
    check(c.name, bad);
  }
  run.recorder->add(c.name, rep, seconds, shape.total_bytes(),
                    {{"ranks", c.readers},
                     {"saved_ranks", c.saved_ranks},
                     {"layout", c.layout},
                     {"page_cache", dropped},
                     {"peak_rss_growth_bytes", growth},
                     {"io_buffer_bytes", static_cast<std::int64_t>(run.io_buffer_bytes)}});
}

// A save on fewer ranks than the world: the first size-1 ranks save the large tree in 2-D
// blocks of their own grid (once), then each repetition restores it on those ranks in the
// same blocks and on every rank as row slabs.
void run_cairn_from_fewer(const Run& run, cairn::StorageFormat format, const std::string& prefix,
                          const std::filesystem::path& base) {
  const Shape& shape = run.shape;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int writers = size - 1;
  if (writers < 1) return;
  const auto dir = base / ("sync-" + std::to_string(writers));
  remove_tree(dir);
  {
    std::optional<cairn::Comm> comm = first_ranks(writers);
    if (comm) {
      const cairn::Box box = block_of(shape, comm->rank(), comm->size());
      std::vector<std::vector<double>> blocks;
      for (int leaf = 0; leaf < shape.leaves; ++leaf) blocks.push_back(fill_box(shape, leaf, box));
      cairn::Checkpointer ckpt(*comm, std::make_shared<cairn::ArrayTreeHandler>());
      ckpt.save(dir,
                cairn::ArrayTreeSave(big_tree(shape, blocks, box),
                                     {.format = format, .io_buffer_bytes = run.io_buffer_bytes}));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const std::string from = std::to_string(writers);
  const RestoreCase same{prefix + "restore_" + from + "to" + from, writers, block_of,
                         blocks_layout(writers), writers};
  const RestoreCase more{prefix + "restore_" + from + "to" + std::to_string(size), size, slab_of,
                         "row slabs", writers};
  for (int rep = 0; rep < run.reps; ++rep) {
    restore_case(run, dir, same, rep);
    restore_case(run, dir, more, rep);
  }
  remove_tree(dir);
}

// One async save of `tree` into `dir` with `async`, timed barrier to barrier: the blocking
// time of save() on the slowest rank, the time to the commit and the peak RSS growth, recorded
// as `name`. Collective over MPI_COMM_WORLD.
void timed_async_save(const Run& run, cairn::AsyncCheckpointer& async, const std::string& name,
                      int rep, const std::filesystem::path& dir, const cairn::ArrayTree& tree,
                      const cairn::TreeSaveOptions& options) {
  remove_tree(dir);
  drop_caches(run.drop);
  double blocking = 0;
  double total = 0;
  const std::int64_t growth = peak_growth([&] {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    async.save(dir, cairn::ArrayTreeSave(tree, options));
    double local = MPI_Wtime() - start;
    MPI_Allreduce(&local, &blocking, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    async.wait_until_finished();
    MPI_Barrier(MPI_COMM_WORLD);
    total = MPI_Wtime() - start;
  });
  run.recorder->add(name, rep, blocking, run.shape.total_bytes(),
                    {{"total_seconds", total},
                     {"peak_rss_growth_bytes", growth},
                     {"staging_bytes", static_cast<std::int64_t>(async.staging().capacity())}});
}

// Async saves of `tree` into `base`/async, with copies and zero-copy: the blocking time of
// save() (the slowest rank) against the time to the commit. The first save of an
// AsyncCheckpointer with copies maps and faults in its staging memory, which later saves of
// the same tree reuse (StagingArea): each repetition first unmaps it and times such a save
// ("save_async_copy_first"), then times a save with the staging memory held
// ("save_async_copy"), as every save after the first of an application's series, whose limit
// is a memcpy into touched memory. Collective over MPI_COMM_WORLD.
void run_cairn_async(const Run& run, cairn::StorageFormat format, const std::string& prefix,
                     const cairn::ArrayTree& tree, const std::filesystem::path& base) {
  const cairn::TreeSaveOptions options{.format = format,
                                       .io_buffer_bytes = run.io_buffer_bytes,
                                       .posix = {.aggregation = run.posix_aggregation}};
  std::int64_t my_bytes = 0;
  for (const cairn::Leaf& leaf : tree) {
    if (leaf.kind() == cairn::LeafKind::array) my_bytes += leaf.as_array().local_bytes();
  }
  const auto staging = static_cast<std::size_t>(world_max(my_bytes) + (std::int64_t{64} << 20));
  cairn::Comm world(MPI_COMM_WORLD);
  const auto dir = base / "async";
  for (bool zero_copy : {false, true}) {
    const std::string name = prefix + (zero_copy ? "save_async_zerocopy" : "save_async_copy");
    cairn::AsyncCheckpointer async(world, std::make_shared<cairn::ArrayTreeHandler>(),
                                   {.staging_bytes = staging, .zero_copy = zero_copy});
    for (int rep = 0; rep < run.reps; ++rep) {
      if (!zero_copy) {
        async.trim_staging();  // each repetition's first save maps its staging memory afresh
        timed_async_save(run, async, name + "_first", rep, dir, tree, options);
      }
      timed_async_save(run, async, name, rep, dir, tree, options);
    }
  }
  remove_tree(dir);
}

}  // namespace

void run_cairn(const Run& run, const std::string& format_name) {
  const Shape& shape = run.shape;
  const cairn::StorageFormat format = format_named(format_name);
  const std::string prefix = "cairn." + format_name + ".";
  cairn::Comm world(MPI_COMM_WORLD);
  const cairn::Box box = block_of(shape, world.rank(), world.size());
  auto blocks = local_blocks(shape);
  const cairn::ArrayTree tree = big_tree(shape, blocks, box);
  const cairn::TreeSaveOptions options{.format = format,
                                       .io_buffer_bytes = run.io_buffer_bytes,
                                       .posix = {.aggregation = run.posix_aggregation}};
  const auto base = run.dir / ("cairn-" + format_name);
  remove_tree(base);
  if (world.is_primary()) std::filesystem::create_directories(base);
  world.barrier("bench-mkdir");
  warm_up(world, base / "warm", format);

  // Restores of the save below: the same decomposition first, then resharded ones.
  const int size = world.size();
  std::vector<RestoreCase> restores{
      {prefix + "restore", size, block_of, blocks_layout(size), size}};
  for (int readers : {size - 1, size / 2, 1}) {
    const std::string name = prefix + "restore_to" + std::to_string(readers);
    const bool seen = std::any_of(restores.begin(), restores.end(),
                                  [&](const RestoreCase& c) { return c.name == name; });
    if (readers < 1 || readers == size || seen) continue;
    restores.push_back({name, readers, slab_of, "row slabs", size});
  }
  restores.push_back({prefix + "restore_transposed", size, column_slab_of, "column slabs", size});

  cairn::Checkpointer ckpt(world, std::make_shared<cairn::ArrayTreeHandler>());
  for (int rep = 0; rep < run.reps; ++rep) {
    const auto dir = base / "sync";
    remove_tree(dir);
    drop_caches(run.drop);
    double seconds = 0;
    const std::int64_t growth = peak_growth(
        [&] { seconds = timed([&] { ckpt.save(dir, cairn::ArrayTreeSave(tree, options)); }); });
    run.recorder->add(prefix + "save_sync", rep, seconds, shape.total_bytes(),
                      {{"peak_rss_growth_bytes", growth},
                       {"io_buffer_bytes", static_cast<std::int64_t>(run.io_buffer_bytes)},
                       {"posix_files", run.posix_files}});
    for (const RestoreCase& c : restores) restore_case(run, dir, c, rep);
  }
  run_cairn_from_fewer(run, format, prefix, base);

  run_cairn_async(run, format, prefix, tree, base);
  remove_tree(base);
}

void run_cairn_async_only(const Run& run, const std::string& format_name) {
  const Shape& shape = run.shape;
  const cairn::StorageFormat format = format_named(format_name);
  cairn::Comm world(MPI_COMM_WORLD);
  auto blocks = local_blocks(shape);
  const cairn::ArrayTree tree =
      big_tree(shape, blocks, block_of(shape, world.rank(), world.size()));
  const auto base = run.dir / ("cairn-async-" + format_name);
  remove_tree(base);
  if (world.is_primary()) std::filesystem::create_directories(base);
  world.barrier("bench-mkdir");
  warm_up(world, base / "warm", format);
  run_cairn_async(run, format, "cairn." + format_name + ".", tree, base);
  remove_tree(base);
}

void run_cairn_meta(const Run& run, const std::string& format_name) {
  MetaCase meta(run, "meta", format_name);
  if (meta.world.is_primary()) std::filesystem::create_directories(meta.dir);
  meta.world.barrier("bench-mkdir");
  warm_up(meta.world, meta.dir / "warm", meta.format);
  cairn::Checkpointer ckpt(meta.world, std::make_shared<cairn::ArrayTreeHandler>());
  for (int rep = 0; rep < run.reps; ++rep) {
    const auto dir = meta.dir / "meta";
    remove_tree(dir);
    drop_caches(run.drop);
    const double save_seconds = timed(
        [&] { ckpt.save(dir, cairn::ArrayTreeSave(meta.trees.tree, {.format = meta.format})); });
    run.recorder->add(meta.prefix + "meta_save", rep, save_seconds, run.shape.meta_bytes(),
                      {{"leaves", run.shape.meta_leaves}});
    const std::string dropped = drop_caches(run.drop);
    const double restore_seconds = timed([&] {
      cairn::ArrayTreeRestore args(meta.trees.target);
      (void)ckpt.restore(dir, &args);
    });
    if (rep == 0) check(meta.prefix + "meta_restore", meta.trees.data == meta.trees.back ? 0 : 1);
    run.recorder->add(meta.prefix + "meta_restore", rep, restore_seconds, run.shape.meta_bytes(),
                      {{"leaves", run.shape.meta_leaves}, {"page_cache", dropped}});
  }
  remove_tree(meta.dir);
}

}  // namespace bench
