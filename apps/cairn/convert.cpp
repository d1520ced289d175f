// cairn convert SRC DST --format F [--compression C]: rewrite a checkpoint with its arrays in
// another format and compression.
#include <boost/json.hpp>
#include <cairn/checkpointer.hpp>
#include <cairn/handlers.hpp>
#include <cairn/manager.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "checkpoint_dir.hpp"
#include "commands.hpp"
#include "compression_option.hpp"
#include "progress.hpp"
#include "read.hpp"

namespace cairn_tool {
namespace {

// The whole tree of `item`, each rank holding a slab of every array, read in pieces with
// progress. Collective.
cairn::ArrayTree read_tree(const cairn::Comm& comm, const Item& item, const Progress& progress) {
  const auto info = cairn::read_tree_info(comm, item.dir);
  cairn::ArrayTree tree;
  cairn::ArrayTree values;  // placeholders of the right kind: restore_tree() puts the values in
  std::uint64_t total = 0;
  for (const auto& leaf : info.leaves) {
    switch (leaf.kind) {
      case cairn::LeafKind::array: {
        // A 0-d array has no empty box: with several ranks every one holds it, replicated.
        const bool whole = leaf.replicated || leaf.shape.empty();
        tree.add_owned_array(
            leaf.path, leaf.dtype, leaf.shape, whole ? cairn::Box{} : slab(leaf.shape, comm),
            leaf.replicated || (leaf.shape.empty() && comm.size() > 1), leaf.fortran_order);
        total += static_cast<std::uint64_t>(tree.at(leaf.path).as_array().local_bytes());
        break;
      }
      case cairn::LeafKind::scalar: values.add_scalar(leaf.path, cairn::Scalar()); break;
      case cairn::LeafKind::string: values.add_string(leaf.path, ""); break;
      case cairn::LeafKind::json: values.add_json(leaf.path, nullptr); break;
    }
  }
  std::uint64_t done = 0;
  const std::string label = "reading " + item.label();
  for (const auto& leaf : info.leaves) {
    if (leaf.kind != cairn::LeafKind::array) continue;
    const auto& shard = tree.at(leaf.path).as_array();
    const std::size_t size = cairn::dtype_size(leaf.dtype);
    auto* data = static_cast<std::byte*>(shard.data);
    for_each_piece(comm, shard.box, size, kPieceBytes, [&](const cairn::Box& piece) {
      const std::int64_t skip = shard.box.rank() == 0 || cairn::volume(piece) == 0
                                    ? 0
                                    : (piece.offset[0] - shard.box.offset[0]) *
                                          (cairn::volume(shard.box) / shard.box.extent[0]);
      read_box(comm, item.dir, leaf, piece, data + skip * static_cast<std::int64_t>(size));
      done += static_cast<std::uint64_t>(cairn::volume(piece)) * size;
      progress.update(label, done, total, "bytes");
    });
  }
  progress.clear();
  if (!values.empty()) {
    cairn::restore_tree(comm, item.dir, values);
    for (const auto& leaf : values) {
      switch (leaf.kind()) {
        case cairn::LeafKind::scalar: tree.add_scalar(leaf.path(), leaf.as_scalar()); break;
        case cairn::LeafKind::string: tree.add_string(leaf.path(), leaf.as_string()); break;
        default: tree.add_json(leaf.path(), leaf.as_json()); break;
      }
    }
  }
  return tree;
}

std::shared_ptr<const cairn::CheckpointArgs> read_bytes(const cairn::Comm& comm, const Item& item) {
  cairn::BytesHandler handler;
  // Validated by the library (throws FormatError naming the index when it is damaged).
  const auto summary = handler.metadata(comm, item.dir).as_object();
  const bool shared = summary.at("replicated").as_bool();
  const auto blobs = summary.at("blobs").to_number<std::int64_t>();
  if (!shared && blobs != comm.size()) {
    throw cairn::InvalidArgument(fmt::format(
        "item '{}' holds per-rank bytes of {} ranks, which only the same number of ranks can "
        "carry over: run `mpirun -n {} cairn convert ...`",
        item.label(), blobs, blobs));
  }
  const cairn::BytesRestore args;
  auto bytes = std::any_cast<std::vector<std::byte>>(handler.restore(comm, item.dir, &args));
  return std::make_shared<cairn::BytesSave>(std::move(bytes), shared);
}

// How the array leaves of `tree` are saved: in `format`, compressed with `compression`, except
// that zfp, which compresses floating-point numbers alone, leaves the other dtypes as they are.
cairn::TreeSaveOptions save_options(const cairn::ArrayTree& tree, cairn::StorageFormat format,
                                    const cairn::Compression& compression) {
  cairn::TreeSaveOptions options{.format = format, .compression = compression};
  if (compression.kind != cairn::Compression::Kind::zfp) return options;
  for (const auto& leaf : tree) {
    if (leaf.kind() != cairn::LeafKind::array) continue;
    const cairn::DType dtype = leaf.as_array().dtype;
    if (dtype != cairn::DType::float32 && dtype != cairn::DType::float64) {
      options.save_args[leaf.path()] = {.compression = cairn::Compression::none()};
    }
  }
  return options;
}

// Every item of `src` as save arguments, array leaves in `format` and `compression`; `leaves`
// counts the tree leaves. Collective.
cairn::Composite::Items read_items(const cairn::Comm& comm, const Checkpoint& src,
                                   cairn::StorageFormat format,
                                   const cairn::Compression& compression, const Progress& progress,
                                   std::size_t& leaves) {
  cairn::Composite::Items items;
  for (const auto& item : src.items) {
    std::shared_ptr<const cairn::CheckpointArgs> args;
    if (item.type == kArrayTree) {
      auto tree = read_tree(comm, item, progress);
      leaves += tree.size();
      auto options = save_options(tree, format, compression);
      args = std::make_shared<cairn::ArrayTreeSave>(std::move(tree), std::move(options));
    } else if (item.type == kJson) {
      const auto file = read_json_file(item.dir / "value.json");
      if (!file.value)
        throw cairn::FormatError((item.dir / "value.json").string(), "value", file.error);
      args = std::make_shared<cairn::JsonSave>(*file.value);
    } else if (item.type == kBytes) {
      args = read_bytes(comm, item);
    } else {
      throw cairn::Unsupported(
          fmt::format("item '{}' has the handler type '{}', which this tool "
                      "cannot convert",
                      item.label(), item.type));
    }
    items.emplace(item.name, std::move(args));
  }
  return items;
}

// Why DST must not be written, or an empty string. Nothing is written inside a checkpoint.
// --force replaces a cairn checkpoint (cairn::is_checkpoint_directory(), the strict judgement)
// and nothing else: never the checkpoint being read, a directory above it, a root or a
// directory of other files.
std::string refused_destination(const std::filesystem::path& source,
                                const std::filesystem::path& destination, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path from = fs::weakly_canonical(fs::absolute(source, ec), ec);
  const fs::path to = fs::weakly_canonical(fs::absolute(destination, ec), ec);
  if (fs::equivalent(source, destination, ec) || from == to) {
    return fmt::format("'{}' and '{}' are the same checkpoint", source.string(),
                       destination.string());
  }
  // `to` holds `from` when each of its components leads `from`'s.
  if (std::mismatch(to.begin(), to.end(), from.begin(), from.end()).first == to.end()) {
    return fmt::format("'{}' holds the checkpoint '{}' being converted; nothing was changed",
                       destination.string(), source.string());
  }
  // A checkpoint written into another one would become part of it (and that one damaged).
  if (const std::string in = cairn_directory_holding(destination, true, true); !in.empty()) {
    return fmt::format(
        "'{}' is inside {} (an item of a checkpoint, or a directory in one): a checkpoint is "
        "never written inside another one, with --force or not; nothing was changed",
        destination.string(), in);
  }
  if (!fs::exists(fs::symlink_status(destination, ec))) return {};
  if (!force) {
    return fmt::format("'{}' already exists; pass --force to replace it", destination.string());
  }
  if (cairn::is_checkpoint_directory(destination)) return {};
  std::string why = cairn::looks_like_checkpoint_directory(destination)
                        ? fmt::format(
                              "'{}' is not a cairn checkpoint: its {} or {} is not one cairn "
                              "wrote, or names files that are missing",
                              destination.string(), cairn::kCommitMarker, cairn::kStepMetadataFile)
                        : not_a_checkpoint(destination);
  if (why.empty()) {
    why = fmt::format("'{}' is an item of a checkpoint, not a checkpoint", destination.string());
  }
  return why + "; --force replaces only a cairn checkpoint, so nothing was changed";
}

}  // namespace

int run_convert(const cairn::Comm& comm, const ConvertOptions& options, JsonStream& json) {
  const Checkpoint src = read_checkpoint(options.source);
  // A checkpoint whose step metadata is damaged is not converted: the copy would lose it.
  if (!src.committed || src.items.empty() || !src.step) {
    throw CommandError(fmt::format("'{}' is not a committed checkpoint{}", options.source,
                                   src.problems.empty() ? "" : ": " + src.problems.front()));
  }
  const std::string refused = on_primary(comm, [&] {
    return refused_destination(options.source, options.destination, options.force);
  });
  if (!refused.empty()) throw CommandError(refused);
  const auto format = *cairn::storage_format_from_name(options.format);
  if (const std::string why = cairn::storage_format_unavailable(format); !why.empty()) {
    throw cairn::Unsupported(why);
  }
  const std::string compression_name = options.compression.empty() ? "none" : options.compression;
  const auto compression = cairn_app::compression_from_text(compression_name);
  if (!compression) {
    throw CommandError(fmt::format("'{}' is not a compression", options.compression));
  }
  const Progress progress(!options.quiet && !options.json, comm.is_primary());
  std::size_t leaves = 0;
  auto items = read_items(comm, src, format, *compression, progress, leaves);
  // A manager's step keeps its metrics in the files that record them (hdf5's cairn_metrics).
  const boost::json::value& custom = src.step->custom;
  cairn::SaveProvenance provenance;
  if (custom.is_object()) {
    if (const auto* metrics = custom.get_object().if_contains(cairn::step_custom_key::kMetrics);
        metrics && metrics->is_object()) {
      provenance.metrics = metrics->get_object();
    }
  }
  const cairn::CheckpointSaveOptions save{
      .force = options.force, .custom_metadata = custom, .provenance = std::move(provenance)};
  progress.update("writing " + options.destination, 0, 1, "checkpoint");
  const bool single = src.items.size() == 1 && src.items.front().name.empty();
  if (single) {
    cairn::Checkpointer ckpt(comm, cairn::HandlerRegistry::global().create(src.items.front().type));
    ckpt.save(options.destination, *items.begin()->second, save);
  } else {
    cairn::Checkpointer ckpt(comm, std::make_shared<cairn::CompositeHandler>());
    ckpt.save(options.destination, cairn::Composite(std::move(items)), save);
  }
  progress.clear();
  if (comm.is_primary() && options.json) {
    const boost::json::object out = {
        {"source", options.source},  {"destination", options.destination},
        {"format", options.format},  {"compression", compression_name},
        {"items", src.items.size()}, {"tree_leaves", leaves},
        {"ranks", comm.size()}};
    json.document(out);
  } else if (comm.is_primary()) {
    fmt::print(
        "converted {} -> {}: {} item{}, {} tree lea{}, arrays now in {} format, compression "
        "{}, on {} rank{}\n",
        options.source, options.destination, src.items.size(), src.items.size() == 1 ? "" : "s",
        leaves, leaves == 1 ? "f" : "ves", options.format, compression_name, comm.size(),
        comm.size() == 1 ? "" : "s");
  }
  return kOk;
}

}  // namespace cairn_tool
