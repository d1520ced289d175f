// cairn's scaling case: a tree of many small 1-D leaves (the metadata-heavy tree), split over
// every rank, saved and restored --reps times. Each save and restore is an MPI_Pcontrol phase
// ("<format>.save", "<format>.restore") for the PMPI counting layer (libcairn_mpi_count,
// preloaded by apps/bench/scaling.py; without it MPI_Pcontrol does nothing). Records per
// repetition the time, rank 0's peak memory, and (after a save) what the step directory holds:
// files, bytes, metadata bytes, index bytes, and the time rank 0 takes to read, parse and
// serialize the index (a lower bound of the primary's work on it); for posix, also the time and
// files of the same save with one shard file per node (posix_aggregation). Public API only.
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "bench_common.hpp"

namespace bench {
namespace {

// What a committed step directory holds, counted on rank 0.
struct StepFiles {
  std::int64_t files = 0;
  std::int64_t bytes = 0;
  std::int64_t metadata_files = 0;  // *.json, cairn-tree.bin and the commit marker
  std::int64_t metadata_bytes = 0;
  std::int64_t index_files = 0;  // cairn-tree.json and cairn-tree.bin of each item
  std::int64_t index_bytes = 0;
  std::int64_t index_json_bytes = 0;    // cairn-tree.json: what grows with the leaves
  std::int64_t index_binary_bytes = 0;  // cairn-tree.bin: shard records and checksums
  std::vector<std::filesystem::path> indexes;
};

StepFiles step_files(const std::filesystem::path& dir) {
  StepFiles out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto size = static_cast<std::int64_t>(entry.file_size());
    const std::string name = entry.path().filename().string();
    ++out.files;
    out.bytes += size;
    if (entry.path().extension() == ".json" || name == "COMMITTED" || name == "cairn-tree.bin") {
      ++out.metadata_files;
      out.metadata_bytes += size;
    }
    if (name == "cairn-tree.json") {
      out.index_json_bytes += size;
      out.indexes.push_back(entry.path());
    }
    if (name == "cairn-tree.bin") out.index_binary_bytes += size;
    if (name == "cairn-tree.json" || name == "cairn-tree.bin") {
      ++out.index_files;
      out.index_bytes += size;
    }
  }
  return out;
}

// Seconds to read, parse and serialize every cairn-tree.json (what the primary reads and
// broadcasts on a restore; the shard records of cairn-tree.bin are read by each rank, its own
// part only).
double index_seconds(const std::vector<std::filesystem::path>& indexes) {
  const double start = MPI_Wtime();
  std::size_t sink = 0;
  for (const auto& path : indexes) {
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    sink += boost::json::serialize(boost::json::parse(text)).size();
  }
  if (sink == 0 && !indexes.empty()) throw std::runtime_error("empty index file");
  return MPI_Wtime() - start;
}

// posix only: saves the tree again with one shard file per node
// (TreeSaveOptions::posix_aggregation), outside the counted phase, and records its time and the
// files of its step next to those of the save with one file per rank.
void add_aggregated_save(const MetaCase& meta, cairn::Checkpointer& ckpt,
                         boost::json::object& extra) {
  if (meta.format != cairn::StorageFormat::posix) return;
  const std::filesystem::path dir = meta.dir.string() + "-per-node";
  remove_tree(dir);
  const double seconds = timed([&] {
    ckpt.save(dir,
              cairn::ArrayTreeSave(
                  meta.trees.tree,
                  {.format = meta.format,
                   .posix = {.aggregation = {.kind = cairn::PosixAggregation::Kind::per_node}}}));
  });
  extra["per_node_save_seconds"] = seconds;
  if (meta.world.is_primary()) extra["per_node_files"] = step_files(dir).files;
  remove_tree(dir);
}

}  // namespace

void run_cairn_scaling(const Run& run, const std::string& format_name) {
  MetaCase meta(run, "scaling", format_name);
  const std::string prefix = meta.prefix + "scaling_";
  const boost::json::object common{{"leaves", run.shape.meta_leaves},
                                   {"ranks", meta.world.size()},
                                   {"elems_per_leaf", run.shape.meta_elems}};
  cairn::Checkpointer ckpt(meta.world, std::make_shared<cairn::ArrayTreeHandler>());
  for (int rep = 0; rep < run.reps; ++rep) {
    remove_tree(meta.dir);
    double seconds = 0;
    const PeakRss save_peak = measure_peak_rss([&] {
      seconds = timed([&] {
        MPI_Pcontrol(1, (format_name + ".save").c_str());
        ckpt.save(meta.dir, cairn::ArrayTreeSave(meta.trees.tree, {.format = meta.format}));
        MPI_Pcontrol(0);
      });
    });
    boost::json::object extra = common;
    extra["primary_peak_rss_bytes"] = save_peak.peak;
    extra["primary_peak_growth_bytes"] = save_peak.growth;
    if (meta.world.is_primary()) {
      const StepFiles files = step_files(meta.dir);
      extra["files"] = files.files;
      extra["step_bytes"] = files.bytes;
      extra["metadata_files"] = files.metadata_files;
      extra["metadata_bytes"] = files.metadata_bytes;
      extra["index_files"] = files.index_files;
      extra["index_bytes"] = files.index_bytes;
      extra["index_json_bytes"] = files.index_json_bytes;
      extra["index_binary_bytes"] = files.index_binary_bytes;
      extra["primary_index_json_seconds"] = index_seconds(files.indexes);
    }
    add_aggregated_save(meta, ckpt, extra);
    run.recorder->add(prefix + "save", rep, seconds, run.shape.meta_bytes(), extra);

    std::fill(meta.trees.back.begin(), meta.trees.back.end(), -1.0);
    const std::string dropped = drop_caches(run.drop);
    const PeakRss restore_peak = measure_peak_rss([&] {
      seconds = timed([&] {
        MPI_Pcontrol(1, (format_name + ".restore").c_str());
        cairn::ArrayTreeRestore args(meta.trees.target);
        (void)ckpt.restore(meta.dir, &args);
        MPI_Pcontrol(0);
      });
    });
    if (world_max(meta.trees.data == meta.trees.back ? 0 : 1) != 0) {
      throw std::runtime_error(prefix + "restore: restored data differs");
    }
    extra = common;
    extra["page_cache"] = dropped;
    extra["primary_peak_rss_bytes"] = restore_peak.peak;
    extra["primary_peak_growth_bytes"] = restore_peak.growth;
    run.recorder->add(prefix + "restore", rep, seconds, run.shape.meta_bytes(), extra);
  }
  remove_tree(meta.dir);
}

}  // namespace bench
