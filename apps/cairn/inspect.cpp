// cairn inspect CHECKPOINT [ITEM|LEAF-PATTERN] [-D]: what a checkpoint holds.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "decomposition.hpp"
#include "leaf_stats.hpp"
#include "select.hpp"

namespace cairn_tool {
namespace {

// A leaf's compression as JSON: {"kind": "none" | "zstd" | "zfp"} with the zstd level and
// shuffle or the zfp bound.
boost::json::object compression_json(const cairn::Compression& c) {
  using Kind = cairn::Compression::Kind;
  switch (c.kind) {
    case Kind::none: return {{"kind", "none"}};
    case Kind::zstd:
      return {{"kind", "zstd"}, {"level", c.level == 0 ? 3 : c.level}, {"shuffle", c.shuffle}};
    case Kind::zfp:
      if (c.absolute_error > 0) return {{"kind", "zfp"}, {"absolute_error", c.absolute_error}};
      return {{"kind", "zfp"}, {"relative_error", c.relative_error}};
  }
  return {{"kind", "unknown"}};
}

// ", zstd level 3: 1.2 MiB stored" for a compressed leaf in the text listing; empty otherwise.
std::string compression_text(const boost::json::object& leaf) {
  const auto* c = leaf.if_contains("compression");
  if (c == nullptr || c->at("kind").get_string() == "none") return {};
  const auto& o = c->get_object();
  std::string what(o.at("kind").get_string());
  if (const auto* level = o.if_contains("level")) {
    what += fmt::format(" level {}", level->to_number<std::int64_t>());
  } else if (const auto* bound = o.if_contains("absolute_error")) {
    what += fmt::format(" absolute error {}", bound->to_number<double>());
  } else if (const auto* relative = o.if_contains("relative_error")) {
    what += fmt::format(" relative error {}", relative->to_number<double>());
  }
  return fmt::format(", {}: {} stored", what,
                     human_bytes(leaf.at("stored_bytes").to_number<std::uint64_t>()));
}

// ", 3.1 MiB in earlier saves (12 chunks)" for a leaf of an incremental save that refers to
// chunks of an earlier one; empty otherwise.
std::string referenced_text(const boost::json::object& leaf) {
  const auto* chunks = leaf.if_contains("referenced_chunks");
  if (chunks == nullptr || chunks->to_number<std::uint64_t>() == 0) return {};
  return fmt::format(", {} in earlier saves ({} chunks)",
                     human_bytes(leaf.at("referenced_bytes").to_number<std::uint64_t>()),
                     chunks->to_number<std::uint64_t>());
}

// The leaves of a tree item with their values (for scalars, strings and JSON). Collective.
boost::json::object describe_tree(const cairn::Comm& comm, const Item& item) {
  const cairn::SavedTreeInfo info = cairn::read_tree_info(comm, item.dir);
  std::vector<std::string> value_paths;
  for (const auto& leaf : info.leaves) {
    if (leaf.kind != cairn::LeafKind::array) value_paths.push_back(leaf.path);
  }
  cairn::ArrayTree values;
  if (!value_paths.empty()) {
    values = cairn::restore_tree_as_saved(comm, item.dir, {.select = value_paths});
  }
  boost::json::array leaves;
  for (const auto& leaf : info.leaves) {
    boost::json::object o = {{"path", leaf.path}, {"kind", cairn::leaf_kind_name(leaf.kind)}};
    if (leaf.kind == cairn::LeafKind::array) {
      o["dtype"] = cairn::dtype_name(leaf.dtype);
      o["shape"] = boost::json::value_from(leaf.shape);
      o["shards"] = leaf.shard_count;
      o["bytes"] = leaf.bytes;
      o["format"] = cairn::storage_format_name(leaf.format);
      o["replicated"] = leaf.replicated;
      o["order"] = leaf.fortran_order ? "F" : "C";
      o["compression"] = compression_json(leaf.compression);
      o["stored_bytes"] = leaf.stored_bytes;
      o["referenced_chunks"] = leaf.referenced_chunks;
      o["referenced_bytes"] = leaf.referenced_bytes;
      if (leaf.stats) o["stats"] = stats_json(*leaf.stats);
    } else if (const auto* saved = values.find(leaf.path)) {
      switch (leaf.kind) {
        case cairn::LeafKind::scalar:
          o["dtype"] = cairn::dtype_name(leaf.dtype);
          o["value"] = saved->as_scalar().to_json().as_object().at("value");
          break;
        case cairn::LeafKind::string: o["value"] = saved->as_string(); break;
        default: o["value"] = saved->as_json(); break;
      }
    }
    leaves.push_back(std::move(o));
  }
  return {{"world_size", info.world_size}, {"leaves", std::move(leaves)}};
}

// What `item` holds; with `index`, an array tree's whole index too (cairn inspect --json).
boost::json::object describe_item(const cairn::Comm& comm, const Item& item, bool index) {
  boost::json::object out = {{"type", item.type}};
  try {
    if (item.type == kArrayTree) {
      for (auto& [key, value] : describe_tree(comm, item)) out[key] = value;
      if (index && comm.is_primary()) out["index"] = cairn::read_tree_index_json(item.dir);
    } else if (item.type == kJson) {
      const auto file = read_json_file(item.dir / "value.json");
      if (file.value) {
        out["value"] = *file.value;
      } else {
        out["problem"] = file.error;
      }
    } else if (item.type == kBytes) {
      // The library's validating reader: a damaged index is a problem naming the file.
      out["index"] = cairn::BytesHandler().metadata(comm, item.dir);
    } else {
      out["problem"] = "unknown item type; not described";
    }
  } catch (const cairn::Error& e) {
    out["problem"] = e.what();
  }
  return out;
}

std::string shape_text(const boost::json::value& shape) {
  std::string out = "(";
  for (const auto& n : shape.get_array()) {
    out += (out.size() > 1 ? ", " : "") + std::to_string(n.to_number<std::int64_t>());
  }
  return out + (shape.get_array().size() == 1 ? ",)" : ")");
}

void print_item(const std::string& name, const boost::json::object& item) {
  fmt::print("item {} ({}", name, std::string(item.at("type").get_string()));
  if (const auto* ranks = item.if_contains("world_size"))
    fmt::print(", saved by {} ranks", ranks->to_number<std::int64_t>());
  fmt::print(")\n");
  if (const auto* problem = item.if_contains("problem")) {
    fmt::print("  DAMAGED: {}\n", std::string(problem->get_string()));
    return;
  }
  if (const auto* leaves = item.if_contains("leaves")) {
    fmt::print("  {:<24} {:<7} {:<9} {:<16} {:>6} {:>10}  {}\n", "LEAF", "KIND", "DTYPE", "SHAPE",
               "SHARDS", "BYTES", "FORMAT");
    for (const auto& v : leaves->get_array()) {
      const auto& leaf = v.get_object();
      const std::string path(leaf.at("path").get_string());
      const std::string kind(leaf.at("kind").get_string());
      const auto* dtype = leaf.if_contains("dtype");
      const std::string dtype_text = dtype ? std::string(dtype->get_string()) : "";
      if (kind == "array") {
        // The shape is the stored (C-order) one; a Fortran writer saw it reversed.
        const bool fortran = leaf.at("order").get_string() == "F";
        fmt::print("  {:<24} {:<7} {:<9} {:<16} {:>6} {:>10}  {}{}{}{}{}\n", path, kind, dtype_text,
                   shape_text(leaf.at("shape")), leaf.at("shards").to_number<std::int64_t>(),
                   human_bytes(leaf.at("bytes").to_number<std::uint64_t>()),
                   std::string(leaf.at("format").get_string()),
                   leaf.at("replicated").get_bool() ? ", replicated" : "",
                   fortran ? ", order F (Fortran: dims reversed)" : "", compression_text(leaf),
                   referenced_text(leaf));
        if (const auto* stats = leaf.if_contains("stats")) {
          fmt::print("  {:<24} values: {}\n", "", stats_text(stats->get_object()));
        }
      } else {
        const auto* value = leaf.if_contains("value");
        fmt::print("  {:<24} {:<7} {:<9} = {}\n", path, kind, dtype_text,
                   value ? boost::json::serialize(*value) : "?");
      }
    }
  } else if (const auto* value = item.if_contains("value")) {
    fmt::print("  {}\n", pretty_json(*value, 2));
  } else if (const auto* index = item.if_contains("index")) {
    fmt::print("  {}\n", pretty_json(*index, 2));
  }
}

// Keeps, of the described `item`, the leaves that `wanted` chooses as `cairn dump` names them
// ("item/leaf", or "leaf" in a single-item checkpoint); whether anything of the item is left
// (an item without leaves counts when `wanted` chooses the item itself).
bool keep_chosen_leaves(boost::json::object& item, const Item& of, const std::string& wanted) {
  const std::string prefix = of.name.empty() ? "" : of.name + "/";
  auto* leaves = item.if_contains("leaves");
  if (leaves == nullptr) return selected(of.label(), {wanted});
  boost::json::array kept;
  for (auto& leaf : leaves->as_array()) {
    if (selected(prefix + std::string(leaf.at("path").as_string()), {wanted})) {
      kept.push_back(std::move(leaf));
    }
  }
  *leaves = std::move(kept);
  return !leaves->as_array().empty();
}

// Adds the "decomposition" of the described array tree `item` (its kept leaves), read from
// the index in `dir`; a damaged index is the item's "problem". Primary rank only.
void add_decomposition(boost::json::object& item, const std::filesystem::path& dir) {
  try {
    const boost::json::object all = tree_decomposition(dir);
    boost::json::object chosen;
    if (const auto* leaves = item.if_contains("leaves")) {
      for (const auto& leaf : leaves->as_array()) {
        if (const auto* blocks = all.if_contains(leaf.at("path").as_string())) {
          chosen[leaf.at("path").as_string()] = *blocks;
        }
      }
    }
    item["decomposition"] = std::move(chosen);
  } catch (const cairn::Error& e) {
    item["problem"] = e.what();
  }
}

}  // namespace

int run_inspect(const cairn::Comm& comm, const InspectOptions& given, JsonStream& json) {
  if (const auto why = on_primary(comm, [&] { return not_a_checkpoint(given.checkpoint); });
      !why.empty()) {
    throw CommandError(why);
  }
  // An item directory of a checkpoint is shown as that item of its checkpoint, whose marker
  // and step metadata say whether it is committed.
  InspectOptions options = given;
  const std::filesystem::path named(given.checkpoint);
  if (!is_checkpoint_dir(named) && is_checkpoint_dir(named.parent_path()) && given.item.empty()) {
    options.checkpoint = named.parent_path().string();
    options.item = named.filename().string();
  }
  const Checkpoint ckpt = read_checkpoint(options.checkpoint);
  // ITEM names an item, or else chooses leaves (a path or a glob pattern).
  const bool whole_item =
      options.item.empty() || std::any_of(ckpt.items.begin(), ckpt.items.end(),
                                          [&](const Item& i) { return i.name == options.item; });
  boost::json::object items;
  bool found = options.item.empty();
  for (const auto& item : ckpt.items) {
    if (whole_item && !options.item.empty() && item.name != options.item) continue;
    auto described = describe_item(comm, item, options.json);
    if (!whole_item && !keep_chosen_leaves(described, item, options.item)) continue;
    found = true;
    if (options.decomposition && comm.is_primary() && item.type == kArrayTree) {
      add_decomposition(described, item.dir);
    }
    items[item.label()] = std::move(described);
  }
  if (!found) {
    throw CommandError(is_glob_pattern(options.item)
                           ? fmt::format("'{}' has no item or leaf matching '{}'",
                                         options.checkpoint, options.item)
                           : fmt::format("'{}' has no item '{}' (nor a leaf of that path)",
                                         options.checkpoint, options.item));
  }
  if (!comm.is_primary()) return kOk;
  boost::json::array problems;
  for (const auto& p : ckpt.problems) problems.emplace_back(p);
  // Damage found (the exit codes of docs/cairn-tool.md): problems of the step, an item that cannot
  // be read, or no commit marker (restore never uses the checkpoint).
  bool damaged = !problems.empty() || !ckpt.committed;
  for (const auto& [name, item] : items) damaged = damaged || item.get_object().contains("problem");
  const int code = damaged ? kFound : kOk;
  if (options.json) {
    boost::json::object out = {
        {"path", options.checkpoint},
        {"committed", ckpt.committed},
        {"step_metadata", ckpt.step ? boost::json::value(ckpt.step->json) : nullptr},
        {"problems", problems},
        {"items", items}};
    if (const auto cost = save_cost(ckpt)) {
      out["save"] = {{"data_bytes", cost->bytes},
                     {"save_s", cost->seconds},
                     {"bandwidth_bytes_per_s", cost->bandwidth()}};
    }
    json.document(out);
    return code;
  }
  fmt::print("checkpoint {}\n{}", options.checkpoint, step_summary(ckpt));
  for (const auto& [name, item] : items) {
    print_item(std::string(name), item.get_object());
    if (const auto* blocks = item.get_object().if_contains("decomposition")) {
      fmt::print("  decomposition (blocks of each array leaf, one per writing rank):\n{}",
                 decomposition_text(blocks->get_object()));
    }
  }
  return code;
}

}  // namespace cairn_tool
