// restore_tree() and friends: read the index once, then each rank reads the saved shards that
// intersect its boxes (N->M), verifying checksums and casting dtypes when asked.
#include <boost/json.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "comm/log.hpp"
#include "cuda/device_leaf.hpp"
#include "cuda/staged_copy.hpp"
#include "storage/broadcast_leaves.hpp"
#include "storage/checksum.hpp"
#include "storage/index.hpp"
#include "storage/posix_format.hpp"
#if CAIRN_HAVE_HDF5
#include "storage/hdf5_format.hpp"
#endif

namespace cairn {
namespace json = boost::json;
using storage::LeafRecord;
using storage::ShardRecord;

namespace {

// The primary reads cairn-tree.json; every rank parses the same text, so every rank reaches
// the same verdict on a damaged file.
storage::TreeIndex load_index(const Comm& comm, const std::filesystem::path& dir) {
  const auto file = dir / storage::kTreeIndexFile;
  std::string text;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm.is_primary()) text = storage::read_small_file(file);
  });
  text = comm.broadcast(text);
  return storage::parse_index(text, file);
}

// Rethrows the error being handled (from reading a shard of `leaf`) with the leaf named in
// its message, keeping its type.
[[noreturn]] void rethrow_naming_leaf(const std::string& leaf) {
  const auto with_leaf = [&](const std::exception& e) {
    return fmt::format("{} (reading leaf '{}')", e.what(), leaf);
  };
  try {
    throw;
  } catch (const FormatError& e) {
    throw FormatError(e.path(), leaf, with_leaf(e));
  } catch (const NotFound& e) {
    throw NotFound(e.what_missing(), with_leaf(e));
  } catch (const IoError& e) {
    throw IoError(e.path(), with_leaf(e));
  }
}

// Reads saved shards (either format) into host buffers.
class ShardSource {
 public:
  ShardSource(const std::filesystem::path& dir, bool verify)
      : dir_(dir), posix_(dir), verify_(verify) {}

#if CAIRN_HAVE_HDF5
  void set_hdf5(storage::Hdf5Reader* reader) { hdf5_ = reader; }
#endif

  // Reads `box` (inside shard.box) of `shard` of `leaf` into `dst` (row-major of `box`). When
  // `box` is the whole shard and verification is on, checks the checksum.
  void read(const LeafRecord& leaf, const ShardRecord& shard, const Box& box, void* dst) {
    const std::size_t elem = dtype_size(leaf.dtype);
    const auto bytes = static_cast<std::uint64_t>(volume(box)) * elem;
    if (leaf.format == StorageFormat::posix) {
      // `box` is always a slab of the shard (full extents past the first dimension), so its
      // bytes are contiguous in the file.
      std::uint64_t first = 0;
      if (box.rank() > 0 && !is_empty(box)) {
        const auto strides = row_major_strides(shard.box.extent);
        first =
            static_cast<std::uint64_t>((box.offset[0] - shard.box.offset[0]) * strides[0]) * elem;
      }
      try {
        posix_.read(shard, first, bytes, dst);
      } catch (const Error&) {
        rethrow_naming_leaf(leaf.path);
      }
    } else {
#if CAIRN_HAVE_HDF5
      hdf5_->read(leaf.path, box, dst);
#else
      throw Unsupported(
          fmt::format("leaf '{}' in '{}' is stored in HDF5, which this build of "
                      "cairn cannot read (configure with CAIRN_USE_HDF5=ON)",
                      leaf.path, dir_.string()));
#endif
    }
    if (verify_ && box == shard.box) {
      const auto sum = storage::checksum_of({static_cast<const std::byte*>(dst), bytes});
      if (sum != shard.checksum) {
        const auto file = dir_ / shard.file;
        throw FormatError(
            file.string(), leaf.path,
            fmt::format("checksum mismatch in '{}' for leaf '{}' (shard of rank "
                        "{}, box {}): stored {}, computed {}. The file is "
                        "damaged; restore an earlier checkpoint",
                        file.string(), leaf.path, shard.rank, to_string(shard.box),
                        storage::checksum_to_hex(shard.checksum), storage::checksum_to_hex(sum)));
      }
    }
  }

  [[nodiscard]] bool verify() const { return verify_; }

 private:
  std::filesystem::path dir_;
  storage::PosixShardReader posix_;
  bool verify_;
#if CAIRN_HAVE_HDF5
  storage::Hdf5Reader* hdf5_ = nullptr;
#endif
};

// Places `region` of a row-major buffer `src` (dtype `from`, holding `src_box`) into the
// target shard, casting when the dtypes differ.
void place(DType from, const void* src, const Box& src_box, const ArrayShard& target,
           const Box& region, const std::string& path, std::vector<std::byte>& scratch) {
  if (from == target.dtype) {
    copy_region(dtype_size(from), src, src_box, target.data, target.box, region);
    return;
  }
  const auto n = static_cast<std::size_t>(volume(region));
  std::vector<std::byte> narrow(n * dtype_size(from));
  copy_region(dtype_size(from), src, src_box, narrow.data(), region, region);
  scratch.resize(n * dtype_size(target.dtype));
  convert(from, narrow.data(), target.dtype, scratch.data(), n, path);
  copy_region(dtype_size(target.dtype), scratch.data(), region, target.data, target.box, region);
}

void restore_array(const LeafRecord& leaf, const ArrayShard& target, ShardSource& source) {
  std::vector<std::byte> buffer;
  std::vector<std::byte> scratch;
  for (const ShardRecord& shard : leaf.shards) {
    const auto region = intersect(shard.box, target.box);
    if (!region || is_empty(*region)) continue;
    // Same box, same dtype, contiguous target: read straight into the caller's buffer.
    if (leaf.dtype == target.dtype && *region == shard.box && *region == target.box) {
      source.read(leaf, shard, shard.box, target.data);
      continue;
    }
    // What to read: the whole shard when verifying (the checksum covers it), otherwise the
    // slab of the shard's first dimension that spans the region.
    Box read_box = shard.box;
    if (!source.verify() && read_box.rank() > 0) {
      read_box.offset[0] = region->offset[0];
      read_box.extent[0] = region->extent[0];
    }
    buffer.resize(static_cast<std::size_t>(volume(read_box)) * dtype_size(leaf.dtype));
    source.read(leaf, shard, read_box, buffer.data());
    place(leaf.dtype, buffer.data(), read_box, target, *region, leaf.path, scratch);
  }
}

// Whether the saved shards cover all of `box` (not so for sparse saves).
bool covered(const LeafRecord& leaf, const Box& box) {
  std::int64_t found = 0;
  for (const ShardRecord& shard : leaf.shards) {
    if (const auto region = intersect(shard.box, box)) found += volume(*region);
  }
  return found >= volume(box);
}

// Restores into a target that is not a contiguous host buffer: the rank's box is assembled in
// a contiguous host buffer, which `load` first fills from the target when the checkpoint does
// not cover the whole box (parts no saved shard covers keep their contents); `store` then
// copies it into the target.
template <class Load, class Store>
void restore_through_host(const LeafRecord& leaf, const ArrayShard& target, ShardSource& source,
                          const Load& load, const Store& store) {
  const auto bytes = static_cast<std::size_t>(target.local_bytes());
  if (bytes == 0) return;
  std::unique_ptr<std::byte[]> staged(new std::byte[bytes]);
  if (!covered(leaf, target.box)) load(staged.get());
  ArrayShard host = target;
  host.memory = MemoryKind::host;
  host.strides.clear();
  host.data = staged.get();
  restore_array(leaf, host, source);
  store(staged.get());
}

// Restores into device memory, through pinned staging buffers.
void restore_device_array(const LeafRecord& leaf, const ArrayShard& target, ShardSource& source,
                          std::unique_ptr<cuda::StagedCopier>& copier) {
  const std::string what = fmt::format("leaf '{}'", leaf.path);
  const auto bytes = static_cast<std::size_t>(target.local_bytes());
  if (bytes == 0) return;
  if (!copier) copier = std::make_unique<cuda::StagedCopier>(std::size_t{8} << 20, what);
  restore_through_host(
      leaf, target, source,
      [&](std::byte* host) { copier->to_host(target.data, bytes, host, what); },
      [&](const std::byte* host) { copier->to_device(host, bytes, target.data, what); });
}

// Restores into a strided host view (ArrayShard::strides).
void restore_strided_array(const LeafRecord& leaf, const ArrayShard& target, ShardSource& source) {
  const std::size_t elem = dtype_size(target.dtype);
  restore_through_host(
      leaf, target, source,
      [&](std::byte* host) {
        pack_strided(elem, target.data, target.box.extent, target.strides, host);
      },
      [&](const std::byte* host) {
        unpack_strided(elem, host, target.box.extent, target.strides, target.data);
      });
}

// Checks that the saved leaf can fill the target leaf; the same verdict on every rank except
// for box problems, which are local (and reported through run_all).
void check_compatible(const LeafRecord& saved, const Leaf& target,
                      const TreeRestoreOptions& options, const std::filesystem::path& dir) {
  if (saved.kind != target.kind()) {
    throw InvalidArgument(fmt::format(
        "leaf '{}' in '{}' was saved as {}, but the restore target "
        "holds {}",
        saved.path, dir.string(), leaf_kind_name(saved.kind), leaf_kind_name(target.kind())));
  }
  if (saved.kind != LeafKind::array) return;
  const ArrayShard& shard = target.as_array();
  if (shard.global_shape != saved.shape) {
    throw InvalidArgument(
        fmt::format("leaf '{}' in '{}' has global shape {}, but the restore "
                    "target has {}",
                    saved.path, dir.string(), shape_to_string(saved.shape),
                    shape_to_string(shard.global_shape)));
  }
  if (shard.dtype != saved.dtype) {
    if (!options.allow_cast) {
      throw InvalidArgument(
          fmt::format("leaf '{}' in '{}' was saved as {}, but the restore target "
                      "is {}; pass allow_cast = true to convert",
                      saved.path, dir.string(), dtype_name(saved.dtype), dtype_name(shard.dtype)));
    }
    if (!cast_allowed(saved.dtype, shard.dtype)) {
      throw InvalidArgument(fmt::format("leaf '{}': cannot cast {} to {}", saved.path,
                                        dtype_name(saved.dtype), dtype_name(shard.dtype)));
    }
  }
  if (!shard.contiguous()) {
    for (std::size_t k = 0; k < shard.strides.size(); ++k) {
      if (shard.strides[k] == 0 && shard.box.extent[k] > 1) {
        throw InvalidArgument(
            fmt::format("leaf '{}': the restore target's stride of dimension {} is 0, so its "
                        "elements overlap; restore into a view whose elements are distinct",
                        saved.path, k));
      }
    }
  }
}

void restore_from_index(const Comm& comm, const std::filesystem::path& dir,
                        const storage::TreeIndex& index, ArrayTree& target,
                        const TreeRestoreOptions& options) {
  comm.agree({.operation = "restore_tree " + dir.filename().string(),
              .structure = target.structure_hash()});
  const std::vector<const Leaf*> wanted = target.leaves_under("");

  // Pair target leaves with saved leaves; the outcome is identical on every rank.
  std::vector<std::pair<const Leaf*, const LeafRecord*>> pairs;
  for (const Leaf* leaf : wanted) {
    const LeafRecord* saved = index.find(leaf->path());
    if (saved == nullptr) {
      if (options.optional_leaves.contains(leaf->path())) continue;
      throw NotFound(leaf->path(), fmt::format("leaf '{}' is not in the checkpoint '{}'; mark it "
                                               "optional to skip it",
                                               leaf->path(), dir.string()));
    }
    pairs.emplace_back(leaf, saved);
  }
  std::vector<MemoryKind> memory;  // of each pair's target (host for non-array leaves)
  comm.run_all(fmt::format("restore_tree '{}':", dir.string()), [&] {
    for (const auto& [leaf, saved] : pairs) {
      check_compatible(*saved, *leaf, options, dir);
      memory.push_back(
          saved->kind == LeafKind::array
              ? cuda::resolve_memory(leaf->as_array(), options.detect_device_memory, leaf->path())
              : MemoryKind::host);
    }
  });
  // Load and broadcast: the primary alone reads replicated leaves.
  std::vector<storage::BroadcastLeaf> broadcasts;
  std::vector<bool> read_here(pairs.size(), true);
  if (options.load_and_broadcast && comm.size() > 1) {
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const Leaf& leaf = *pairs[i].first;
      if (pairs[i].second->kind != LeafKind::array || !leaf.as_array().replicated) continue;
      broadcasts.push_back({.path = leaf.path(), .shard = &leaf.as_array(), .memory = memory[i]});
      read_here[i] = comm.is_primary();
    }
  }

  bool any_hdf5 = false;
  std::vector<const LeafRecord*> h5_records;
  for (const auto& [leaf, saved] : pairs) {
    if (saved->kind == LeafKind::array && saved->format == StorageFormat::hdf5) {
      any_hdf5 = true;
      h5_records.push_back(saved);
    }
  }

  ShardSource source(dir, options.verify_checksums);
  bool ok = true;
  std::string message;
  ErrorCode code = ErrorCode::internal;
  auto record_failure = [&](const std::exception& e) {
    if (!ok) return;
    ok = false;
    message = e.what();
    code = error_code_of(e);
  };
#if CAIRN_HAVE_HDF5
  std::optional<storage::Hdf5Reader> hdf5;
  if (any_hdf5) {
    std::vector<std::string_view> names;
    for (const auto* record : h5_records) names.push_back(record->path);
    const auto shown = std::min<std::size_t>(names.size(), 4);
    const auto leaves = fmt::format(
        "'{}'{}",
        fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), "', '"),
        names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : "");
    comm.run_all(fmt::format("restore_tree '{}': opening {} (leaves {}):", dir.string(),
                             storage::kHdf5File, leaves),
                 [&] {
                   hdf5.emplace(comm, dir / storage::kHdf5File);
                   hdf5->open(h5_records);
                 });
    source.set_hdf5(&*hdf5);
  }
#endif
  try {
    std::unique_ptr<cuda::StagedCopier> copier;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto& [leaf, saved] = pairs[i];
      if (saved->kind != LeafKind::array || !read_here[i]) continue;
      if (memory[i] == MemoryKind::cuda_device) {
        restore_device_array(*saved, leaf->as_array(), source, copier);
      } else if (!leaf->as_array().contiguous()) {
        restore_strided_array(*saved, leaf->as_array(), source);
      } else {
        restore_array(*saved, leaf->as_array(), source);
      }
    }
  } catch (const std::exception& e) {
    record_failure(e);
  }
#if CAIRN_HAVE_HDF5
  if (hdf5) {
    try {
      hdf5->close();
    } catch (const std::exception& e) {
      record_failure(e);
    }
  }
#else
  (void)any_hdf5;
#endif
  comm.all_ok(ok, fmt::format("restore_tree '{}': {}", dir.string(), message), code);
  storage::broadcast_leaves(comm, broadcasts);

  // Values: rebuild the tree with the saved scalars, strings and JSON in place.
  bool any_value = false;
  for (const auto& [leaf, saved] : pairs) any_value = any_value || saved->kind != LeafKind::array;
  if (!any_value) return;
  ArrayTree updated;
  for (const Leaf& leaf : target) {
    const LeafRecord* saved = index.find(leaf.path());
    const bool restored = saved != nullptr && saved->kind == leaf.kind();
    switch (leaf.kind()) {
      case LeafKind::array: updated.add_array(leaf.path(), leaf.as_array(), leaf.owner()); break;
      case LeafKind::scalar:
        updated.add_scalar(leaf.path(),
                           restored ? Scalar::from_json(saved->value, dir.string(), leaf.path())
                                    : leaf.as_scalar());
        break;
      case LeafKind::string:
        updated.add_string(leaf.path(),
                           restored ? json::value_to<std::string>(saved->value) : leaf.as_string());
        break;
      case LeafKind::json:
        updated.add_json(leaf.path(), restored ? saved->value : leaf.as_json());
        break;
    }
  }
  target = std::move(updated);
}

bool selected(const std::vector<std::string>& select, const std::string& path) {
  if (select.empty()) return true;
  for (const auto& s : select) {
    if (path == s || (path.size() > s.size() && path.starts_with(s) && path[s.size()] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace

SavedTreeInfo read_tree_info(const Comm& comm, const std::filesystem::path& dir) {
  const auto index = load_index(comm, dir);
  SavedTreeInfo info;
  info.world_size = index.world_size;
  for (const auto& leaf : index.leaves) {
    SavedLeafInfo out;
    out.path = leaf.path;
    out.kind = leaf.kind;
    out.format = leaf.format;
    out.dtype = leaf.dtype;
    out.shape = leaf.shape;
    out.replicated = leaf.replicated;
    out.fortran_order = leaf.fortran_order;
    out.shard_count = leaf.shards.size();
    for (const auto& s : leaf.shards) out.bytes += s.bytes;
    info.leaves.push_back(std::move(out));
  }
  return info;
}

void restore_tree(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                  const TreeRestoreOptions& options) {
  restore_from_index(comm, dir, load_index(comm, dir), target, options);
}

ArrayTree restore_tree_as_saved(const Comm& comm, const std::filesystem::path& dir,
                                const AsSavedOptions& options) {
  const auto index = load_index(comm, dir);
  ArrayTree target;
  for (const auto& leaf : index.leaves) {
    if (!selected(options.select, leaf.path)) continue;
    switch (leaf.kind) {
      case LeafKind::array: {
        Box box;  // empty: the whole array (also for 0-d arrays, which have no empty box)
        if (!options.whole_arrays && !leaf.replicated && !leaf.shape.empty()) {
          box = Box{std::vector<std::int64_t>(leaf.shape.size(), 0),
                    std::vector<std::int64_t>(leaf.shape.size(), 0)};
          for (const auto& shard : leaf.shards) {
            if (shard.rank == comm.rank()) box = shard.box;
          }
        }
        target.add_owned_array(leaf.path, leaf.dtype, leaf.shape, box, leaf.replicated,
                               leaf.fortran_order);
        break;
      }
      case LeafKind::scalar:
        target.add_scalar(leaf.path, Scalar::from_json(leaf.value, dir.string(), leaf.path));
        break;
      case LeafKind::string:
        target.add_string(leaf.path, json::value_to<std::string>(leaf.value));
        break;
      case LeafKind::json: target.add_json(leaf.path, leaf.value); break;
    }
  }
  restore_from_index(comm, dir, index, target, {.verify_checksums = options.verify_checksums});
  return target;
}

}  // namespace cairn
