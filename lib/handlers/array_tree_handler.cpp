// ArrayTreeHandler: array trees through the storage layer, streamed from staging buffers in
// async saves.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
#include <cstring>
#include <fmt/format.h>
#include <future>
#include <optional>
#include <vector>

#include "cuda/device_memory.hpp"
#include "handlers/piece_queue.hpp"
#include "storage/engine/tree_writer.hpp"

namespace cairn {
namespace {

template <class Args>
const Args& args_as(const CheckpointArgs& args, std::string_view handler) {
  if (const auto* typed = dynamic_cast<const Args*>(&args)) return *typed;
  throw InvalidArgument(fmt::format("the {} handler cannot take arguments for handler '{}'",
                                    handler, args.handler_type()));
}

/// `options` with the step and metrics of the save's context, when it has any (a
/// CheckpointManager's step), and its incremental base unless the options name their own;
/// else as the caller gave them.
TreeSaveOptions with_context(TreeSaveOptions options, const AsyncContext& context) {
  const SaveProvenance& provenance = context.provenance;
  if (provenance.step || !provenance.metrics.empty()) options.provenance = provenance;
  if (options.incremental_base.empty()) options.incremental_base = context.incremental_base;
  return options;
}

class ArrayTreePendingSave final : public PendingSave {
 public:
  ArrayTreePendingSave(const Comm& comm, const std::filesystem::path& dir,
                       const ArrayTreeSave& args, const AsyncContext& context)
      : tree_(args.tree_to_save()),
        context_(context),
        writer_(comm, dir, tree_, with_context(args.options, context)) {}

  void stage() override {
    const auto& arrays = writer_.arrays();
    std::vector<std::future<void>> pinned;
    try {
      for (std::size_t i = 0; i < arrays.size(); ++i) stage_one(i, pinned);
    } catch (...) {
      queue_.close();
      throw;
    }
    queue_.close();
    if (!context_.zero_copy) {
      for (auto& done : pinned) done.wait();
    }
  }

  // Writes are local in every format: they need no MPI, whichever thread makes them.
  void write(const Comm* /*comm*/) override {
    while (auto piece = queue_.pop()) {
      handlers::WrittenSignal signal(piece->written);
      writer_.write(piece->index, piece->data, piece->memory);
      piece->owner.reset();  // returns the staging bytes before the next piece
    }
    writer_.flush();
  }

  void finish(const Comm& comm) override { writer_.finish(comm); }
  std::uint64_t bytes_written() const noexcept override { return writer_.bytes_written(); }
  void fail(const std::exception& error) noexcept override { writer_.fail(error); }

 private:
  static void copy_out(const ArrayShard& shard, std::byte* out) {
    if (shard.contiguous()) {
      std::memcpy(out, shard.data, static_cast<std::size_t>(shard.local_bytes()));
    } else {
      pack_strided(dtype_size(shard.dtype), shard.data, shard.box.extent, shard.strides, out);
    }
  }

  // A staging buffer of `bytes`, or nullptr over the budget. When the budget is taken by
  // copies not written yet, acquire() waits for the writer to return some: start it first.
  std::shared_ptr<std::byte[]> acquire(std::size_t bytes) {
    StagingArea* staging = context_.staging;
    if (staging == nullptr) return nullptr;
    if (staging->in_use() + bytes > staging->capacity()) queue_.start();
    return staging->acquire(bytes);
  }

  // Whether the device can hold a copy of `bytes` and still keep an eighth of it (and 64 MiB)
  // free for the application.
  static bool device_has_room(std::size_t bytes) {
    const std::size_t free = cuda::free_device_memory();
    const std::size_t margin = bytes / 8 + (std::size_t{64} << 20);
    return free > margin && free - margin >= bytes;
  }

  // Stages device array `i` (this rank writes it): a device-to-device snapshot when asked and
  // there is room, else a copy into the host staging area, else (too large for the budget)
  // it is written from the caller's device memory like a large host shard.
  void stage_device(std::size_t i, std::vector<std::future<void>>& pinned) {
    const storage::ArrayJob& job = writer_.arrays()[i];
    const ArrayShard& shard = job.leaf->as_array();
    const auto bytes = static_cast<std::size_t>(job.bytes);
    const std::string what = fmt::format("snapshot of leaf '{}'", job.leaf->path());
    if (context_.device_staging && device_has_room(bytes)) {
      if (!stream_) stream_.emplace(what);
      auto copy = std::make_shared<cuda::DeviceBuffer>(bytes, what);
      cuda::copy_async(copy->data(), shard.data, bytes, cuda::Copy::device_to_device, *stream_,
                       what);
      stream_->synchronize(what);
      queue_.push(
          {.index = i, .data = copy->data(), .memory = MemoryKind::cuda_device, .owner = copy});
      return;
    }
    auto staged = acquire(bytes);
    if (staged) {
      writer_.copy_to_host(i, shard.data, staged.get());
      queue_.push({.index = i, .data = staged.get(), .owner = staged});
      return;
    }
    handlers::Piece piece{.index = i, .data = shard.data, .memory = MemoryKind::cuda_device};
    piece.written = std::make_shared<std::promise<void>>();
    pinned.push_back(piece.written->get_future());
    queue_.push(std::move(piece));
  }

  // Stages array `i` when this rank writes it: a copy in the staging area, or (over the
  // budget) the caller's own memory, which the caller waits for unless zero_copy.
  void stage_one(std::size_t i, std::vector<std::future<void>>& pinned) {
    const storage::ArrayJob& job = writer_.arrays()[i];
    if (!job.writes) return;
    if (job.memory == MemoryKind::cuda_device) {
      stage_device(i, pinned);
      return;
    }
    const ArrayShard& shard = job.leaf->as_array();
    const auto bytes = static_cast<std::size_t>(job.bytes);
    auto staged = acquire(bytes);
    if (staged) {
      copy_out(shard, staged.get());
      queue_.push({.index = i, .data = staged.get(), .owner = staged});
      return;
    }
    handlers::Piece piece{.index = i, .data = shard.data};
    if (!shard.contiguous()) {
      // A strided view is packed into its own buffer, outside the staging budget.
      std::shared_ptr<std::byte[]> packed(new std::byte[bytes]);
      copy_out(shard, packed.get());
      piece.data = packed.get();
      piece.owner = packed;
    } else {
      piece.written = std::make_shared<std::promise<void>>();
      pinned.push_back(piece.written->get_future());
    }
    queue_.push(std::move(piece));
  }

  ArrayTree tree_;
  AsyncContext context_;
  storage::TreeWriter writer_;
  handlers::PieceQueue queue_;
  std::optional<cuda::Stream> stream_;  // for device-to-device snapshots
};

}  // namespace

std::shared_ptr<const CheckpointArgs> ArrayTreeRestore::with_load_and_broadcast() const {
  auto copy = std::make_shared<ArrayTreeRestore>(*this);
  copy->options.load_and_broadcast = true;
  return copy;
}

std::unique_ptr<PendingSave> ArrayTreeHandler::async_save(const Comm& comm,
                                                          const std::filesystem::path& dir,
                                                          const CheckpointArgs& args,
                                                          const AsyncContext& context) {
  return std::make_unique<ArrayTreePendingSave>(comm, dir,
                                                args_as<ArrayTreeSave>(args, type_name()), context);
}

std::any ArrayTreeHandler::restore(const Comm& comm, const std::filesystem::path& dir,
                                   const CheckpointArgs* args) {
  if (args == nullptr) return restore_tree_as_saved(comm, dir);
  const auto& typed = args_as<ArrayTreeRestore>(*args, type_name());
  if (!typed.target) return restore_tree_as_saved(comm, dir, typed.as_saved);
  ArrayTree target = *typed.target;
  restore_tree(comm, dir, target, typed.options);
  return target;
}

boost::json::value ArrayTreeHandler::metadata(const Comm& comm, const std::filesystem::path& dir) {
  const SavedTreeInfo info = read_tree_info(comm, dir);
  boost::json::array leaves;
  std::uint64_t bytes = 0;
  for (const auto& leaf : info.leaves) {
    boost::json::object o;
    o["path"] = leaf.path;
    o["kind"] = leaf_kind_name(leaf.kind);
    if (leaf.kind == LeafKind::array) {
      o["format"] = storage_format_name(leaf.format);
      o["dtype"] = dtype_name(leaf.dtype);
      o["shape"] = boost::json::value_from(leaf.shape);
      o["shards"] = leaf.shard_count;
      o["bytes"] = leaf.bytes;
      bytes += leaf.bytes;
      if (leaf.referenced_bytes > 0) {  // an incremental save: bytes in earlier saves' files
        o["referenced_bytes"] = leaf.referenced_bytes;
      }
    } else if (leaf.kind == LeafKind::scalar) {
      o["dtype"] = dtype_name(leaf.dtype);
    }
    leaves.push_back(std::move(o));
  }
  boost::json::object out{{"handler", type_name()},
                          {"world_size", info.world_size},
                          {"bytes", bytes},
                          {"leaves", std::move(leaves)}};
  if (!info.empty_nodes.empty()) {
    boost::json::array empty;
    for (const auto& [path, kind] : info.empty_nodes) {
      empty.push_back(boost::json::object{{"path", path}, {"kind", empty_node_name(kind)}});
    }
    out["empty_nodes"] = std::move(empty);
  }
  return out;
}

}  // namespace cairn
