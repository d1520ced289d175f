#include "storage/engine/incremental.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <unistd.h>

#include "base/durable_file.hpp"
#include "base/log.hpp"
#include "storage/index/binary.hpp"

namespace cairn::storage {

namespace {

// The base's leaf that array `job` may refer to: same path, shape, stored dtype, chunk size
// and compression, format posix, with a binary section. nullptr otherwise.
const LeafRecord* base_leaf_of(const TreeIndex& index, const ArrayJob& job) {
  const LeafRecord* leaf = index.find(job.leaf->path());
  if (leaf == nullptr || leaf->kind != LeafKind::array || !leaf->section) return nullptr;
  const bool same = leaf->format == StorageFormat::posix && job.format == StorageFormat::posix &&
                    leaf->dtype == job.dtype && leaf->shape == job.leaf->as_array().global_shape &&
                    leaf->chunk_bytes == job.chunk_bytes && leaf->compression == job.compression;
  return same ? leaf : nullptr;
}

// The number of `name` in `files`. Throws FormatError naming `source` when it is not there.
std::uint32_t file_number(const std::vector<std::string>& files, const std::string& name,
                          const std::filesystem::path& source) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i] == name) return static_cast<std::uint32_t>(i);
  }
  throw FormatError(source.string(), "files",
                    fmt::format("'{}': a shard names '{}', which is not in its \"files\"",
                                source.string(), name));
}

// The chunks of `shard` (a shard of `leaf` of the base `index`), each where its bytes lie.
BaseShard base_shard_of(const TreeIndex& index, const LeafRecord& leaf, const ShardRecord& shard,
                        const std::filesystem::path& source) {
  BaseShard out;
  const std::uint64_t chunk = leaf.chunk_bytes_of(shard);
  const std::uint32_t own = file_number(index.files, shard.file, source);
  std::uint64_t at = 0;  // stored offset of the chunk in the shard
  for (std::size_t c = 0; c < shard.checksums.size(); ++c) {
    const std::uint64_t size = shard.chunk_stored_size(c, chunk);
    out.checksums.push_back(shard.checksums[c]);
    out.sizes.push_back(size);
    const ChunkRef ref = shard.has_refs() ? shard.chunk_refs.at(c) : ChunkRef{};
    if (ref.referenced()) {
      out.files.push_back(file_number(index.files, shard.ref_files.at(ref.file), source));
      out.offsets.push_back(ref.byte_offset);
    } else {
      out.files.push_back(own);
      out.offsets.push_back(shard.byte_offset + at);
    }
    at += size;
  }
  return out;
}

// Makes `target` the same file as `source`: a hard link, or a copy where the file system
// cannot link. Throws IoError naming both.
void link_or_copy(const std::filesystem::path& source, const std::filesystem::path& target) {
  std::error_code ec;
  std::filesystem::remove(target, ec);
  if (::link(source.c_str(), target.c_str()) == 0) return;
  const int error = errno;
  if (error != EXDEV && error != EPERM && error != EMLINK && error != ENOTSUP &&
      error != EOPNOTSUPP) {
    throw IoError(target.string(), fmt::format("linking '{}' to '{}': {}", target.string(),
                                               source.string(), std::strerror(error)));
  }
  base::log::warn("storage.incremental_copy", "source=\"{}\" target=\"{}\" reason=\"{}\"",
                  source.string(), target.string(), std::strerror(error));
  std::filesystem::copy_file(source, target, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    throw IoError(target.string(), fmt::format("copying '{}' to '{}': {}", source.string(),
                                               target.string(), ec.message()));
  }
}

}  // namespace

std::unique_ptr<IncrementalBase> IncrementalBase::open(const Comm& comm,
                                                       const std::filesystem::path& base,
                                                       const std::filesystem::path& dir,
                                                       const std::vector<ArrayJob>& jobs) {
  std::error_code base_error;
  std::error_code dir_error;
  const auto base_path = std::filesystem::weakly_canonical(base, base_error);
  const auto dir_path = std::filesystem::weakly_canonical(dir, dir_error);
  if (!base_error && !dir_error && base_path == dir_path) {
    throw InvalidArgument(fmt::format(
        "save_tree '{}': incremental_base is the directory being written; give an earlier save",
        dir.string()));
  }
  // Only posix leaves refer to a base: a tree without one has nothing to read there.
  const auto posix = [](const ArrayJob& job) { return job.format == StorageFormat::posix; };
  if (std::ranges::none_of(jobs, posix)) return nullptr;
  auto out = std::unique_ptr<IncrementalBase>(new IncrementalBase());
  out->dir_ = base;
  const auto source = base / kTreeIndexFile;
  try {
    std::string text;
    comm.run_all(fmt::format("incremental base '{}':", base.string()), [&] {
      if (comm.is_primary()) text = base::read_small_file(source);
    });
    text = comm.broadcast(text);
    const TreeIndex index = parse_index(text, source);
    if (index.version < kTreeFormatVersionBinary) {
      throw FormatError(source.string(), "version",
                        fmt::format("'{}': an index of version {}; an incremental save refers "
                                    "to indexes of version {} or later",
                                    source.string(), index.version, kTreeFormatVersionBinary));
    }
    out->files_ = index.files;
    comm.run_all(fmt::format("incremental base '{}':", base.string()), [&] {
      IndexSections sections(base, index);
      std::vector<const LeafRecord*> used;  // the same list on every rank
      for (const ArrayJob& job : jobs) {
        if (const LeafRecord* leaf = base_leaf_of(index, job)) used.push_back(leaf);
      }
      sections.check_share(used, comm.rank(), comm.size());
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const ArrayJob& job = jobs[i];
        if (!job.writes || job.bytes == 0) continue;
        const LeafRecord* leaf = base_leaf_of(index, job);
        if (leaf == nullptr) continue;
        const ArrayShard& array = job.leaf->as_array();
        const Box box = array.box.offset.empty() && array.box.extent.empty()
                            ? whole_box(array.global_shape)
                            : array.box;
        for (const ShardRecord& shard : sections.shards_meeting(*leaf, box)) {
          if (shard.box == box && shard.bytes == job.stored_bytes) {
            out->shards_.emplace(i, base_shard_of(index, *leaf, shard, source));
            break;
          }
        }
      }
    });
  } catch (const std::exception& e) {
    // Every rank gets here alike: the verdicts and the parse of one broadcast text agree.
    base::log::warn("storage.incremental_base",
                    "dir=\"{}\" base=\"{}\": every chunk is written, the base cannot be used: {}",
                    dir.string(), base.string(), e.what());
    return nullptr;
  }
  return out;
}

const BaseShard* IncrementalBase::shard_of(std::size_t index) const noexcept {
  const auto it = shards_.find(index);
  return it == shards_.end() ? nullptr : &it->second;
}

std::string IncrementalBase::link_name(std::uint32_t file) {
  return fmt::format("shards/r{}.bin", file);
}

void IncrementalBase::link_files(const std::filesystem::path& dir,
                                 const std::set<std::string>& links) const {
  for (const std::string& name : links) {
    std::uint32_t file = 0;
    while (file < files_.size() && link_name(file) != name) ++file;
    if (file == files_.size()) {
      throw InvalidArgument(
          fmt::format("incremental save '{}': '{}' names no file of the base '{}'", dir.string(),
                      name, dir_.string()));
    }
    link_or_copy(dir_ / files_[file], dir / name);
  }
}

bool ChunkMatcher::refer(std::size_t chunk, std::uint64_t checksum, std::uint64_t size) {
  if (chunk >= base_.checksums.size() || base_.checksums[chunk] != checksum ||
      base_.sizes[chunk] != size) {
    return false;
  }
  if (referred_.size() <= chunk) referred_.resize(chunk + 1, false);
  referred_[chunk] = true;
  referred_bytes_ += size;
  return true;
}

void ChunkMatcher::fill(ShardRecord& record, std::size_t chunks) const {
  record.chunk_refs.clear();
  record.ref_files.clear();
  if (std::ranges::find(referred_, true) == referred_.end()) return;
  record.chunk_refs.assign(chunks, ChunkRef{});
  std::map<std::uint32_t, std::uint32_t> slot_of_file;  // base file -> ref_files position
  for (std::size_t c = 0; c < chunks && c < referred_.size(); ++c) {
    if (!referred_[c]) continue;
    const std::uint32_t file = base_.files[c];
    auto [it, added] =
        slot_of_file.emplace(file, static_cast<std::uint32_t>(record.ref_files.size()));
    if (added) record.ref_files.push_back(IncrementalBase::link_name(file));
    record.chunk_refs[c] = {.file = it->second, .byte_offset = base_.offsets[c]};
  }
}

}  // namespace cairn::storage
