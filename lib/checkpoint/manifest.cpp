#include "checkpoint/manifest.hpp"

#include <algorithm>
#include <cairn/checkpointer.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

#include "base/durable_file.hpp"
#include "storage/stream/checksum.hpp"

namespace cairn::checkpoint {
namespace {

constexpr std::string_view kHeader = "cairn checkpoint committed ";
constexpr std::size_t kMaxPath = 4096;

std::uint64_t checksum_of_text(std::string_view text) {
  return storage::checksum_of(std::as_bytes(std::span(text.data(), text.size())));
}

// A listed path must stay inside the checkpoint directory.
bool valid_relative_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxPath || path.front() == '/' || path.back() == '/') {
    return false;
  }
  if (path.find('\0') != std::string_view::npos || path.find("//") != std::string_view::npos) {
    return false;
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    const auto part = path.substr(start, end - start);
    if (part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::vector<std::string> metadata_files(const std::filesystem::path& dir,
                                        const std::optional<std::set<std::string>>& only_items) {
  std::vector<std::string> files;
  std::error_code ec;
  const auto is_metadata = [](const std::filesystem::directory_entry& entry) {
    // Every JSON file. The binary part of a tree's index (cairn-tree.bin) is not listed: it
    // grows with ranks and leaves, and cairn-tree.json, listed here, records the checksum of
    // each of its sections, which a restore checks, each section on one rank.
    std::error_code fec;
    return entry.is_regular_file(fec) && entry.path().extension() == ".json";
  };
  const auto walk = [&](const std::filesystem::path& under) {
    for (std::filesystem::recursive_directory_iterator it(under, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (is_metadata(*it)) files.push_back(it->path().lexically_relative(dir).generic_string());
    }
  };
  if (!only_items) {
    walk(dir);
  } else {
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (is_metadata(*it)) files.push_back(it->path().filename().generic_string());
    }
    for (const auto& item : *only_items) {
      std::error_code iec;
      if (std::filesystem::is_directory(dir / item, iec)) walk(dir / item);
    }
  }
  if (ec) {
    throw IoError(dir.string(), fmt::format("listing '{}' failed: {}", dir.string(), ec.message()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string make_commit_marker(const std::filesystem::path& tmp, std::string_view committed_at) {
  const std::vector<std::string> files = metadata_files(tmp);
  std::string text = fmt::format("{}{}\n", kHeader, committed_at);
  for (const auto& file : files) {
    const auto sum = checksum_of_text(base::read_small_file(tmp / file));
    text += fmt::format("xxh3 {} {}\n", storage::checksum_to_hex(sum), file);
  }
  text += "end\n";
  return text;
}

std::vector<ManifestEntry> parse_commit_marker(std::string_view text,
                                               const std::filesystem::path& source) {
  auto bad = [&](std::size_t line, std::string_view problem) {
    return FormatError(source.string(), fmt::format("line {}", line),
                       fmt::format("commit marker '{}', line {}: {}; the marker is damaged, so "
                                   "the checkpoint cannot be trusted: restore an earlier one",
                                   source.string(), line, problem));
  };
  std::vector<ManifestEntry> entries;
  std::size_t number = 0;
  bool ended = false;
  while (!text.empty()) {
    ++number;
    const auto newline = text.find('\n');
    if (newline == std::string_view::npos) throw bad(number, "does not end with a newline");
    const auto line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (ended) throw bad(number, "follows the \"end\" line");
    if (number == 1) {
      if (!line.starts_with(kHeader)) throw bad(number, "is not the \"cairn checkpoint\" header");
      continue;
    }
    if (line == "end") {
      ended = true;
      continue;
    }
    // "xxh3 <16 hex digits> <path>"
    if (!line.starts_with("xxh3 ") || line.size() < 5 + 16 + 2 || line[5 + 16] != ' ') {
      throw bad(number, "is not \"xxh3 <checksum> <file>\" or \"end\"");
    }
    const auto sum = storage::checksum_from_hex(line.substr(5, 16));
    if (!sum) throw bad(number, "has a checksum that is not 16 lower-case hex digits");
    const auto path = line.substr(5 + 16 + 1);
    if (!valid_relative_path(path)) {
      throw bad(number, "names a file outside the checkpoint directory");
    }
    if (!path.ends_with(".json")) throw bad(number, "names a file that is not a metadata file");
    if (!entries.empty() && !(entries.back().path < path)) {
      throw bad(number, "lists files out of order or twice");
    }
    entries.push_back({.path = std::string(path), .checksum = *sum});
  }
  if (!ended) {
    throw bad(number + 1,
              number == 0 ? "the marker is empty" : "the \"end\" line is missing (truncated)");
  }
  return entries;
}

void verify_commit_marker(const std::filesystem::path& dir,
                          const std::optional<std::set<std::string>>& only_items) {
  const auto marker = dir / kCommitMarker;
  const auto in_scope = [&](std::string_view path) {
    const auto slash = path.find('/');
    return !only_items || slash == std::string_view::npos ||
           only_items->contains(std::string(path.substr(0, slash)));
  };
  const auto entries = parse_commit_marker(base::read_small_file(marker, 1 << 24), marker);
  // The marker lists every metadata file: one it does not list is not covered by a checksum,
  // so a marker that lost a line is damage, as is an extra file.
  std::set<std::string> listed;
  for (const auto& entry : entries) listed.insert(entry.path);
  for (const auto& file : metadata_files(dir, only_items)) {
    if (!listed.contains(file)) {
      throw FormatError(
          marker.string(), file,
          fmt::format("'{}' is not listed in the commit marker '{}', which must list every "
                      "metadata file of the checkpoint: the marker is damaged or the file was "
                      "added; restore an earlier checkpoint",
                      (dir / file).string(), marker.string()));
    }
  }
  for (const auto& entry : entries) {
    if (!in_scope(entry.path)) continue;
    const auto file = dir / entry.path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
      throw FormatError(file.string(), "missing",
                        fmt::format("'{}' is listed in '{}' but does not exist: the file was "
                                    "deleted or the marker is damaged; restore an earlier "
                                    "checkpoint",
                                    file.string(), marker.string()));
    }
    const auto sum = checksum_of_text(base::read_small_file(file));
    if (sum != entry.checksum) {
      throw FormatError(file.string(), "xxh3",
                        fmt::format("'{}' does not match the checksum recorded in '{}' ({} "
                                    "instead of {}): the file is damaged or was replaced; "
                                    "restore an earlier checkpoint",
                                    file.string(), marker.string(), storage::checksum_to_hex(sum),
                                    storage::checksum_to_hex(entry.checksum)));
    }
  }
}

}  // namespace cairn::checkpoint
