#include "manager/levels/local_exchange.hpp"

#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <span>

#include "storage/index/binary.hpp"

namespace cairn::levels {
namespace {

// An array-tree item restored into targets, and its directory in a node's part.
struct TreeItem {
  std::filesystem::path dir;
  const ArrayTreeRestore* args = nullptr;
};

std::vector<TreeItem> tree_items(const CheckpointArgs& args, const std::filesystem::path& step) {
  std::vector<TreeItem> out;
  const auto add = [&](const CheckpointArgs* item, const std::filesystem::path& dir) {
    const auto* tree = dynamic_cast<const ArrayTreeRestore*>(item);
    if (tree != nullptr && tree->target) out.push_back({dir, tree});
  };
  if (const auto* composite = dynamic_cast<const Composite*>(&args)) {
    for (const auto& [name, item] : composite->items()) add(item.get(), step / name);
  } else {
    add(&args, step);
  }
  return out;
}

// One target array leaf as this rank sees it before the ranks compare.
struct Candidate {
  const TreeItem* item = nullptr;
  std::string path;
  ArrayShard target;
  Box wanted = {};               // the target cells that come from the save
  Box saved = {};                // what this rank's node-rank saved of the leaf
  bool direct = true;            // this node's part holds every wanted cell
  std::string unsupported = {};  // why the exchange cannot fill this target
};

Box empty_box(std::size_t dims) {
  return Box{std::vector<std::int64_t>(dims, 0), std::vector<std::int64_t>(dims, 0)};
}

std::int64_t overlap(const Box& a, const Box& b) {
  if (a.rank() != b.rank()) return 0;
  const auto region = intersect(a, b);
  return region ? volume(*region) : 0;
}

Candidate plan_leaf(const TreeItem& item, const storage::TreeIndex& index, const std::string& path,
                    const ArrayShard& target, int node_rank) {
  Candidate c{.item = &item,
              .path = path,
              .target = target,
              .wanted = empty_box(target.box.rank()),
              .saved = empty_box(target.box.rank())};
  const storage::LeafRecord* record = index.find(path);
  // A leaf the part lacks, or holds as another kind or rank of array, is the direct restore's
  // to report (or to leave alone when optional); a replicated leaf is whole on every node.
  if (record == nullptr || record->kind != LeafKind::array || record->replicated ||
      record->shape.size() != target.box.rank()) {
    return c;
  }
  const auto wanted = intersect(target.box, whole_box(record->shape));
  if (wanted) c.wanted = *wanted;
  std::int64_t held = 0;
  for (const auto& shard : record->shards) {
    held += overlap(shard.box, c.wanted);
    if (shard.rank == node_rank) c.saved = shard.box;
  }
  c.direct = held >= volume(c.wanted);
  const TreeRestoreOptions& options = item.args->options;
  if (!options.renames.empty() || options.derived_leaves.contains(path)) {
    c.unsupported = "its item is restored with renames or derived leaves";
  } else if (target.memory != MemoryKind::host || !target.contiguous()) {
    c.unsupported = "its target is not a contiguous host buffer";
  } else if (target.dtype != record->dtype) {
    c.unsupported = fmt::format("its target's dtype {} is not the saved {}",
                                dtype_name(target.dtype), dtype_name(record->dtype));
  } else if (target.global_shape != record->shape) {
    c.unsupported = "its target has another global shape than the saved one";
  }
  return c;
}

void put_box(std::vector<std::int64_t>& out, const Box& box) {
  out.insert(out.end(), box.offset.begin(), box.offset.end());
  out.insert(out.end(), box.extent.begin(), box.extent.end());
}

Box take_box(std::span<const std::int64_t> in, std::size_t& at, std::size_t dims) {
  Box box;
  box.offset.assign(in.begin() + static_cast<std::ptrdiff_t>(at),
                    in.begin() + static_cast<std::ptrdiff_t>(at + dims));
  box.extent.assign(in.begin() + static_cast<std::ptrdiff_t>(at + dims),
                    in.begin() + static_cast<std::ptrdiff_t>(at + 2 * dims));
  at += 2 * dims;
  return box;
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

template <class T>
std::vector<T> values_of(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

LocalExchange::LocalExchange(const Comm& world, const Comm& node,
                             const std::filesystem::path& step_dir, const CheckpointArgs& args)
    : world_(world), node_(node) {
  const std::vector<TreeItem> items = tree_items(args, step_dir);
  std::vector<Candidate> candidates;
  std::string failure;
  try {
    for (const TreeItem& item : items) {
      const storage::TreeIndex index = storage::read_full_index(item.dir);
      for (const std::string& path : item.args->target->sorted_paths()) {
        const cairn::Leaf& leaf = item.args->target->at(path);
        if (leaf.kind() != LeafKind::array) continue;
        candidates.push_back(plan_leaf(item, index, path, leaf.as_array(), node.rank()));
      }
    }
  } catch (const Error& e) {
    failure = e.what();
  }
  world_.all_ok(failure.empty(), failure);

  // Which leaves some rank cannot take from its own node's part.
  std::vector<std::uint8_t> flags;
  for (const Candidate& c : candidates) flags.push_back(c.direct ? 0 : 1);
  const auto all_flags = world_.allgather_bytes(bytes_of(flags));
  std::vector<std::uint8_t> needed(flags.size(), 0);
  for (std::size_t r = 0; r < all_flags.size(); ++r) {
    if (all_flags[r].size() != flags.size()) {
      problem_ = fmt::format("rank {} restores {} array leaves, rank {} restores {}", r,
                             all_flags[r].size(), world_.rank(), flags.size());
      break;
    }
    for (std::size_t i = 0; i < flags.size(); ++i) {
      needed[i] |= std::to_integer<std::uint8_t>(all_flags[r][i]);
    }
  }
  if (!world_.all(problem_.empty())) {
    // Ranks disagree on the targets: the direct restore names the difference.
    problem_ = "the ranks restore different array leaves";
    return;
  }

  // Every rank's saved and wanted boxes of those leaves, and whether they can be served.
  std::vector<std::int64_t> boxes;
  std::string mine;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (needed[i] == 0) continue;
    const Candidate& c = candidates[i];
    put_box(boxes, c.saved);
    put_box(boxes, c.wanted);
    if (mine.empty() && !c.unsupported.empty() && volume(c.wanted) > 0) {
      mine = fmt::format("leaf '{}' cannot be exchanged across the node parts: {}", c.path,
                         c.unsupported);
    }
  }
  const auto all_boxes = world_.allgather_bytes(bytes_of(boxes));
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (needed[i] == 0) continue;
    const Candidate& c = candidates[i];
    leaves_.push_back(Leaf{.item_dir = c.item->dir, .path = c.path, .target = c.target});
  }
  const std::size_t ranks = all_boxes.size();
  std::vector<std::size_t> at(ranks, 0);
  std::vector<std::vector<std::int64_t>> decoded(ranks);
  for (std::size_t r = 0; r < ranks; ++r) decoded[r] = values_of<std::int64_t>(all_boxes[r]);
  for (Leaf& leaf : leaves_) {
    const std::size_t dims = leaf.target.box.rank();
    for (std::size_t r = 0; r < ranks; ++r) {
      leaf.saved.push_back(take_box(decoded[r], at[r], dims));
      leaf.targets.push_back(take_box(decoded[r], at[r], dims));
    }
    if (!mine.empty()) continue;
    // Saved shards never overlap, so the cells of the wanted box found across the nodes add up.
    const Box& wanted = leaf.targets[static_cast<std::size_t>(world_.rank())];
    std::int64_t found = 0;
    for (const Box& saved : leaf.saved) found += overlap(saved, wanted);
    if (found < volume(wanted)) {
      mine = fmt::format(
          "leaf '{}': {} of the {} cells of rank {}'s box {} are in no node's part of the step",
          leaf.path, volume(wanted) - found, volume(wanted), world_.rank(), to_string(wanted));
    }
  }
  for (const std::string& why : world_.allgather(mine)) {
    if (!why.empty()) {
      problem_ = why;
      break;
    }
  }
}

void LocalExchange::run() const {
  const auto me = static_cast<std::size_t>(world_.rank());
  // What this rank's node-rank saved, read from this node's part and checked.
  std::map<std::filesystem::path, std::vector<std::string>> selected;
  for (const Leaf& leaf : leaves_) selected[leaf.item_dir].push_back(leaf.path);
  std::vector<std::vector<std::byte>> to_each(static_cast<std::size_t>(world_.size()));
  world_.run_all("reading the local step for the exchange:", [&] {
    std::map<std::filesystem::path, ArrayTree> staged;
    for (const auto& [dir, paths] : selected) {
      staged[dir] = restore_tree_as_saved(node_, dir, {.select = paths});
    }
    // Packed in the order of leaves_, which every rank unpacks in.
    for (const Leaf& leaf : leaves_) {
      const Box& saved = leaf.saved[me];
      if (volume(saved) == 0) continue;
      const ArrayShard& source = staged.at(leaf.item_dir).at(leaf.path).as_array();
      if (source.box != saved) {
        throw FormatError(
            leaf.item_dir.string(), leaf.path,
            fmt::format("leaf '{}': the local part holds {} for rank {}, not {}", leaf.path,
                        to_string(source.box), node_.rank(), to_string(saved)));
      }
      const std::size_t elem = dtype_size(leaf.target.dtype);
      for (std::size_t r = 0; r < to_each.size(); ++r) {
        const auto region = intersect(saved, leaf.targets[r]);
        if (!region || is_empty(*region)) continue;
        auto& out = to_each[r];
        const std::size_t at = out.size();
        out.resize(at + static_cast<std::size_t>(volume(*region)) * elem);
        copy_region(elem, source.data, saved, out.data() + at, *region, *region);
      }
    }
  });
  const auto from = world_.alltoall_bytes(to_each);
  for (std::size_t s = 0; s < from.size(); ++s) {
    std::size_t at = 0;
    for (const Leaf& leaf : leaves_) {
      const auto region = intersect(leaf.saved[s], leaf.targets[me]);
      if (!region || is_empty(*region)) continue;
      const std::size_t bytes =
          static_cast<std::size_t>(volume(*region)) * dtype_size(leaf.target.dtype);
      if (at + bytes > from[s].size()) {
        throw FormatError(leaf.item_dir.string(), leaf.path,
                          fmt::format("leaf '{}': rank {} sent {} bytes, fewer than planned",
                                      leaf.path, s, from[s].size()));
      }
      copy_region(dtype_size(leaf.target.dtype), from[s].data() + at, *region, leaf.target.data,
                  leaf.target.box, *region);
      at += bytes;
    }
  }
}

}  // namespace cairn::levels
