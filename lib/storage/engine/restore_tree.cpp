// restore_tree() and friends: read the index once, then each rank reads the parts of the saved
// shards that intersect its boxes (N->M): the runs of each intersection in the shard's stream,
// widened to whole checksum chunks when verifying, straight into the target where the pieces
// allow it, through a window of at most half of restore_concurrent_bytes otherwise; device
// and strided targets are assembled run by run in the other half.
#include <boost/json.hpp>
#include <cairn/storage.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "base/durable_file.hpp"
#include "base/first_error.hpp"
#include "base/log.hpp"
#include "base/posix_file.hpp"
#include "cuda/device_leaf.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/staged_copy.hpp"
#include "storage/engine/broadcast_leaves.hpp"
#include "storage/engine/phase_times.hpp"
#include "storage/engine/restore_transforms.hpp"
#include "storage/engine/restore_tree.hpp"
#include "storage/engine/restore_values.hpp"
#include "storage/engine/shard_source.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/stream/shard_stream.hpp"

namespace cairn::storage {
namespace json = boost::json;

namespace {

// The primary reads cairn-tree.json; every rank parses the same text, so every rank reaches the
// same verdict on a damaged file. Shard records of cairn-tree.bin are read later, as needed.
storage::TreeIndex load_index(const Comm& comm, const std::filesystem::path& dir) {
  const auto file = dir / storage::kTreeIndexFile;
  std::string text;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (!comm.is_primary()) return;
    base::require_no_link_out(dir);  // the index and the data files it names
    text = base::read_small_file(file);
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
    if (e.field() == leaf) throw;  // names the leaf already
    throw FormatError(e.path(), leaf, with_leaf(e));
  } catch (const NotFound& e) {
    throw NotFound(e.what_missing(), with_leaf(e));
  } catch (const IoError& e) {
    throw IoError(e.path(), with_leaf(e));
  }
}

// Elements cast at a time when a restore converts dtypes: the cast's scratch stays small,
// whatever the window, so that a cast restore keeps to restore_concurrent_bytes.
constexpr std::size_t kCastBlockBytes = std::size_t{64} << 10;

// Places `region` of a row-major buffer `src` (dtype `from`, holding exactly `region`) into
// the host target `target`, casting block by block through `scratch` when the dtypes differ.
void place(DType from, const std::byte* src, const ArrayShard& target, const Box& region,
           const std::string& path, std::vector<std::byte>& scratch) {
  if (from == target.dtype) {
    copy_region(dtype_size(from), src, region, target.data, target.box, region);
    return;
  }
  const std::size_t from_size = dtype_size(from);
  const std::size_t to_size = dtype_size(target.dtype);
  const auto n = volume(region);
  const auto block = static_cast<std::int64_t>(
      std::max<std::size_t>(kCastBlockBytes / std::max(from_size, to_size), 1));
  scratch.resize(static_cast<std::size_t>(std::min(block, n)) * to_size);
  for (std::int64_t first = 0; first < n; first += block) {
    const std::int64_t count = std::min(block, n - first);
    convert(from, src + static_cast<std::size_t>(first) * from_size, target.dtype, scratch.data(),
            static_cast<std::size_t>(count), path);
    const std::byte* at = scratch.data();
    for (const Box& piece : storage::split_stream_range(region, first, count)) {
      copy_region(to_size, at, piece, target.data, target.box, piece);
      at += static_cast<std::size_t>(volume(piece)) * to_size;
    }
  }
}

// Windows closer than this are read as one: reading the gap costs less than another request.
constexpr std::uint64_t kMergeGapBytes = std::uint64_t{64} << 10;

// A target whose pieces are at least this large on average is read into directly, piece by
// piece (readv); below it, reading a window and copying out costs less than the many small
// buffers of a scattered read.
constexpr std::uint64_t kScatterMinPieceBytes = std::uint64_t{4} << 10;
// The most pieces listed for one scattered read, as many as one readv takes (IOV_MAX on
// Linux): larger regions are read in slabs of at most this many pieces, each at least 4 MiB.
constexpr std::int64_t kScatterMaxPieces = 1024;

// Reads `region` of `shard` of `leaf` straight into the contiguous host target `target` when
// that can be done without the window buffer: the region is one run of the shard's stream (for
// example whole rows of it), the dtypes match, and the region's pieces in the target are large
// enough. When verifying, the bytes of the first and last checksum chunks outside the region
// are read into `edges` to be hashed with the rest. Returns whether it read the region.
bool read_into_target(const LeafRecord& leaf, const ShardRecord& shard, const Box& region,
                      const ArrayShard& target, storage::ShardSource& source,
                      std::vector<std::byte>& edges) {
  if (leaf.dtype != target.dtype || storage::stream_run_count(shard.box, region) != 1) {
    return false;
  }
  const std::int64_t count = storage::stream_run_count(target.box, region);
  const std::uint64_t elem = dtype_size(leaf.dtype);
  const auto bytes = static_cast<std::uint64_t>(volume(region)) * elem;
  if (count > 1 && bytes / static_cast<std::uint64_t>(count) < kScatterMinPieceBytes) return false;
  if (count > kScatterMaxPieces) {
    // Slabs along the first dimension the region spans (dimensions before it have one index):
    // each is still one run of the shard's stream, with proportionally fewer pieces.
    std::size_t d = 0;
    while (region.extent[d] == 1) ++d;
    const std::int64_t step =
        std::max<std::int64_t>(region.extent[d] * kScatterMaxPieces / count, 1);
    for (std::int64_t at = 0; at < region.extent[d]; at += step) {
      Box slab = region;
      slab.offset[d] += at;
      slab.extent[d] = std::min(step, region.extent[d] - at);
      read_into_target(leaf, shard, slab, target, source, edges);
    }
    return true;
  }
  const std::vector<storage::StreamRun> in_shard = storage::stream_runs(shard.box, region);
  const std::vector<storage::StreamRun> in_target = storage::stream_runs(target.box, region);

  const std::uint64_t begin = static_cast<std::uint64_t>(in_shard[0].begin) * elem;
  const std::uint64_t end = static_cast<std::uint64_t>(in_shard[0].end) * elem;
  const std::uint64_t chunk = source.verify() ? leaf.chunk_bytes_of(shard) : elem;
  const std::uint64_t first = begin / chunk * chunk;
  const std::uint64_t last = std::min((end + chunk - 1) / chunk * chunk, shard.bytes);
  edges.resize(static_cast<std::size_t>((begin - first) + (last - end)));
  // The region's pieces in the target follow its row-major order, as its run in the shard does.
  std::vector<std::span<std::byte>> pieces;
  pieces.reserve(in_target.size() + 2);
  if (begin > first) pieces.emplace_back(edges.data(), static_cast<std::size_t>(begin - first));
  auto* out = static_cast<std::byte*>(target.data);
  for (const storage::StreamRun& run : in_target) {
    pieces.emplace_back(out + static_cast<std::size_t>(run.begin) * elem,
                        static_cast<std::size_t>(run.end - run.begin) * elem);
  }
  if (last > end) {
    pieces.emplace_back(edges.data() + (begin - first), static_cast<std::size_t>(last - end));
  }
  source.read_range(leaf, shard, first, pieces);
  return true;
}

// Reads `region` of `shard` of `leaf` into the contiguous host target `target`: straight into
// it where read_into_target() can; otherwise only the stream runs of the region are read
// (whole checksum chunks when verifying), through the source's window buffer, and copied out.
void restore_region(const LeafRecord& leaf, const ShardRecord& shard, const Box& region,
                    const ArrayShard& target, storage::ShardSource& source,
                    std::vector<std::byte>& scratch) {
  if (read_into_target(leaf, shard, region, target, source, scratch)) return;
  const std::size_t elem = dtype_size(leaf.dtype);
  const std::vector<storage::StreamRun> runs = storage::stream_runs(shard.box, region);
  const std::uint64_t chunk = source.verify() ? leaf.chunk_bytes_of(shard) : elem;
  const auto aligned_begin = [&](const storage::StreamRun& r) {
    return static_cast<std::uint64_t>(r.begin) * elem / chunk * chunk;
  };
  const auto aligned_end = [&](const storage::StreamRun& r) {
    return std::min((static_cast<std::uint64_t>(r.end) * elem + chunk - 1) / chunk * chunk,
                    shard.bytes);
  };
  // Hands the part of run `r` that lies in the window to the target.
  const auto copy_out = [&](const storage::StreamRun& r, std::uint64_t first,
                            std::span<const std::byte> data) {
    const auto window_begin = static_cast<std::int64_t>(first / elem);
    const auto window_end = static_cast<std::int64_t>((first + data.size()) / elem);
    const std::int64_t lo = std::max(r.begin, window_begin);
    const std::int64_t hi = std::min(r.end, window_end);
    if (lo >= hi) return;
    const std::byte* at = data.data() + static_cast<std::size_t>(lo - window_begin) * elem;
    if (lo == r.begin && hi == r.end) {
      place(leaf.dtype, at, target, r.part, leaf.path, scratch);
      return;
    }
    for (const Box& piece : storage::split_stream_range(shard.box, lo, hi - lo)) {
      place(leaf.dtype, at, target, piece, leaf.path, scratch);
      at += static_cast<std::size_t>(volume(piece)) * elem;
    }
  };
  // Consecutive runs whose byte ranges are close are read as one group, window by window.
  for (std::size_t i = 0; i < runs.size();) {
    const std::uint64_t begin = aligned_begin(runs[i]);
    std::uint64_t end = aligned_end(runs[i]);
    std::size_t j = i + 1;
    while (j < runs.size() && aligned_begin(runs[j]) <= end + kMergeGapBytes) {
      end = std::max(end, aligned_end(runs[j]));
      ++j;
    }
    source.for_each_window(leaf, shard, begin, end,
                           [&](std::uint64_t first, std::span<const std::byte> data) {
                             for (std::size_t k = i; k < j; ++k) copy_out(runs[k], first, data);
                           });
    i = j;
  }
}

// Restores every saved shard of `leaf` that intersects the contiguous host target `target`.
void restore_array(const LeafRecord& leaf, const ArrayShard& target, storage::ShardSource& source,
                   std::vector<std::byte>& scratch) {
  for (const ShardRecord& shard : leaf.shards) {
    const auto region = intersect(shard.box, target.box);
    if (!region || is_empty(*region)) continue;
    try {
      restore_region(leaf, shard, *region, target, source, scratch);
    } catch (const Error&) {
      rethrow_naming_leaf(leaf.path);
    }
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

// Restores into a target that is not a contiguous host buffer, run by run: each run of the
// target's row-major order (at most `run_bytes`) is assembled in a host buffer, which `load`
// first fills from the target when the checkpoint does not cover the run (parts no saved
// shard covers keep their contents); `store` then copies it into the target. `load` and
// `store` take the run, its first element in the target's row-major order and the buffer.
template <class Load, class Store>
void restore_through_host(const LeafRecord& leaf, const ArrayShard& target,
                          storage::ShardSource& source, std::size_t run_bytes,
                          std::vector<std::byte>& scratch, const Load& load, const Store& store) {
  if (target.local_bytes() == 0) return;
  const std::size_t elem = dtype_size(target.dtype);
  const auto run_elements = static_cast<std::int64_t>(std::max<std::size_t>(run_bytes / elem, 1));
  const std::vector<std::int64_t> strides = row_major_strides(target.box.extent);
  std::vector<std::byte> staged;
  for (const Box& run : split_into_runs(target.box, run_elements)) {
    std::int64_t position = 0;
    for (std::size_t d = 0; d < run.rank(); ++d) {
      position += (run.offset[d] - target.box.offset[d]) * strides[d];
    }
    staged.resize(static_cast<std::size_t>(volume(run)) * elem);
    if (!covered(leaf, run)) load(run, position, staged.data());
    ArrayShard host = target;
    host.memory = MemoryKind::host;
    host.strides.clear();
    host.box = run;
    host.data = staged.data();
    restore_array(leaf, host, source, scratch);
    store(run, position, staged.data());
  }
}

// Restores into device memory, through pinned staging buffers.
void restore_device_array(const LeafRecord& leaf, const ArrayShard& target,
                          storage::ShardSource& source, std::size_t run_bytes,
                          std::vector<std::byte>& scratch,
                          std::unique_ptr<cuda::StagedCopier>& copier) {
  const std::string what = fmt::format("leaf '{}'", leaf.path);
  if (target.local_bytes() == 0) return;
  const std::size_t elem = dtype_size(target.dtype);
  if (!copier)
    copier = std::make_unique<cuda::StagedCopier>(std::max<std::size_t>(run_bytes / 2, 4096), what);
  auto* device = static_cast<std::byte*>(target.data);
  restore_through_host(
      leaf, target, source, run_bytes, scratch,
      [&](const Box& run, std::int64_t at, std::byte* host) {
        copier->to_host(device + static_cast<std::size_t>(at) * elem,
                        static_cast<std::size_t>(volume(run)) * elem, host, what);
      },
      [&](const Box& run, std::int64_t at, const std::byte* host) {
        copier->to_device(host, static_cast<std::size_t>(volume(run)) * elem,
                          device + static_cast<std::size_t>(at) * elem, what);
      });
}

// Restores into a strided host view (ArrayShard::strides).
void restore_strided_array(const LeafRecord& leaf, const ArrayShard& target,
                           storage::ShardSource& source, std::size_t run_bytes,
                           std::vector<std::byte>& scratch) {
  const std::size_t elem = dtype_size(target.dtype);
  // The view's address of the first element of `run`.
  const auto origin = [&](const Box& run) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < run.rank(); ++d) {
      offset += (run.offset[d] - target.box.offset[d]) * target.strides[d];
    }
    return static_cast<std::byte*>(target.data) + offset * static_cast<std::int64_t>(elem);
  };
  restore_through_host(
      leaf, target, source, run_bytes, scratch,
      [&](const Box& run, std::int64_t, std::byte* host) {
        pack_strided(elem, origin(run), run.extent, target.strides, host);
      },
      [&](const Box& run, std::int64_t, const std::byte* host) {
        unpack_strided(elem, host, run.extent, target.strides, origin(run));
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
    const bool resizable = options.resize_leaves.contains(target.path());
    if (!resizable || shard.global_shape.size() != saved.shape.size()) {
      throw InvalidArgument(fmt::format(
          "leaf '{}' in '{}' has global shape {}, but the restore target has {}{}", saved.path,
          dir.string(), shape_to_string(saved.shape), shape_to_string(shard.global_shape),
          resizable ? " (a resized leaf keeps its number of dimensions)"
                    : "; list the leaf in resize_leaves to pad or truncate it"));
    }
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

using LeafPairs = std::vector<std::pair<const Leaf*, const LeafRecord*>>;

// Pairs target leaves with saved leaves (the same on every rank); NotFound for a missing one.
LeafPairs pair_with_saved(const std::filesystem::path& dir, const storage::TreeIndex& index,
                          const std::vector<const Leaf*>& wanted, const TreeRestoreOptions& options,
                          SavedOf& saved_of) {
  const storage::SavedPaths saved_paths(options);
  LeafPairs pairs;
  for (const Leaf* leaf : wanted) {
    if (options.derived_leaves.contains(leaf->path())) continue;  // restore_derived()'s
    const auto saved_path = saved_paths.of(leaf->path());
    const LeafRecord* saved = saved_path ? index.find(*saved_path) : nullptr;
    if (saved == nullptr) {
      if (options.optional_leaves.contains(leaf->path())) continue;
      const std::string from =
          !saved_path ? std::string(" (no rename rule matches it and default_to_original is off)")
          : *saved_path != leaf->path() ? fmt::format(" (renamed from '{}')", *saved_path)
                                        : std::string();
      throw NotFound(leaf->path(),
                     fmt::format("leaf '{}'{} is not in the checkpoint '{}'; mark it optional "
                                 "to skip it",
                                 saved_path.value_or(leaf->path()), from, dir.string()));
    }
    pairs.emplace_back(leaf, saved);
    saved_of.emplace(leaf->path(), saved);
  }
  return pairs;
}

// Collective: reads the saved arrays into the targets marked in read_here; agrees on failure.
void read_array_leaves(const Comm& comm, const std::filesystem::path& dir, const LeafPairs& pairs,
                       const std::vector<MemoryKind>& memory, const std::vector<bool>& read_here,
                       const TreeRestoreOptions& options) {
  std::vector<const LeafRecord*> arrays;  // the saved arrays read, the same on every rank
  for (const auto& [leaf, saved] : pairs) {
    if (saved->kind == LeafKind::array) arrays.push_back(saved);
  }
  const std::size_t buffer_bytes = std::max<std::size_t>(options.restore_concurrent_bytes, 8192);
  // Half of the buffer is the read window, half the staging of device and strided targets.
  storage::ShardSource source(comm, dir, options.verify_checksums, buffer_bytes / 2);
  if (!arrays.empty()) {
    std::vector<std::string_view> names;
    for (const auto* record : arrays) names.push_back(record->path);
    const auto shown = std::min<std::size_t>(names.size(), 4);
    const auto leaves = fmt::format(
        "'{}'{}",
        fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), "', '"),
        names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : "");
    comm.run_all(
        fmt::format("restore_tree '{}': opening the data of leaves {}:", dir.string(), leaves),
        [&] { source.open(arrays); });
  }
  base::FirstError failure;
  try {
    std::unique_ptr<cuda::StagedCopier> copier;
    std::vector<std::byte> scratch;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto& [leaf, saved] = pairs[i];
      if (saved->kind != LeafKind::array || !read_here[i]) continue;
      if (memory[i] == MemoryKind::cuda_device) {
        restore_device_array(*saved, leaf->as_array(), source, buffer_bytes / 2, scratch, copier);
      } else if (!leaf->as_array().contiguous()) {
        restore_strided_array(*saved, leaf->as_array(), source, buffer_bytes / 2, scratch);
      } else {
        restore_array(*saved, leaf->as_array(), source, scratch);
      }
    }
  } catch (const std::exception& e) {
    failure.record(e);
  }
  try {
    source.close();
  } catch (const std::exception& e) {
    failure.record(e);
  }
  failure.report(comm, fmt::format("restore_tree '{}': ", dir.string()));
}

// With `phases`, ends its phases "plan" (agreement, pairing, the index's sections), "read"
// (the arrays) and "values" (broadcasts, scalars, strings and JSON).
void restore_from_index(const Comm& comm, const std::filesystem::path& dir,
                        const storage::TreeIndex& index, ArrayTree& target,
                        const TreeRestoreOptions& options, storage::PhaseTimes* phases = nullptr) {
  const auto lap = [&](std::string_view phase) {
    if (phases != nullptr) phases->lap(phase);
  };
  comm.agree({.operation = "restore_tree " + dir.filename().string(),
              .structure = target.structure_hash()});

  SavedOf saved_of;
  const LeafPairs pairs = pair_with_saved(dir, index, target.leaves_under(""), options, saved_of);
  std::vector<MemoryKind> memory;  // of each pair's target (host for non-array leaves)
  comm.run_all(fmt::format("restore_tree '{}':", dir.string()), [&] {
    for (const auto& [leaf, saved] : pairs) {
      check_compatible(*saved, *leaf, options, dir);
      memory.push_back(
          saved->kind == LeafKind::array
              ? cuda::resolve_memory(leaf->as_array(), options.detect_device_memory, leaf->path())
              : MemoryKind::host);
      if (saved->kind == LeafKind::array && storage::beyond(leaf->as_array().box, saved->shape)) {
        storage::pad_target(leaf->as_array(), memory.back(), options.resize_leaves.at(leaf->path()),
                            leaf->path());
      }
    }
    // The caller's device work queued before the restore (kernels still using the targets)
    // finishes before cairn's copies write them.
    if (std::find(memory.begin(), memory.end(), MemoryKind::cuda_device) != memory.end()) {
      cuda::synchronize_device(
          fmt::format("restore_tree '{}': waiting for the device", dir.string()));
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
  // An index of version 4 or later: each rank reads the records of the shards that meet what
  // it reads and checks its share of the read leaves' sections (each byte once, in the same
  // agreement).
  LeafPairs local = pairs;
  storage::IndexSections sections(dir, index);
  comm.run_all(fmt::format("restore_tree '{}': reading the index:", dir.string()), [&] {
    std::vector<const LeafRecord*> saved;
    for (const auto& pair : pairs) saved.push_back(pair.second);
    sections.check_share(saved, comm.rank(), comm.size());
    for (std::size_t i = 0; i < local.size(); ++i) {
      if (!local[i].second->section || !read_here[i]) continue;
      local[i].second = &sections.part_of(*local[i].second, local[i].first->as_array().box);
    }
  });
  lap("plan");
  read_array_leaves(comm, dir, local, memory, read_here, options);
  lap("read");
  storage::broadcast_leaves(comm, broadcasts);
  const auto is_value = [](const auto& pair) { return pair.second->kind != LeafKind::array; };
  if (std::ranges::any_of(pairs, is_value)) restore_values(dir, saved_of, target);
  lap("values");
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
  info.empty_nodes = index.empty_nodes;
  for (const auto& leaf : index.leaves) info.leaves.push_back(storage::leaf_info(leaf));
  return info;
}

void restore_tree(const Comm& comm, const std::filesystem::path& dir, ArrayTree& target,
                  const TreeRestoreOptions& options) {
  storage::PhaseTimes phases;
  const storage::TreeIndex index = load_index(comm, dir);
  storage::check_derived(dir, index, target, options);
  phases.lap("index");
  restore_from_index(comm, dir, index, target, options, &phases);
  base::log::info("storage.restore_phases", "dir=\"{}\" {}", dir.string(), phases.text());
  if (options.derived_leaves.empty()) return;
  storage::restore_derived(comm, dir, index, target, options,
                           [&](ArrayTree& sources, const TreeRestoreOptions& plain) {
                             restore_from_index(comm, dir, index, sources, plain);
                           });
}

ArrayTree restore_tree_as_saved(const Comm& comm, const std::filesystem::path& dir,
                                const AsSavedOptions& options) {
  const auto index = load_index(comm, dir);
  storage::IndexSections sections(dir, index);
  ArrayTree target;
  // The buffers are sized by the index, whose records each rank reads: a rank that cannot read
  // them or allocate its part says so on every rank before the collective reads begin.
  comm.run_all(fmt::format("restoring '{}' as saved:", dir.string()), [&] {
    for (const auto& leaf : index.leaves) {
      if (!selected(options.select, leaf.path)) continue;
      switch (leaf.kind) {
        case LeafKind::array: {
          Box box;  // empty: the whole array (also for 0-d arrays, which have no empty box)
          if (!options.whole_arrays && !leaf.replicated && !leaf.shape.empty()) {
            box = Box{std::vector<std::int64_t>(leaf.shape.size(), 0),
                      std::vector<std::int64_t>(leaf.shape.size(), 0)};
            for (const auto& shard : sections.part_of(leaf, whole_box(leaf.shape)).shards) {
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
    for (const auto& [path, kind] : index.empty_nodes) {
      if (selected(options.select, path)) target.add_empty(path, kind);
    }
  });
  restore_from_index(comm, dir, index, target, {.verify_checksums = options.verify_checksums});
  return target;
}

}  // namespace cairn::storage
