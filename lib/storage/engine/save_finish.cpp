// TreeWriter, finishing a save: every rank's writes made durable, the writers closed, the
// verdict shared and the index written.
#include "storage/engine/tree_writer.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "storage/index/collective_writer.hpp"

namespace cairn::storage {
namespace json = boost::json;

void TreeWriter::fail(const std::exception& error) noexcept { error_.record(error); }

void TreeWriter::flush() {
  phases_.lap("write");
  for (auto& [format, writer] : writers_) {
    try {
      writer->flush(options_.fsync);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
  phases_.lap("sync");
}

bool TreeWriter::failed() const { return error_.failed(); }

void TreeWriter::finish(const Comm& comm) {
  // Every rank closes every writer, in the same order, even after a local failure.
  for (auto& [format, writer] : writers_) {
    try {
      writer->close(comm, options_.fsync);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
  phases_.lap("close");
  std::sort(records_.begin(), records_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // A lossy format gives back other values than those written: the index holds the checksums
  // of what a read returns, so that restores and verify check what they get.
  for (auto& [index, record] : records_) {
    const ArrayJob& job = arrays_.at(index);
    for (const auto& [format, writer] : writers_) {
      if (format != job.format) continue;
      if (auto sums = writer->checksums_as_read(job.format_index)) record.checksums = *sums;
    }
  }
  error_.report(comm, fmt::format("save_tree '{}': ", dir_.string()));

  // The index: every rank knows the tree's leaves; the records go to their sections' owners.
  TreeIndex index;
  index.world_size = comm.size();
  index.empty_nodes = tree_.empty_nodes();
  std::size_t arrays = 0;
  for (const Leaf* leaf : tree_.leaves_under("")) {
    LeafRecord record;
    record.path = leaf->path();
    record.kind = leaf->kind();
    switch (leaf->kind()) {
      case LeafKind::array: static_cast<StoredArray&>(record) = arrays_.at(arrays++); break;
      case LeafKind::scalar: record.value = leaf->as_scalar().to_json(); break;
      case LeafKind::string: record.value = json::string(leaf->as_string()); break;
      case LeafKind::json: record.value = leaf->as_json(); break;
    }
    index.leaves.push_back(std::move(record));
  }
  const std::size_t leaf_count = index.leaves.size();
  // An incremental save: the base's files it refers to, linked into shards/.
  const LinkReferencedFiles link = [&](const std::set<std::string>& files) {
    if (!base_) return;
    base_->link_files(dir_, files);
    if (options_.fsync && !files.empty()) base::sync_directory(dir_ / "shards");
  };
  const std::uint64_t bytes = write_index_collectively(comm, dir_, std::move(index),
                                                       std::move(records_), options_.fsync, link);
  records_.clear();
  phases_.lap("index");
  base::log::info("storage.save_phases", "dir=\"{}\" {}", dir_.string(), phases_.text());
  if (comm.is_primary()) {
    base::log::info("storage.save", "dir=\"{}\" leaves={} index_bytes={}", dir_.string(),
                    leaf_count, bytes);
  }
}

}  // namespace cairn::storage
