// Restore transforms: target leaves renamed from saved ones, resized leaves padded, leaves
// derived from several saved ones.
#include "storage/engine/restore_transforms.hpp"

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstring>

namespace cairn::storage {

SavedPaths::SavedPaths(const TreeRestoreOptions& options)
    : default_to_original_(options.default_to_original) {
  for (const LeafRename& rule : options.renames) {
    try {
      rules_.emplace_back(std::regex(rule.target, std::regex::ECMAScript), rule.saved);
    } catch (const std::regex_error& e) {
      throw InvalidArgument(fmt::format("renames: '{}' is not a valid regular expression: {}",
                                        rule.target, e.what()));
    }
  }
}

std::optional<std::string> SavedPaths::of(const std::string& target) const {
  for (const auto& [pattern, format] : rules_) {
    std::smatch match;
    if (!std::regex_match(target, match, pattern)) continue;
    std::string saved = match.format(format);
    if (auto problem = leaf_path_problem(saved)) {
      throw InvalidArgument(
          fmt::format("renames: target leaf '{}' maps to '{}', which is not a leaf path: {}",
                      target, saved, *problem));
    }
    return saved;
  }
  if (default_to_original_) return target;
  return std::nullopt;
}

void pad_target(const ArrayShard& target, MemoryKind memory, const Scalar& fill,
                const std::string& path) {
  if (target.local_bytes() == 0) return;
  if (memory == MemoryKind::cuda_device) {
    throw Unsupported(fmt::format(
        "leaf '{}': padding a resized leaf in device memory is not supported; restore it into "
        "host memory or into a target inside the saved shape",
        path));
  }
  const std::size_t elem = dtype_size(target.dtype);
  std::array<std::byte, 16> value{};
  convert(fill.dtype(), fill.data(), target.dtype, value.data(), 1,
          fmt::format("fill value of leaf '{}'", path));
  const auto count = static_cast<std::size_t>(target.local_volume());
  const auto fill_buffer = [&](std::byte* out) {
    for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * elem, value.data(), elem);
  };
  if (target.contiguous()) {
    fill_buffer(static_cast<std::byte*>(target.data));
    return;
  }
  std::vector<std::byte> filled(count * elem);
  fill_buffer(filled.data());
  unpack_strided(elem, filled.data(), target.box.extent, target.strides, target.data);
}

bool beyond(const Box& box, const std::vector<std::int64_t>& shape) noexcept {
  for (std::size_t d = 0; d < box.rank(); ++d) {
    if (box.extent[d] > 0 && box.offset[d] + box.extent[d] > shape[d]) return true;
  }
  return false;
}

namespace {

// The saved records of the sources of the derived leaf `path`, checked against its target
// `leaf`; empty when a source is missing and the target is optional. The same outcome on every
// rank (the index and the target's structure are).
std::vector<const LeafRecord*> sources_of(const std::filesystem::path& dir, const TreeIndex& index,
                                          const ArrayTree& target,
                                          const TreeRestoreOptions& options,
                                          const std::string& path, const DerivedLeaf& rule) {
  const Leaf* leaf = target.find(path);
  if (leaf == nullptr || leaf->kind() != LeafKind::array) {
    throw InvalidArgument(fmt::format(
        "derived_leaves names '{}', which is not an array leaf of the restore target", path));
  }
  if (rule.sources.empty() || !rule.fill) {
    throw InvalidArgument(
        fmt::format("derived leaf '{}': give its sources and a fill function", path));
  }
  const ArrayShard& shard = leaf->as_array();
  std::vector<const LeafRecord*> records;
  for (const std::string& source : rule.sources) {
    const LeafRecord* record = index.find(source);
    if (record == nullptr) {
      if (options.optional_leaves.contains(path)) return {};
      throw NotFound(source, fmt::format("leaf '{}', a source of the derived leaf '{}', is not in "
                                         "the checkpoint '{}'; mark '{}' optional to skip it",
                                         source, path, dir.string(), path));
    }
    if (record->kind != LeafKind::array || record->shape != shard.global_shape) {
      throw InvalidArgument(
          fmt::format("derived leaf '{}' has global shape {}, but its source '{}' in '{}' {}", path,
                      shape_to_string(shard.global_shape), source, dir.string(),
                      record->kind != LeafKind::array
                          ? fmt::format("is a {}, not an array", leaf_kind_name(record->kind))
                          : fmt::format("has {}", shape_to_string(record->shape))));
    }
    records.push_back(record);
  }
  return records;
}

}  // namespace

void check_derived(const std::filesystem::path& dir, const TreeIndex& index,
                   const ArrayTree& target, const TreeRestoreOptions& options) {
  for (const auto& [path, rule] : options.derived_leaves) {
    (void)sources_of(dir, index, target, options, path, rule);
  }
}

void restore_derived(const Comm& comm, const std::filesystem::path& dir, const TreeIndex& index,
                     const ArrayTree& target, const TreeRestoreOptions& options,
                     const RestoreSources& restore) {
  const TreeRestoreOptions plain{.verify_checksums = options.verify_checksums,
                                 .restore_concurrent_bytes = options.restore_concurrent_bytes};
  for (const auto& entry : options.derived_leaves) {
    // Named references, not a structured binding: the lambdas below capture them.
    const std::string& path = entry.first;
    const DerivedLeaf& rule = entry.second;
    const std::vector<const LeafRecord*> records =
        sources_of(dir, index, target, options, path, rule);
    if (records.empty()) continue;
    const ArrayShard& shard = target.at(path).as_array();
    ArrayTree sources;
    comm.run_all(fmt::format("restore_tree '{}': derived leaf '{}':", dir.string(), path), [&] {
      if (shard.memory == MemoryKind::cuda_device) {
        throw Unsupported(fmt::format(
            "derived leaf '{}': its target is device memory; derive it into host memory", path));
      }
      for (const LeafRecord* record : records) {
        sources.add_owned_array(record->path, record->dtype, record->shape, shard.box);
      }
    });
    restore(sources, plain);
    comm.run_all(fmt::format("restore_tree '{}': deriving leaf '{}':", dir.string(), path), [&] {
      std::vector<ArrayShard> in;
      in.reserve(records.size());
      for (const std::string& source : rule.sources) in.push_back(sources.at(source).as_array());
      rule.fill(in, shard);
    });
  }
}

}  // namespace cairn::storage
