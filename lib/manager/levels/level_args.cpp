#include "manager/levels/level_args.hpp"

#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <any>
#include <map>
#include <utility>

#include "base/durable_file.hpp"
#include "checkpoint/step_metadata.hpp"
#include "manager/levels/file_map.hpp"
#include "storage/index/binary.hpp"

namespace cairn::levels {
namespace {

// A non-owning handle on arguments the caller keeps alive.
std::shared_ptr<const CheckpointArgs> alias(const CheckpointArgs& args) {
  return {std::shared_ptr<const CheckpointArgs>{}, &args};
}

// Applies `each` to every item of `args` (itself when it is not a Composite) and rebuilds a
// Composite from the results; returns null when `each` returns null for an item.
template <class Each>
std::shared_ptr<const CheckpointArgs> map_items(const std::shared_ptr<const CheckpointArgs>& args,
                                                const std::filesystem::path& dir, Each&& each) {
  const auto* composite = dynamic_cast<const Composite*>(args.get());
  if (composite == nullptr) return each(args, dir);
  Composite::Items items;
  bool changed = false;
  for (const auto& [name, item] : composite->items()) {
    auto mapped = item ? each(item, dir / name) : item;
    if (item && !mapped) return nullptr;
    changed = changed || mapped != item;
    items.emplace(name, std::move(mapped));
  }
  if (!changed) return args;
  return std::make_shared<Composite>(std::move(items), composite->custom_metadata());
}

// The tree of `tree` with each array shard read from the local item directory `dir`.
ArrayTree tree_from_local(const ArrayTree& tree, const std::filesystem::path& dir, int node_rank) {
  const storage::TreeIndex index = storage::read_full_index(dir);
  std::map<std::string, std::shared_ptr<MappedFile>> maps;
  ArrayTree out;
  for (const Leaf& leaf : tree) {
    if (leaf.kind() != LeafKind::array) {
      switch (leaf.kind()) {
        case LeafKind::scalar: out.add_scalar(leaf.path(), leaf.as_scalar()); break;
        case LeafKind::string: out.add_string(leaf.path(), leaf.as_string()); break;
        default: out.add_json(leaf.path(), leaf.as_json()); break;
      }
      continue;
    }
    ArrayShard shard = leaf.as_array();
    const storage::LeafRecord* record = index.find(leaf.path());
    if (record == nullptr) {
      throw FormatError(
          (dir / storage::kTreeIndexFile).string(), leaf.path(),
          fmt::format("the local step '{}' lacks leaf '{}'", dir.string(), leaf.path()));
    }
    const storage::ShardRecord* mine = nullptr;
    for (const auto& s : record->shards) {
      if (record->replicated || s.rank == node_rank) mine = &s;
      if (mine != nullptr) break;
    }
    shard.dtype = record->dtype;
    shard.strides.clear();
    shard.memory = MemoryKind::host;
    shard.data = nullptr;
    std::shared_ptr<MappedFile> owner;
    if (mine != nullptr && mine->bytes > 0) {
      auto& map = maps[mine->file];
      if (!map) map = std::make_shared<MappedFile>(dir / mine->file);
      shard.data = const_cast<std::byte*>(map->at(mine->byte_offset, mine->bytes));
      owner = map;
    } else if (shard.local_volume() > 0) {
      throw FormatError((dir / storage::kTreeIndexFile).string(), leaf.path(),
                        fmt::format("the local step '{}' lacks rank {}'s shard of leaf '{}'",
                                    dir.string(), node_rank, leaf.path()));
    }
    out.add_array(leaf.path(), std::move(shard), std::move(owner));
  }
  for (const auto& [path, kind] : tree.empty_nodes()) out.add_empty(path, kind);
  return out;
}

}  // namespace

std::shared_ptr<const CheckpointArgs> resolve_args(const CheckpointArgs& args) {
  return map_items(alias(args), {}, [](const auto& item, const auto&) {
    const auto* tree = dynamic_cast<const ArrayTreeSave*>(item.get());
    if (tree == nullptr || !tree->build) return item;
    return std::static_pointer_cast<const CheckpointArgs>(
        std::make_shared<ArrayTreeSave>(tree->tree_to_save(), tree->options));
  });
}

std::shared_ptr<const CheckpointArgs> local_save_args(
    const std::shared_ptr<const CheckpointArgs>& resolved) {
  return map_items(resolved, {}, [](const auto& item, const auto&) {
    const auto* tree = dynamic_cast<const ArrayTreeSave*>(item.get());
    if (tree == nullptr) return item;
    TreeSaveOptions options{.format = StorageFormat::posix,
                            .allow_sparse = true,
                            .fsync = tree->options.fsync,
                            .io_buffer_bytes = tree->options.io_buffer_bytes,
                            .detect_device_memory = tree->options.detect_device_memory,
                            .checksum_chunk_bytes = tree->options.checksum_chunk_bytes,
                            .save_args = tree->options.save_args};
    for (auto& [path, leaf] : options.save_args) {
      leaf.compression = {};
      leaf.chunk_shape = {};
    }
    return std::static_pointer_cast<const CheckpointArgs>(
        std::make_shared<ArrayTreeSave>(tree->tree, std::move(options)));
  });
}

std::shared_ptr<const CheckpointArgs> drain_args(
    const std::shared_ptr<const CheckpointArgs>& resolved, const std::filesystem::path& local_step,
    int node_rank, std::uint64_t bytes_per_second) {
  return map_items(resolved, local_step,
                   [&](const std::shared_ptr<const CheckpointArgs>& item,
                       const std::filesystem::path& dir) -> std::shared_ptr<const CheckpointArgs> {
                     if (const auto* tree = dynamic_cast<const ArrayTreeSave*>(item.get())) {
                       TreeSaveOptions options = tree->options;
                       options.write_bytes_per_second = bytes_per_second;
                       return std::make_shared<ArrayTreeSave>(
                           tree_from_local(tree->tree, dir, node_rank), std::move(options));
                     }
                     if (const auto* json = dynamic_cast<const JsonSave*>(item.get())) {
                       return std::make_shared<JsonSave>(*json);
                     }
                     if (const auto* bytes = dynamic_cast<const BytesSave*>(item.get())) {
                       return std::make_shared<BytesSave>(*bytes);
                     }
                     return nullptr;
                   });
}

namespace {

// The save arguments of the item of handler type `type` in `dir`, read back over the node's
// ranks; null for a handler that is not cairn's.
std::shared_ptr<const CheckpointArgs> item_from_local(const Comm& node_comm,
                                                      const std::filesystem::path& dir,
                                                      std::string_view type,
                                                      const TreeSaveOptions* like,
                                                      std::uint64_t bytes_per_second) {
  if (type == ArrayTreeHandler::kTypeName) {
    TreeSaveOptions options = like != nullptr ? *like : TreeSaveOptions{};
    options.allow_sparse = true;
    options.sparse_leaves.clear();
    options.write_bytes_per_second = bytes_per_second;
    ArrayTree tree = restore_tree_as_saved(node_comm, dir);
    // Options of leaves this tree lacks would fail the save.
    std::erase_if(options.leaf_formats, [&](const auto& leaf) { return !tree.find(leaf.first); });
    std::erase_if(options.save_args, [&](const auto& leaf) { return !tree.find(leaf.first); });
    return std::make_shared<ArrayTreeSave>(std::move(tree), std::move(options));
  }
  if (type == JsonHandler::kTypeName) {
    JsonHandler handler;
    return std::make_shared<JsonSave>(
        std::any_cast<boost::json::value>(handler.restore(node_comm, dir, nullptr)));
  }
  if (type == BytesHandler::kTypeName) {
    BytesHandler handler;
    const boost::json::value described = handler.metadata(node_comm, dir);
    const auto* replicated = described.as_object().if_contains("replicated");
    return std::make_shared<BytesSave>(
        std::any_cast<std::vector<std::byte>>(handler.restore(node_comm, dir, nullptr)),
        replicated != nullptr && replicated->is_bool() && replicated->get_bool());
  }
  return nullptr;
}

}  // namespace

LocalStepArgs args_from_local_step(const Comm& node_comm, const std::filesystem::path& local_step,
                                   const std::map<std::string, TreeSaveOptions>& like,
                                   std::uint64_t bytes_per_second) {
  const auto like_item = [&](const std::string& name) -> const TreeSaveOptions* {
    const auto it = like.find(name);
    return it == like.end() ? nullptr : &it->second;
  };
  const StepMetadata meta = StepMetadata::read(local_step);
  LocalStepArgs out;
  if (const auto* custom = meta.custom.if_object()) out.custom = *custom;
  if (meta.handler != CompositeHandler::kTypeName) {
    out.args =
        item_from_local(node_comm, local_step, meta.handler, like_item(""), bytes_per_second);
    if (!out.args) out.not_rebuilt = fmt::format("the item (handler '{}')", meta.handler);
    return out;
  }
  Composite::Items items;
  for (const auto& [name, type] : meta.items) {
    auto item =
        item_from_local(node_comm, local_step / name, type, like_item(name), bytes_per_second);
    if (!item) {
      out.not_rebuilt = fmt::format("item '{}' (handler '{}')", name, type);
      return out;
    }
    items.emplace(name, std::move(item));
  }
  std::map<std::string, boost::json::object> item_custom;
  if (const auto* saved = meta.json.if_contains(CompositeHandler::kItemCustomMetadataKey);
      saved != nullptr && saved->is_object()) {
    for (const auto& [name, value] : saved->get_object()) {
      if (value.is_object() && items.contains(std::string(name))) {
        item_custom.emplace(std::string(name), value.get_object());
      }
    }
  }
  out.args = std::make_shared<Composite>(std::move(items), std::move(item_custom));
  return out;
}

std::map<std::string, TreeSaveOptions> tree_options_of(const Comm& comm,
                                                       const std::filesystem::path& step_dir) {
  const auto file = step_dir / kStepMetadataFile;
  std::string text;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm.is_primary()) text = base::read_small_file(file);
  });
  const StepMetadata meta = checkpoint::parse_step_metadata(comm.broadcast(text), file);
  std::map<std::string, std::filesystem::path> trees;  // item name -> its directory
  if (meta.handler == ArrayTreeHandler::kTypeName) trees.emplace("", step_dir);
  for (const auto& [name, type] : meta.items) {
    if (type == ArrayTreeHandler::kTypeName) trees.emplace(name, step_dir / name);
  }
  std::map<std::string, TreeSaveOptions> out;
  for (const auto& [name, dir] : trees) {
    TreeSaveOptions& options = out[name];
    for (const SavedLeafInfo& leaf : read_tree_info(comm, dir).leaves) {
      if (leaf.kind != LeafKind::array) continue;
      options.leaf_formats[leaf.path] = leaf.format;
      options.save_args[leaf.path].compression = leaf.compression;
    }
  }
  return out;
}

bool locally_restorable(const CheckpointArgs* args, std::string& why) {
  if (args == nullptr) {
    why = "a restore of every item as saved needs whole arrays, which no node holds";
    return false;
  }
  if (const auto* composite = dynamic_cast<const Composite*>(args)) {
    for (const auto& [name, item] : composite->items()) {
      if (!locally_restorable(item.get(), why)) {
        why = fmt::format("item '{}': {}", name, why);
        return false;
      }
    }
    return true;
  }
  if (const auto* tree = dynamic_cast<const ArrayTreeRestore*>(args); tree && !tree->target) {
    why = "an array tree restored as saved needs whole arrays, which no node holds";
    return false;
  }
  if (const auto* bytes = dynamic_cast<const BytesRestore*>(args); bytes && bytes->from_rank) {
    why = "bytes restored from another rank's save";
    return false;
  }
  return true;
}

}  // namespace cairn::levels
