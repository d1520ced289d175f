// `cairn --version` (version.hpp).
#include "version.hpp"

#include <cairn/checkpoint_root.hpp>
#include <cairn/config.hpp>
#include <cairn/storage.hpp>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>
#include <vector>

namespace cairn_tool {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPlugin = "libH5Zcairn_zstd.so";

// The directory that holds this cairn's HDF5 zstd filter plugin: the install's, found from
// this program's own directory, else the build tree's; empty when neither holds it.
std::string zstd_plugin_dir() {
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (const fs::path self = fs::canonical("/proc/self/exe", ec); !ec) {
    candidates.push_back(self.parent_path() / CAIRN_TOOL_INSTALLED_PLUGIN_DIR);
  }
  candidates.emplace_back(CAIRN_TOOL_BUILD_PLUGIN_DIR);
  for (const fs::path& dir : candidates) {
    if (fs::is_regular_file(dir / kPlugin, ec)) return fs::weakly_canonical(dir, ec).string();
  }
  return {};
}

// The entries of a ':'-separated list of directories, without empty ones.
std::vector<std::string> split_dirs(std::string_view list) {
  std::vector<std::string> dirs;
  while (!list.empty()) {
    const std::size_t colon = list.find(':');
    if (const std::string_view dir = list.substr(0, colon); !dir.empty()) dirs.emplace_back(dir);
    list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
  }
  return dirs;
}

// The lines on the zstd filter plugin: where this cairn's copy is; which directories HDF5
// searches (HDF5_PLUGIN_PATH when set, which replaces them, else the default directories of
// the HDF5 libraries found at configure time: the one cairn links and the serial one h5py
// and h5dump use) and which of them hold a plugin; and the HDF5_PLUGIN_PATH to set when
// h5py and h5dump would not find it.
std::string plugin_text() {
  const std::string dir = zstd_plugin_dir();
  std::string text =
      "hdf5 zstd filter plugin: " + (dir.empty() ? "not found next to this program" : dir);
  const char* env = std::getenv("HDF5_PLUGIN_PATH");
  const bool from_env = env != nullptr && *env != '\0';
  const std::vector<std::string> searched =
      split_dirs(from_env ? env : CAIRN_TOOL_HDF5_DEFAULT_PLUGIN_DIRS);
  std::string listed;
  std::size_t holding = 0;
  for (const std::string& d : searched) {
    std::error_code ec;
    const bool holds = fs::is_regular_file(fs::path(d) / kPlugin, ec);
    holding += holds ? 1 : 0;
    listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", d,
                          holds ? "holds it" : "does not hold it");
  }
  text += fmt::format("\nhdf5 plugin directories searched{}: {}",
                      from_env ? " (HDF5_PLUGIN_PATH)" : " by default",
                      searched.empty() ? "unknown (not found when cairn was built)" : listed);
  // The default directories belong to different HDF5 libraries: each must hold it. One
  // directory of HDF5_PLUGIN_PATH suffices.
  const bool found = from_env ? holding > 0 : !searched.empty() && holding == searched.size();
  if (!found && !dir.empty()) {
    text += fmt::format("\nh5py and h5dump read zstd data.h5 files with HDF5_PLUGIN_PATH={}", dir);
  }
  return text;
}

}  // namespace

std::string version_text() {
  const auto versions = cairn::format_versions();
  std::string formats;
  for (const cairn::StorageFormatInfo& format : cairn::storage_formats()) {
    if (!format.available) continue;
    formats += (formats.empty() ? "" : ", ") + std::string(format.name);
  }
  std::string compression;
  if (CAIRN_HAVE_ZSTD) compression = "zstd";
  if (CAIRN_HAVE_ZFP) compression += compression.empty() ? "zfp" : ", zfp";
  std::string text = fmt::format(
      "cairn {}\non-disk format versions: cairn-step.json {}, cairn-tree.json {}, "
      "cairn-root.json {}\nstorage formats: {}\ncompression: {}",
      CAIRN_VERSION_STRING, versions.step, versions.tree, versions.root, formats,
      compression.empty() ? "none (built without zstd and zfp)" : compression);
  if (CAIRN_HAVE_ZSTD && CAIRN_HAVE_HDF5) text += "\n" + plugin_text();
  return text;
}

}  // namespace cairn_tool
