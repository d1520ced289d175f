// cairn's multi-level case: what a node-local level (CheckpointManagerOptions::local_level)
// costs and what it saves against the persistent level alone. Every rank is a node of its own
// (ranks_per_node = 1) whose local directory lies in a directory of its own under /dev/shm
// (tmpfs), removed at the end; the persistent level is the run's scratch directory. Each
// repetition measures, one after the other, so that each ratio pairs measurements made under
// the same conditions:
//   - a synchronous save through a manager without a local level (the persistent save);
//   - a memcpy of the same bytes on every rank (the memory-bandwidth limit of a local save);
//   - the blocking time of a local save with redundancy none, partner and xor, none of them
//     drained (persistent_every = 0), and the bytes of the redundancy files each scheme stores
//     (cairn-level/*.copy of every node);
//   - after the partner save: its drain to the persistent level, the loss of the last node's
//     local directory, and a restore through a new manager, which rebuilds that node from its
//     partner's copy first; then a restore of the same step from the persistent level by a
//     manager without a local level; each after dropping the page cache, checked exactly;
//   - the blocking time of a partner save made while the drain of the save before it is in
//     flight, and of the same save with no drain.
// The ratios, their targets and the model of the redundancy traffic are
// apps/bench/bench_levels.py's.
//
// Size: the main tree of the run (shape.leaves arrays of rows x cols float64 in 2-D blocks),
// saved in the posix format. Public API only.
#include <cairn/handlers.hpp>
#include <cairn/levels.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "bench_common.hpp"

namespace bench {
namespace {

using cairn::LocalRedundancy;

// Where the local directories are made: a tmpfs, as on the nodes of a cluster.
constexpr const char* kLocalTemplate = "/dev/shm/cairn-bench-levels.XXXXXX";
// The drain case drains every second save, so that the save measured is not drained itself:
// a save chosen for a drain first waits for the drain before it to commit (one drain at a
// time), which would add that wait to the interference measured.
constexpr std::int64_t kDrainEvery = 2;

// A directory of its own under /dev/shm, made by rank 0, on every rank. Collective over
// MPI_COMM_WORLD. Throws std::runtime_error when it cannot be made.
std::filesystem::path make_local_root() {
  std::string path = kLocalTemplate;
  std::string error;
  if (world_rank() == 0 && ::mkdtemp(path.data()) == nullptr) {
    error = std::string("cannot make a directory ") + kLocalTemplate + ": " + std::strerror(errno);
  }
  int failed = error.empty() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (failed != 0) {
    throw std::runtime_error(world_rank() == 0
                                 ? error
                                 : std::string("rank 0 cannot make a directory ") + kLocalTemplate);
  }
  MPI_Bcast(path.data(), static_cast<int>(path.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// Removes a directory on rank 0 when it goes out of scope, also when a measurement throws.
class RemovedAtExit {
 public:
  explicit RemovedAtExit(std::filesystem::path path)
      : path_(std::move(path)), rank_(world_rank()) {}
  RemovedAtExit(const RemovedAtExit&) = delete;
  RemovedAtExit& operator=(const RemovedAtExit&) = delete;
  ~RemovedAtExit() {
    std::error_code ignored;
    if (rank_ == 0) std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
  int rank_;
};

// The options of a manager whose local level is `local`/node<n> on node n, one rank a node.
cairn::CheckpointManagerOptions with_level(const std::filesystem::path& local,
                                           LocalRedundancy redundancy,
                                           std::int64_t persistent_every) {
  return {.local_level = cairn::LocalLevelOptions{.directory = local / "node{node}",
                                                  .redundancy = redundancy,
                                                  .persistent_every = persistent_every,
                                                  .drain_at_close = false,
                                                  .ranks_per_node = 1}};
}

// The bytes of the redundancy files (cairn-level/*.copy) in the local directory of this
// rank's node, `local`/node<rank>, summed over the nodes. Collective over MPI_COMM_WORLD.
std::int64_t copy_bytes(const std::filesystem::path& local) {
  std::int64_t bytes = 0;
  const auto dir = local / ("node" + std::to_string(world_rank())) / "cairn-level";
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".copy") {
        bytes += static_cast<std::int64_t>(entry.file_size());
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return bytes;
}

// Whether a save (here: a drain) is in flight on any rank. Collective over MPI_COMM_WORLD.
bool in_flight_anywhere(const cairn::CheckpointManager& manager) {
  return world_max(manager.is_saving_in_progress() ? 1 : 0) != 0;
}

// The measurements of one run: the tree, the target it is restored into, the directories.
class LevelsCase {
 public:
  LevelsCase(const Run& run, std::filesystem::path local)
      : run_(run),
        world_(MPI_COMM_WORLD),
        box_(block_of(run.shape, world_.rank(), world_.size())),
        blocks_(local_blocks(run.shape)),
        back_(empty_like(blocks_)),
        scratch_(run.dir / "cairn-levels"),
        local_(std::move(local)),
        options_{.format = cairn::StorageFormat::posix, .io_buffer_bytes = run.io_buffer_bytes},
        xor_group_(std::min(4, world_.size())) {
    for (int leaf = 0; leaf < run.shape.leaves; ++leaf) {
      const auto k = static_cast<std::size_t>(leaf);
      const std::vector<std::int64_t> global{run.shape.rows, run.shape.cols};
      tree_.add_array(leaf_path(leaf), cairn::ArrayShard::host(blocks_[k].data(), global, box_));
      target_.add_array(leaf_path(leaf), cairn::ArrayShard::host(back_[k].data(), global, box_));
    }
    remove_tree(scratch_);
    if (world_.is_primary()) std::filesystem::create_directories(scratch_);
    world_.barrier("bench-levels-mkdir");
  }

  // Loads what a first save through either level touches, so that repetition 0 is not
  // special: a small tree saved by a partner local level and by a persistent manager.
  void warm_up() {
    std::vector<double> small(64, 1.0);
    cairn::ArrayTree tree;
    tree.add_array("warm",
                   cairn::ArrayShard::host(small.data(), {64 * std::int64_t{world_.size()}},
                                           cairn::Box{{64 * std::int64_t{world_.rank()}}, {64}}));
    {
      cairn::CheckpointManager manager(world_, scratch_ / "warm",
                                       with_level(local_ / "warm", LocalRedundancy::partner(), 0));
      (void)manager.save(0, cairn::ArrayTreeSave(tree, options_));
    }
    {
      cairn::CheckpointManager manager(world_, scratch_ / "warm-persistent",
                                       {.enable_async = false});
      (void)manager.save(0, cairn::ArrayTreeSave(tree, options_));
    }
    remove_tree(scratch_ / "warm");
    remove_tree(scratch_ / "warm-persistent");
    remove_tree(local_ / "warm");
  }

  void repetition(int rep) {
    persistent_save(rep);
    memcpy_copy(rep);
    local_write(rep);
    local_save(rep, "none", LocalRedundancy::none());
    local_save(rep, "xor", LocalRedundancy::xor_parity(xor_group_));
    local_save(rep, "partner", LocalRedundancy::partner());
    restores_after_partner(rep);
    save_during_drain(rep);
  }

 private:
  [[nodiscard]] std::int64_t data_bytes() const { return run_.shape.total_bytes(); }

  [[nodiscard]] boost::json::object common() const {
    return {{"data_bytes", data_bytes()}, {"nodes", world_.size()}, {"ranks_per_node", 1}};
  }

  void add(const std::string& name, int rep, double seconds, boost::json::object extra) const {
    boost::json::object record = common();
    for (const auto& field : extra) record[field.key()] = field.value();
    run_.recorder->add("cairn.levels." + name, rep, seconds, data_bytes(), std::move(record));
  }

  // The blocking time of `manager`.save(step) of the tree, the slowest rank's. Throws when
  // the manager does not save.
  double save_seconds(cairn::CheckpointManager& manager, std::int64_t step,
                      const std::string& what) {
    bool saved = false;
    const double seconds =
        timed([&] { saved = manager.save(step, cairn::ArrayTreeSave(tree_, options_)); });
    if (!saved) {
      throw std::runtime_error("cairn.levels." + what + ": the manager did not save step " +
                               std::to_string(step));
    }
    return seconds;
  }

  // The time of `manager`.restore(step) into the target, the slowest rank's, after dropping
  // the page cache (`dropped`: whether it was). Throws when a restored value differs from the
  // tree's.
  double restore_seconds(cairn::CheckpointManager& manager, std::int64_t step,
                         const std::string& what, std::string& dropped) {
    for (auto& part : back_) std::ranges::fill(part, -1.0);
    dropped = drop_caches(run_.drop);
    const double seconds = timed([&] {
      cairn::ArrayTreeRestore args(target_, {.restore_concurrent_bytes = run_.io_buffer_bytes});
      (void)manager.restore(step, &args);
    });
    std::int64_t bad = 0;
    for (int leaf = 0; leaf < run_.shape.leaves; ++leaf) {
      bad += count_mismatches(run_.shape, leaf, box_, back_[static_cast<std::size_t>(leaf)]);
    }
    if (world_max(bad) != 0) {
      throw std::runtime_error("cairn.levels." + what + ": restored values of step " +
                               std::to_string(step) + " differ from the tree saved");
    }
    return seconds;
  }

  void persistent_save(int rep) {
    const auto root = scratch_ / "persistent";
    remove_tree(root);
    drop_caches(run_.drop);
    double seconds = 0;
    {
      cairn::CheckpointManager manager(world_, root, {.enable_async = false});
      seconds = save_seconds(manager, 0, "persistent.save");
    }
    add("persistent.save", rep, seconds, {});
    remove_tree(root);
  }

  void memcpy_copy(int rep) {
    const double seconds = timed([&] {
      for (std::size_t k = 0; k < blocks_.size(); ++k) {
        std::memcpy(back_[k].data(), blocks_[k].data(), blocks_[k].size() * sizeof(double));
      }
    });
    add("memcpy", rep, seconds, {});
  }

  // The bound of a save to the local directory: each rank writes its bytes with pwrite into a
  // new file there (fresh pages of the tmpfs), as one leaf after the other, and fsyncs it.
  void local_write(int rep) {
    const auto dir = local_ / "write";
    remove_tree(dir);
    if (world_.is_primary()) std::filesystem::create_directories(dir);
    world_.barrier("bench-levels-write");
    const auto path = dir / ("rank" + std::to_string(world_.rank()) + ".bin");
    const double seconds = timed([&] {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0)
        throw std::runtime_error("cairn.levels.local.write: cannot create " + path.string());
      std::uint64_t at = 0;
      for (const auto& block : blocks_) {
        const auto* bytes = reinterpret_cast<const char*>(block.data());
        std::size_t left = block.size() * sizeof(double);
        while (left > 0) {
          const ssize_t n =
              ::pwrite(fd, bytes, std::min<std::size_t>(left, 1U << 30), static_cast<off_t>(at));
          if (n <= 0) {
            ::close(fd);
            throw std::runtime_error("cairn.levels.local.write: writing " + path.string() +
                                     " failed");
          }
          bytes += n;
          left -= static_cast<std::size_t>(n);
          at += static_cast<std::uint64_t>(n);
        }
      }
      ::fsync(fd);
      ::close(fd);
    });
    add("local.write", rep, seconds, {});
    remove_tree(dir);
  }

  // A local save of `redundancy` (named `name` in the records), nothing drained. The partner
  // save's local files and root stay for restores_after_partner().
  void local_save(int rep, const std::string& name, LocalRedundancy redundancy) {
    const auto root = scratch_ / name;
    const auto local = local_ / name;
    remove_tree(root);
    remove_tree(local);
    drop_caches(run_.drop);
    const std::string what = "local." + name + ".save";
    double seconds = 0;
    {
      cairn::CheckpointManager manager(world_, root, with_level(local, redundancy, 0));
      seconds = save_seconds(manager, 0, what);
      if (name == "partner") {
        // The persistent copy of the step, for the restore from the persistent level.
        if (!manager.drain()) {
          throw std::runtime_error("cairn.levels." + what + ": the step was not drained");
        }
      }
    }
    boost::json::object extra{{"redundancy", redundancy.describe()},
                              {"copy_bytes", copy_bytes(local)}};
    if (redundancy.kind == LocalRedundancy::Kind::xor_parity) extra["xor_group"] = xor_group_;
    add(what, rep, seconds, std::move(extra));
    if (name != "partner") {
      remove_tree(local);
      remove_tree(root);
    }
  }

  // The partner save's step, restored after the last node lost its local directory: through
  // a manager with the local level (which rebuilds the node from its partner's copy), then by
  // a manager without one from the persistent level.
  void restores_after_partner(int rep) {
    const auto root = scratch_ / "partner";
    const auto local = local_ / "partner";
    const int lost = world_.size() - 1;
    std::string dropped;
    double seconds = 0;
    {
      // The bound: the same step from the local level with every node intact.
      cairn::CheckpointManager manager(world_, root,
                                       with_level(local, LocalRedundancy::partner(), 0));
      seconds = restore_seconds(manager, 0, "restore.local", dropped);
      if (manager.last_restore().level != "local") {
        throw std::runtime_error("cairn.levels.restore.local: the restore read the " +
                                 manager.last_restore().level + " level");
      }
    }
    add("restore.local", rep, seconds, {{"page_cache", dropped}});
    remove_tree(local / ("node" + std::to_string(lost)));
    {
      cairn::CheckpointManager manager(world_, root,
                                       with_level(local, LocalRedundancy::partner(), 0));
      seconds = restore_seconds(manager, 0, "restore.rebuild", dropped);
      const cairn::LevelRestore served = manager.last_restore();
      if (served.level != "local" || served.rebuilt_nodes != std::vector<int>{lost}) {
        std::string rebuilt;
        for (const int node : served.rebuilt_nodes) rebuilt += " " + std::to_string(node);
        throw std::runtime_error("cairn.levels.restore.rebuild: the restore read the " +
                                 served.level + " level and rebuilt nodes [" + rebuilt + " ] (" +
                                 served.why_not_local + "), not the local level with node " +
                                 std::to_string(lost) + " rebuilt");
      }
    }
    add("restore.rebuild", rep, seconds, {{"lost_node", lost}, {"page_cache", dropped}});
    {
      cairn::CheckpointManager manager(world_, root, {.read_only = true});
      seconds = restore_seconds(manager, 0, "restore.persistent", dropped);
    }
    add("restore.persistent", rep, seconds, {{"page_cache", dropped}});
    remove_tree(local);
    remove_tree(root);
  }

  // Three partner saves; the third one's blocking time is recorded. `drain`: the second save
  // is drained (kDrainEvery), so that the third one runs while that drain is in flight;
  // otherwise nothing is drained.
  void drain_case(int rep, bool drain) {
    const std::string name = drain ? "drain.during" : "drain.without";
    const auto root = scratch_ / name;
    const auto local = local_ / name;
    remove_tree(root);
    remove_tree(local);
    drop_caches(run_.drop);
    double seconds = 0;
    bool before = false;
    bool after = false;
    {
      cairn::CheckpointManager manager(
          world_, root, with_level(local, LocalRedundancy::partner(), drain ? kDrainEvery : 0));
      (void)save_seconds(manager, 0, name);
      (void)save_seconds(manager, 1, name);
      before = in_flight_anywhere(manager);
      seconds = save_seconds(manager, 2, name);
      after = in_flight_anywhere(manager);
      manager.wait_until_finished();
    }
    add(name, rep, seconds,
        {{"redundancy", LocalRedundancy::partner().describe()},
         {"persistent_every", drain ? kDrainEvery : 0},
         {"drain_in_flight_before", before},
         {"drain_in_flight_after", after}});
    remove_tree(local);
    remove_tree(root);
  }

  void save_during_drain(int rep) {
    drain_case(rep, false);
    drain_case(rep, true);
  }

  const Run& run_;
  cairn::Comm world_;
  cairn::Box box_;
  std::vector<std::vector<double>> blocks_;
  std::vector<std::vector<double>> back_;
  cairn::ArrayTree tree_;
  cairn::ArrayTree target_;
  std::filesystem::path scratch_;
  std::filesystem::path local_;
  cairn::TreeSaveOptions options_;
  // XOR groups of 4 nodes, the group of the target; all the nodes when there are fewer.
  int xor_group_;
};

}  // namespace

void run_cairn_levels(const Run& run) {
  if (world_size() < 2) {
    run.recorder->add("cairn.levels.unavailable", 0, 0, 0,
                      {{"unavailable",
                        "a local level with redundancy needs at least 2 nodes "
                        "(ranks), the run has 1"}});
    return;
  }
  const std::filesystem::path local = make_local_root();
  const RemovedAtExit remove_local(local);
  LevelsCase levels(run, local);
  levels.warm_up();
  for (int rep = 0; rep < run.reps; ++rep) levels.repetition(rep);
  remove_tree(run.dir / "cairn-levels");
}

}  // namespace bench
