#include "manager/levels/step_archive.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cairn/error.hpp>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "base/packed.hpp"
#include "base/posix_file.hpp"
#include "manager/levels/file_map.hpp"

namespace cairn::levels {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

constexpr std::string_view kMagic = "CAIRNARC";
constexpr std::uint64_t kVersion = 1;
// The fewest bytes one file takes in an archive: path length, size, checksum.
constexpr std::uint64_t kMinEntryBytes = 1 + 1 + sizeof(std::uint64_t);
constexpr std::string_view kTmpSuffix = ".cairn-tmp";

std::span<const std::byte> magic_bytes() { return std::as_bytes(std::span(kMagic)); }

[[noreturn]] void refuse(const fs::path& path, std::string_view what) {
  throw IoError(path.string(), fmt::format("'{}' is {}: the node-local part of a step holds "
                                           "regular files only",
                                           path.string(), what));
}

// The regular files under `dir` as (path relative to `dir`, full path), sorted by the former.
std::vector<std::pair<std::string, fs::path>> regular_files(const fs::path& dir) {
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) {
    throw NotFound(dir.string(), fmt::format("directory '{}' does not exist", dir.string()));
  }
  if (!fs::is_directory(status)) refuse(dir, "not a directory");
  std::vector<std::pair<std::string, fs::path>> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto entry = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(entry)) continue;
    if (fs::is_symlink(entry)) refuse(it->path(), "a symbolic link");
    if (!fs::is_regular_file(entry)) refuse(it->path(), "a special file");
    files.emplace_back(it->path().lexically_relative(dir).generic_string(), it->path());
  }
  if (ec) {
    throw IoError(dir.string(),
                  fmt::format("listing '{}' to pack it failed: {}", dir.string(), ec.message()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What is wrong with `path` as the relative path of a file in an archive, or nullopt.
std::optional<std::string> path_problem(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string_view::npos) return "a path with a NUL byte";
  if (path.front() == '/') return fmt::format("the absolute path '{}'", path);
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(path.find('/', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") {
      return fmt::format("the path '{}', which has an empty, '.' or '..' part", path);
    }
    if (end == path.size()) return std::nullopt;
    begin = end + 1;
  }
}

// Reads an archive from its start, turning every overrun into a FormatError.
class ArchiveReader {
 public:
  ArchiveReader(std::span<const std::byte> archive, const fs::path& dir)
      : archive_(archive), dir_(dir) {}

  std::uint64_t number(std::string_view field) {
    return take(field, [](base::Unpacked& in) { return in.take(); });
  }
  std::string text(std::string_view field) {
    return take(field, [](base::Unpacked& in) { return in.take_text(); });
  }
  std::uint64_t checksum(std::string_view field) {
    return take(field, [](base::Unpacked& in) { return in.take_all(1).front(); });
  }
  std::span<const std::byte> bytes(std::uint64_t count, std::string_view field) {
    if (count > remaining()) {
      fail(field, fmt::format("{} bytes are expected but only {} remain", count, remaining()));
    }
    const auto out = archive_.subspan(offset_, static_cast<std::size_t>(count));
    offset_ += out.size();
    return out;
  }
  [[nodiscard]] std::uint64_t remaining() const noexcept { return archive_.size() - offset_; }

  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    throw FormatError(dir_.string(), std::string(field),
                      fmt::format("the archive to unpack into '{}' is damaged: {} (at byte {} of "
                                  "{}, field '{}'); nothing was written",
                                  dir_.string(), problem, offset_, archive_.size(), field));
  }

 private:
  template <class Take>
  std::invoke_result_t<Take, base::Unpacked&> take(std::string_view field, Take&& read) {
    base::Unpacked in(archive_.subspan(offset_));
    try {
      auto value = read(in);
      offset_ = archive_.size() - in.remaining();
      return value;
    } catch (const Error&) {
      fail(field, "it ends early or holds a bad number");
    }
  }

  std::span<const std::byte> archive_;
  const fs::path& dir_;
  std::size_t offset_ = 0;
};

struct Entry {
  std::string path;
  std::span<const std::byte> bytes;
};

Entry read_entry(ArchiveReader& in, std::uint64_t index) {
  const std::string field = fmt::format("file {}", index);
  Entry entry;
  entry.path = in.text(field + " path");
  if (const auto problem = path_problem(entry.path)) {
    in.fail(field + " path", fmt::format("file {} has {}", index, *problem));
  }
  const std::uint64_t size = in.number(field + " size");
  const std::uint64_t checksum = in.checksum(field + " checksum");
  entry.bytes = in.bytes(size, field + " bytes");
  if (XXH3_64bits(entry.bytes.data(), entry.bytes.size()) != checksum) {
    in.fail(field + " bytes",
            fmt::format("the bytes of '{}' do not match their XXH3 checksum", entry.path));
  }
  return entry;
}

// No path twice, and no path both a file and a directory ("a" and "a/b").
void check_paths_distinct(const std::vector<Entry>& entries, const ArchiveReader& in) {
  std::set<std::string_view> files;
  std::set<std::string_view> dirs;
  for (const auto& entry : entries) {
    const std::string_view path = entry.path;
    if (!files.insert(path).second) in.fail("paths", fmt::format("'{}' comes twice", path));
    for (auto slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      dirs.insert(path.substr(0, slash));
    }
  }
  for (const auto path : files) {
    if (dirs.contains(path)) {
      in.fail("paths", fmt::format("'{}' is both a file and a directory", path));
    }
  }
}

std::vector<Entry> read_archive(std::span<const std::byte> archive, const fs::path& dir) {
  ArchiveReader in(archive, dir);
  if (!std::ranges::equal(in.bytes(kMagic.size(), "magic"), magic_bytes())) {
    in.fail("magic", "it does not start with \"CAIRNARC\"");
  }
  if (const auto version = in.number("version"); version != kVersion) {
    in.fail("version",
            fmt::format("version {} is not {}, the one this cairn reads", version, kVersion));
  }
  const std::uint64_t count = in.number("file count");
  if (count > in.remaining() / kMinEntryBytes) {
    in.fail("file count",
            fmt::format("{} files cannot fit in the {} bytes that remain", count, in.remaining()));
  }
  std::vector<Entry> entries;
  entries.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t k = 0; k < count; ++k) entries.push_back(read_entry(in, k));
  if (in.remaining() != 0) {
    in.fail("end", fmt::format("{} bytes follow the last file", in.remaining()));
  }
  check_paths_distinct(entries, in);
  return entries;
}

// Writes and fsyncs every file of `entries` under `tmp`, then every directory, deepest first.
void write_entries(const std::vector<Entry>& entries, const fs::path& tmp) {
  std::set<fs::path> dirs{tmp};
  for (const auto& entry : entries) {
    const fs::path path = tmp / entry.path;
    for (auto parent = path.parent_path(); parent != tmp; parent = parent.parent_path()) {
      if (!dirs.insert(parent).second) break;
    }
    base::create_directories(path.parent_path());
    base::PosixFile file(path, base::PosixFile::Mode::write_new);
    file.write_at(0, entry.bytes);
    file.sync();
    file.close();
  }
  // A directory sorts before the paths under it, so the reverse order syncs children first.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) base::sync_directory(*it);
}

void remove_stale(const fs::path& tmp) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(tmp, ec))) return;
  base::log::info("levels.stale_tmp", "path=\"{}\"", tmp.string());
  fs::remove_all(tmp, ec);
  if (ec) {
    throw IoError(tmp.string(),
                  fmt::format("removing the stale '{}' failed: {}", tmp.string(), ec.message()));
  }
}

}  // namespace

ArchiveBytes::ArchiveBytes(std::span<const std::byte> bytes)
    : ArchiveBytes(std::vector<std::span<const std::byte>>{bytes}, nullptr,
                   archive_checksum(bytes)) {}

ArchiveBytes::ArchiveBytes(std::vector<std::span<const std::byte>> parts,
                           std::shared_ptr<const void> owner, std::uint64_t checksum)
    : owner_(std::move(owner)), checksum_(checksum) {
  std::erase_if(parts, [](const auto& part) { return part.empty(); });
  parts_ = std::move(parts);
  for (const auto& part : parts_) size_ += part.size();
}

void ArchiveBytes::copy(std::uint64_t offset, std::span<std::byte> out) const noexcept {
  std::uint64_t start = 0;  // of the current part
  std::size_t filled = 0;
  for (const auto& part : parts_) {
    if (filled == out.size()) break;
    const std::uint64_t end = start + part.size();
    const std::uint64_t from = offset + filled;
    if (from < end) {
      const std::size_t n =
          std::min<std::size_t>(out.size() - filled, static_cast<std::size_t>(end - from));
      std::memcpy(out.data() + filled, part.data() + (from - start), n);
      filled += n;
    }
    start = end;
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(filled), out.end(), std::byte{0});
}

ArchiveBytes map_directory(const fs::path& dir) {
  struct Owner {
    std::vector<Bytes> headers;  // the magic, version and count, then each file's header
    std::vector<std::unique_ptr<MappedFile>> files;
  };
  auto owner = std::make_shared<Owner>();
  const auto files = regular_files(dir);
  owner->headers.reserve(files.size() + 1);
  owner->files.reserve(files.size());
  base::Packed prefix;
  prefix.bytes().assign(magic_bytes().begin(), magic_bytes().end());
  prefix.put(kVersion);
  prefix.put(static_cast<std::uint64_t>(files.size()));
  owner->headers.push_back(std::move(prefix.bytes()));
  std::vector<std::span<const std::byte>> parts{owner->headers.back()};
  for (const auto& [relative, path] : files) {
    auto& file = owner->files.emplace_back(std::make_unique<MappedFile>(path, true));
    const auto bytes = file->bytes();
    base::Packed header;
    header.put(relative);
    header.put(static_cast<std::uint64_t>(bytes.size()));
    header.put_all(std::array<std::uint64_t, 1>{XXH3_64bits(bytes.data(), bytes.size())});
    owner->headers.push_back(std::move(header.bytes()));
    parts.push_back(owner->headers.back());
    parts.push_back(bytes);
  }
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state);
  for (const auto& part : parts) XXH3_64bits_update(state, part.data(), part.size());
  const std::uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return {std::move(parts), std::move(owner), checksum};
}

void unpack_directory(std::span<const std::byte> archive, const fs::path& dir) {
  if (dir.empty() || !dir.has_filename()) {
    throw InvalidArgument(
        fmt::format("directory '{}' to unpack into has no final component; "
                    "name it without a trailing '/'",
                    dir.string()));
  }
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    throw InvalidArgument(fmt::format(
        "'{}' already exists; an archive is unpacked into a new directory only", dir.string()));
  }
  const auto entries = read_archive(archive, dir);
  fs::path tmp = dir;
  tmp += kTmpSuffix;
  remove_stale(tmp);
  try {
    base::create_directories(tmp);
    write_entries(entries, tmp);
    fs::rename(tmp, dir, ec);
    if (ec) {
      throw IoError(dir.string(), fmt::format("renaming '{}' to '{}' failed: {}", tmp.string(),
                                              dir.string(), ec.message()));
    }
  } catch (...) {
    fs::remove_all(tmp, ec);  // best effort: the error that matters is the one thrown
    throw;
  }
  const auto parent = dir.parent_path();
  base::sync_directory(parent.empty() ? fs::path(".") : parent);
}

std::uint64_t archive_checksum(std::span<const std::byte> archive) noexcept {
  return XXH3_64bits(archive.data(), archive.size());
}

}  // namespace cairn::levels
