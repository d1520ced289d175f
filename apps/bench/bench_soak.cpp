// The soak case: thousands of async saves with retention on a small tree, sampling what a
// long run must keep flat: resident memory, open file descriptors, files under the root.
// Public API only.
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>

#include <malloc.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "bench_common.hpp"

namespace bench {
namespace {

// Open file descriptors of this process (entries of /proc/self/fd, less the one listing it).
std::int64_t open_descriptors() {
  std::error_code ec;
  std::int64_t count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++count;
  }
  return ec ? -1 : count - 1;
}

// Bytes of the heap in use (malloc's count over its arenas).
std::int64_t heap_in_use() { return static_cast<std::int64_t>(::mallinfo2().uordblks); }

// Files (not directories) and their bytes under `root`, any depth.
std::pair<std::int64_t, std::int64_t> files_under(const std::filesystem::path& root) {
  std::int64_t files = 0;
  std::int64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      ++files;
      bytes += static_cast<std::int64_t>(it->file_size(ec));
    }
  }
  return {files, bytes};
}

}  // namespace

void run_soak(const Run& run, const Soak& soak) {
  if (soak.saves < 1 || soak.keep < 1 || soak.samples < 2) {
    throw std::runtime_error("soak: --soak-saves, --soak-keep and --soak-samples must be >= 1, 2");
  }
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto root = run.dir / "soak";
  remove_tree(root);

  // A few leaves of a few KiB per rank, and a scalar that changes with every step.
  const Shape tree_shape{.leaves = soak.leaves, .rows = 16 * size, .cols = soak.leaf_elems / 16};
  const cairn::Box box = slab_of(tree_shape, rank, size);
  std::vector<std::vector<double>> blocks;
  for (int leaf = 0; leaf < tree_shape.leaves; ++leaf) {
    blocks.push_back(fill_box(tree_shape, leaf, box));
  }
  // The tree of one step: views of the blocks, and the step's time.
  const auto tree_of = [&](int step) {
    cairn::ArrayTree tree;
    for (int leaf = 0; leaf < tree_shape.leaves; ++leaf) {
      tree.add_array(leaf_path(leaf),
                     cairn::ArrayShard::host(blocks[static_cast<std::size_t>(leaf)].data(),
                                             {tree_shape.rows, tree_shape.cols}, box));
    }
    tree.add_scalar("time", cairn::Scalar(0.5 * step));
    return tree;
  };
  const std::int64_t tree_bytes = tree_shape.total_bytes();

  cairn::Comm comm(MPI_COMM_WORLD);
  cairn::CheckpointManager manager(comm, root,
                                   {.max_to_keep = soak.keep,
                                    .enable_background_delete = soak.background_delete,
                                    .enable_async = true,
                                    .async = {.staging_bytes = std::size_t{1} << 20}});
  const int every = std::max(1, soak.saves / (soak.samples - 1));
  const auto start = std::chrono::steady_clock::now();
  int sample = 0;
  for (int step = 1; step <= soak.saves; ++step) {
    blocks[0][0] = step;
    if (!manager.save(step, cairn::ArrayTreeSave(tree_of(step)))) {
      throw std::runtime_error("soak: the manager did not save step " + std::to_string(step));
    }
    if (step % every != 0 && step != 1 && step != soak.saves) continue;
    // Sampled with no save in flight and retention done, so that equal states are compared.
    manager.wait_until_finished();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto [files, bytes] =
        rank == 0 ? files_under(root) : std::pair<std::int64_t, std::int64_t>{};
    boost::json::object extra = {
        {"saves", step},
        {"rss_bytes", world_max(status_bytes("VmRSS"))},
        {"heap_bytes", world_max(heap_in_use())},
        {"vm_bytes", world_max(status_bytes("VmSize"))},
        {"fds", world_max(open_descriptors())},
        {"files", files},
        {"disk_bytes", bytes},
        {"steps_kept", static_cast<std::int64_t>(manager.all_steps().size())},
        {"ranks", size},
        {"max_to_keep", soak.keep},
        {"tree_bytes", tree_bytes}};
    run.recorder->add("cairn.soak.sample", sample++, seconds, tree_bytes, std::move(extra));
  }
  manager.close();
  remove_tree(root);
}

}  // namespace bench
