// cairn — modes and group of the files of a checkpoint (FileOptions) (internal).
#pragma once

#include <sys/types.h>

#include <cairn/checkpointer.hpp>

#include <filesystem>
#include <optional>
#include <string_view>

namespace cairn::checkpoint {

/// The group id of `group` (a name, or a number); std::nullopt when `group` is empty. Local.
/// Throws InvalidArgument when no such group exists.
std::optional<gid_t> resolve_group(std::string_view group);

/// Gives `dir`, and every file and directory under it, the mode and group of `options`
/// (symbolic links are left alone). Local. Throws InvalidArgument for an unknown group,
/// IoError naming the path that could not be changed.
void apply_file_options(const std::filesystem::path& dir, const FileOptions& options);

}  // namespace cairn::checkpoint
