// ShardReader::prefetch() in every format: after the page cache of data.h5 is dropped,
// prefetching a range of a shard's stream puts every byte a read of that range reads into the
// page cache (the rows of a 2-D block, which lie apart in a contiguous dataset of data.h5, or
// the shard's chunk when the blocks are a regular grid); in every format the read
// then returns the saved bytes, and a range outside the shard throws InvalidArgument naming
// the leaf. The saves are made in 2-D blocks on every rank; the reads on world rank 0 alone, so
// that no rank drops the page cache under another's check.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cairn/error.hpp>
#include <cairn/storage.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/durable_file.hpp"
#include "storage/format/format_table.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/tree_index.hpp"
#include "storage/storage_test_util.hpp"
#include "storage/stream/shard_stream.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using storage::LeafRecord;
using storage::ShardRecord;

// Rows of about 16 KiB: a block of half the columns is 8 KiB pieces 8 KiB apart in a
// contiguous dataset. With an odd number of columns the blocks are not a regular grid (the
// first half is one column narrower), so the hdf5 dataset is contiguous; with an even number
// they are, and each shard of data.h5 is one chunk, contiguous in the file.
const std::vector<std::int64_t> kRowsApart = {96, 2047};
const std::vector<std::int64_t> kOneChunkPerShard = {96, 2048};
constexpr std::uint64_t kPage = 4096;

// A file mapped read-only, to ask the kernel which of its pages are in the page cache.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), size_(std::filesystem::file_size(path)) {
    if (fd_ < 0) throw IoError(path.string(), "cannot open " + path.string());
    base_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (base_ == MAP_FAILED) throw IoError(path.string(), "cannot map " + path.string());
  }
  ~MappedFile() {
    ::munmap(base_, size_);
    ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Writes the file's dirty pages back and drops its pages from the page cache.
  void drop() const {
    ::fdatasync(fd_);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
  }
  // The pages of bytes [begin, end) that are not in the page cache (or still being read).
  [[nodiscard]] std::int64_t missing(std::uint64_t begin, std::uint64_t end) const {
    const std::uint64_t first = begin / kPage * kPage;
    std::vector<unsigned char> resident((end - first + kPage - 1) / kPage);
    if (::mincore(static_cast<std::byte*>(base_) + first, end - first, resident.data()) != 0) {
      throw IoError("mincore", std::strerror(errno));
    }
    return std::count_if(resident.begin(), resident.end(),
                         [](unsigned char r) { return !(r & 1); });
  }
  // Where `pattern` first occurs in the file.
  [[nodiscard]] std::optional<std::uint64_t> find(std::span<const std::byte> pattern) const {
    const auto* bytes = static_cast<const std::byte*>(base_);
    const auto* at = std::search(bytes, bytes + size_, pattern.begin(), pattern.end());
    if (at == bytes + size_) return std::nullopt;
    return static_cast<std::uint64_t>(at - bytes);
  }

 private:
  int fd_ = -1;
  std::size_t size_ = 0;
  void* base_ = nullptr;
};

// The file ranges [begin, end) holding bytes [first, first + bytes) of `shard`'s stream:
// posix, and hdf5 shards stored as a chunk at `data_address`, one range; hdf5 shards of a
// contiguous dataset of `shape` at `data_address`, one range per row.
std::vector<std::pair<std::uint64_t, std::uint64_t>> file_ranges(
    StorageFormat format, const std::vector<std::int64_t>& shape, bool chunk,
    const ShardRecord& shard, std::uint64_t data_address, std::uint64_t first,
    std::uint64_t bytes) {
  if (format == StorageFormat::posix) {
    return {{shard.byte_offset + first, shard.byte_offset + first + bytes}};
  }
  if (chunk) return {{data_address + first, data_address + first + bytes}};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  storage::for_each_global_piece(
      shape, shard.box, static_cast<std::int64_t>(first / 8), static_cast<std::int64_t>(bytes / 8),
      [&](std::int64_t global, std::int64_t, std::int64_t n) {
        const auto at = data_address + static_cast<std::uint64_t>(global) * 8;
        ranges.emplace_back(at, at + static_cast<std::uint64_t>(n) * 8);
      });
  return ranges;
}

// Prefetches and reads the middle half of every shard of the leaf of `shape` saved in `dir`,
// through a reader of `format` opened on `alone` (one rank).
void check_prefetch(const Comm& alone, StorageFormat format, const std::vector<std::int64_t>& shape,
                    const std::filesystem::path& dir) {
  const storage::TreeIndex index = storage::read_full_index(dir);
  const LeafRecord* leaf = index.find("params/w");
  ASSERT_NE(leaf, nullptr);
  const std::vector<const LeafRecord*> leaves = {leaf};
  auto reader = storage::format_row(format).open_reader(alone, dir);
  reader->open(leaves);
  const auto whole = reference_box(DType::float64, shape, Box{{0, 0}, shape});
  const bool chunk = shape == kOneChunkPerShard;
  for (const ShardRecord& shard : leaf->shards) {
    SCOPED_TRACE("shard of rank " + std::to_string(shard.rank));
    const MappedFile file(dir / shard.file);
    const auto saved = reference_box(DType::float64, shape, shard.box);
    // hdf5: a chunk starts where the shard's first row lies in data.h5, a contiguous
    // dataset where the array's first row does.
    const auto address = format == StorageFormat::posix ? std::optional<std::uint64_t>(0)
                         : chunk                        ? file.find(std::span(saved.data(), 16 * 8))
                                 : file.find(std::span(whole.data(), 16 * 8));
    ASSERT_TRUE(address.has_value());
    const std::uint64_t first = shard.bytes / 32 * 8;  // the middle half, in whole elements
    const std::uint64_t bytes = shard.bytes / 16 * 8;
    const auto ranges = file_ranges(format, shape, chunk, shard, *address, first, bytes);
    file.drop();
    reader->prefetch(*leaf, shard, first, bytes);
    // Only hdf5 ranges in pieces apart (the rows of a block of a contiguous dataset) are
    // advised to the kernel (bytes that are one range of the file, posix or an hdf5 chunk or a
    // whole array, are read ahead by the kernel itself), which reads in the background: wait
    // for it; without the prefetch nothing would read these pages.
    std::int64_t missing = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (format == StorageFormat::hdf5 && ranges.size() > 1) {
      missing = 0;
      for (const auto& [begin, end] : ranges) missing += file.missing(begin, end);
      if (missing == 0 || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(missing, 0) << "pages of the prefetched range are not in the page cache";
    std::vector<std::byte> got(bytes);
    reader->read(*leaf, shard, first, bytes, got.data());
    EXPECT_EQ(std::memcmp(got.data(), saved.data() + first, bytes), 0);

    try {
      reader->prefetch(*leaf, shard, shard.bytes - 8, 16);
      ADD_FAILURE() << "a range past the shard's end was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("params/w"), std::string::npos) << e.what();
    }
  }
  reader->close();
}

TEST(Prefetch, BringsTheBytesOfARangeIntoThePageCache) {
  SharedTempDir tmp;
  Comm world(MPI_COMM_WORLD);
  for (const std::vector<std::int64_t>& shape : {kRowsApart, kOneChunkPerShard}) {
    const Box box = block_box(shape, world.rank(), world.size());
    const auto data = reference_box(DType::float64, shape, box);
    ArrayTree tree;
    tree.add_array("params/w", float64_shard(data, shape, box));
    for (StorageFormat format : available_formats()) {
      const std::string name =
          std::string(storage_format_name(format)) + "_" + std::to_string(shape[1]);
      SCOPED_TRACE(name);
      const auto dir = tmp / name;
      save_tree(world, dir, tree, {.format = format, .fsync = true});
      if (const std::optional<Comm> alone = first_ranks(1)) {
        check_prefetch(*alone, format, shape, dir);
      }
      world.barrier("test_prefetch");
    }
  }
}

}  // namespace
}  // namespace cairn::testing
