// cairn — the COMMITTED marker as a manifest (internal): it lists the XXH3-64 of every JSON
// metadata file of the checkpoint, so that a damaged, truncated or swapped one is found on
// restore. Data files, and the sections of each tree's cairn-tree.bin, carry their own
// checksums in that metadata.
//
//   cairn checkpoint committed 2026-01-31T12:00:00Z
//   xxh3 0123456789abcdef cairn-step.json
//   xxh3 fedcba9876543210 state/cairn-tree.json
//   end
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::checkpoint {

/// One metadata file listed in the marker.
struct ManifestEntry {
  std::string path;  ///< relative to the checkpoint directory, '/'-separated
  std::uint64_t checksum = 0;
};

/// The metadata files of the checkpoint at `dir`, which its marker lists: every regular
/// `*.json` file under `dir`, '/'-separated and relative to it, sorted; with `only_items`,
/// those at the top of `dir` and under the named item directories. Not collective. Throws
/// IoError when `dir` cannot be listed.
[[nodiscard]] std::vector<std::string> metadata_files(
    const std::filesystem::path& dir, const std::optional<std::set<std::string>>& only_items = {});

/// The marker text for the checkpoint being committed in `tmp`: every metadata file
/// (metadata_files()) with its checksum. Not collective. Throws IoError.
[[nodiscard]] std::string make_commit_marker(const std::filesystem::path& tmp,
                                             std::string_view committed_at);

/// Parses marker text read from `source`. Not collective. Throws FormatError naming `source`
/// and the bad line (a truncated marker has no "end" line); never crashes on hostile input.
[[nodiscard]] std::vector<ManifestEntry> parse_commit_marker(std::string_view text,
                                                             const std::filesystem::path& source);

/// Checks the files the marker of `dir` lists against their checksums: all of them, or with
/// `only_items` the files at the top of `dir` and those under the named item directories (a
/// partial restore reads nothing else), and that it lists every metadata file among those.
/// Not collective. Throws FormatError naming the file that differs, is missing or is not
/// listed (or the marker).
void verify_commit_marker(const std::filesystem::path& dir,
                          const std::optional<std::set<std::string>>& only_items = {});

}  // namespace cairn::checkpoint
