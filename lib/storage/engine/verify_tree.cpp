// verify_tree(): re-read every shard of a saved tree, in parallel, and report damage instead
// of throwing.
#include <boost/json.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "base/durable_file.hpp"
#include "base/posix_file.hpp"
#include "storage/engine/shard_source.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"

namespace cairn {
namespace {

// Bytes each rank reads at a time.
constexpr std::size_t kVerifyWindowBytes = std::size_t{16} << 20;

// The primary reads cairn-tree.json (and cairn-tree.bin) and every rank parses the same; a
// damaged index is a problem on every rank alike. The text goes as bytes, not inside JSON: a
// damaged file need not be valid UTF-8.
std::optional<storage::TreeIndex> load_index(const Comm& comm, const std::filesystem::path& dir,
                                             std::vector<std::string>& problems) {
  const auto file = dir / storage::kTreeIndexFile;
  const auto binary_file = dir / storage::kTreeIndexBinaryFile;
  std::string read;    // "+" and the text, or "-" and why it could not be read
  std::string binary;  // cairn-tree.bin, when there is one
  if (comm.is_primary()) {
    try {
      base::require_no_link_out(dir);  // the index and the data files it names
      read = "+" + base::read_small_file(file);
      std::error_code ec;
      if (std::filesystem::exists(binary_file, ec)) {
        binary = base::read_small_file(binary_file, std::uint64_t{1} << 40);
      }
    } catch (const std::exception& e) {
      read = std::string("-") + e.what();
    }
  }
  read = comm.broadcast(read);
  if (read.empty() || read.front() != '+') {
    problems.push_back(read.empty() ? read : read.substr(1));
    return std::nullopt;
  }
  binary = comm.broadcast(binary);
  try {
    auto index = storage::parse_index(std::string_view(read).substr(1), file);
    storage::attach_shards(index, binary, dir);
    return index;
  } catch (const std::exception& e) {
    problems.push_back(e.what());
    return std::nullopt;
  }
}

// "leaf 'a'" or "leaves 'a', 'b'".
std::string leaf_list(const std::vector<const storage::LeafRecord*>& leaves) {
  std::string out = leaves.size() == 1 ? "leaf " : "leaves ";
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    out += fmt::format("{}'{}'", i == 0 ? "" : ", ", leaves[i]->path);
  }
  return out;
}

std::string shard_name(const storage::LeafRecord& leaf, const storage::ShardRecord& shard) {
  return fmt::format("leaf '{}', shard of rank {} {}", leaf.path, shard.rank, to_string(shard.box));
}

// The array leaves of `index` whose data can be read at all; a format whose file cannot be
// opened, or a leaf whose data does not match the index, is one problem, not one per shard.
// Opening is collective and reports the same error on every rank.
std::vector<const storage::LeafRecord*> readable_arrays(const storage::TreeIndex& index,
                                                        storage::ShardSource& source,
                                                        std::vector<std::string>& problems) {
  std::vector<const storage::LeafRecord*> arrays;
  for (const auto& leaf : index.leaves) {
    if (leaf.kind == LeafKind::array) arrays.push_back(&leaf);
  }
  std::set<StorageFormat> unreadable;
  for (const auto* leaf : arrays) {
    if (unreadable.contains(leaf->format)) continue;
    try {
      source.open_reader(leaf->format);
    } catch (const std::exception& e) {
      std::vector<const storage::LeafRecord*> in_file;
      std::copy_if(arrays.begin(), arrays.end(), std::back_inserter(in_file),
                   [&](const auto* other) { return other->format == leaf->format; });
      problems.push_back(fmt::format("{} ({})", e.what(), leaf_list(in_file)));
      unreadable.insert(leaf->format);
    }
  }
  std::erase_if(arrays, [&](const storage::LeafRecord* leaf) {
    if (unreadable.contains(leaf->format)) return true;
    try {
      source.reader(leaf->format).open(std::span<const storage::LeafRecord* const>(&leaf, 1));
      return false;
    } catch (const std::exception& e) {
      problems.push_back(e.what());
      return true;
    }
  });
  return arrays;
}

// What this rank checked.
struct ScanTotals {
  std::int64_t shards = 0;
  std::int64_t bytes = 0;
};

// Checks this rank's shards of `arrays` (shard k of the list is checked by rank k % size),
// adding what it finds to `problems`.
ScanTotals scan_my_shards(const Comm& comm, const std::vector<const storage::LeafRecord*>& arrays,
                          storage::ShardSource& source, const VerifyProgress& progress,
                          std::vector<std::string>& problems) {
  std::size_t mine = 0;
  std::size_t k = 0;
  for (const auto* leaf : arrays) {
    for (std::size_t s = 0; s < leaf->shards.size(); ++s, ++k) {
      if (static_cast<int>(k % static_cast<std::size_t>(comm.size())) == comm.rank()) ++mine;
    }
  }
  std::size_t done = 0;
  ScanTotals totals;
  k = 0;
  for (const auto* leaf : arrays) {
    bool leaf_unreadable = false;  // a missing file is reported once per leaf and rank
    for (const auto& shard : leaf->shards) {
      if (static_cast<int>(k++ % static_cast<std::size_t>(comm.size())) != comm.rank()) continue;
      if (!leaf_unreadable) {
        try {
          const auto bad = source.scan(*leaf, shard);
          if (!bad.empty()) {
            problems.push_back(fmt::format(
                "{}{}", source.describe(*leaf, shard, bad.front()),
                bad.size() > 1 ? fmt::format(" (and {} more damaged chunks)", bad.size() - 1)
                               : std::string()));
          }
          ++totals.shards;
          totals.bytes += static_cast<std::int64_t>(shard.bytes);
        } catch (const NotFound& e) {
          problems.push_back(fmt::format("{} ({})", e.what(), shard_name(*leaf, shard)));
          leaf_unreadable = true;
        } catch (const std::exception& e) {
          problems.push_back(fmt::format("{} ({})", e.what(), shard_name(*leaf, shard)));
        }
      }
      ++done;
      if (progress) progress(done, mine);
    }
  }
  return totals;
}

}  // namespace

TreeVerifyReport verify_tree(const Comm& comm, const std::filesystem::path& dir,
                             const VerifyProgress& progress) {
  TreeVerifyReport report;
  std::vector<std::string> problems;
  const auto index = load_index(comm, dir, problems);
  if (!index) {
    report.problems = std::move(problems);
    return report;
  }
  report.leaves = index->leaves.size();

  storage::ShardSource source(comm, dir, true, kVerifyWindowBytes);
  const auto arrays = readable_arrays(*index, source, problems);
  const ScanTotals totals = scan_my_shards(comm, arrays, source, progress, problems);
  try {
    source.close();
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }

  // Every rank gets every rank's findings.
  boost::json::array local;
  for (const auto& p : problems) local.emplace_back(p);
  for (const auto& theirs : comm.allgather_json(local)) {
    for (const auto& p : theirs.as_array()) report.problems.emplace_back(p.as_string());
  }
  std::sort(report.problems.begin(), report.problems.end());
  report.problems.erase(std::unique(report.problems.begin(), report.problems.end()),
                        report.problems.end());
  report.shards = static_cast<std::size_t>(comm.sum(totals.shards));
  report.bytes = static_cast<std::uint64_t>(comm.sum(totals.bytes));
  return report;
}

}  // namespace cairn
