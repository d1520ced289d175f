// Restore transforms: target leaves renamed from saved ones, resized leaves padded.
#include "storage/restore_transforms.hpp"

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

}  // namespace cairn::storage
