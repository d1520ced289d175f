#include "checkpoint/file_options.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace cairn::checkpoint {
namespace {

// Directories get search wherever read is granted, so that a readable tree can be walked.
mode_t directory_mode(mode_t mode) {
  if (mode & S_IRUSR) mode |= S_IXUSR;
  if (mode & S_IRGRP) mode |= S_IXGRP;
  if (mode & S_IROTH) mode |= S_IXOTH;
  return mode;
}

void apply_one(const std::filesystem::path& path, bool directory, const FileOptions& options,
               std::optional<gid_t> gid) {
  if (gid && ::lchown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
    throw IoError(path.string(), fmt::format("giving '{}' the group {} failed: {}", path.string(),
                                             options.group, std::strerror(errno)));
  }
  if (options.path_permission_mode) {
    auto mode = static_cast<mode_t>(*options.path_permission_mode) & 07777;
    if (directory) mode = directory_mode(mode);
    if (::chmod(path.c_str(), mode) != 0) {
      throw IoError(path.string(), fmt::format("setting the mode {:04o} of '{}' failed: {}", mode,
                                               path.string(), std::strerror(errno)));
    }
  }
}

}  // namespace

std::optional<gid_t> resolve_group(std::string_view group) {
  if (group.empty()) return std::nullopt;
  unsigned long number = 0;
  const auto [end, ec] = std::from_chars(group.data(), group.data() + group.size(), number);
  if (ec == std::errc() && end == group.data() + group.size()) return static_cast<gid_t>(number);
  const std::string name(group);
  std::vector<char> buffer(16384);
  struct group entry {};
  struct group* found = nullptr;
  const int error = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 || found == nullptr) {
    throw InvalidArgument(
        fmt::format("file_options.group: no group named '{}' on this system{}", name,
                    error != 0 ? fmt::format(" ({})", std::strerror(error)) : std::string()));
  }
  return found->gr_gid;
}

void apply_file_options(const std::filesystem::path& dir, const FileOptions& options) {
  const std::optional<gid_t> gid = resolve_group(options.group);
  if (!gid && !options.path_permission_mode) return;
  apply_one(dir, true, options, gid);
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const auto status = it->symlink_status(ec);
    if (ec) break;
    if (std::filesystem::is_symlink(status)) continue;
    apply_one(it->path(), std::filesystem::is_directory(status), options, gid);
  }
  if (ec) {
    throw IoError(dir.string(), fmt::format("listing '{}' to set its file modes failed: {}",
                                            dir.string(), ec.message()));
  }
}

}  // namespace cairn::checkpoint
