#include "storage/index/collective_writer.hpp"

#include <cairn/error.hpp>
#include <fmt/format.h>

#include <atomic>
#include <boost/json/serialize.hpp>

#include "base/durable_file.hpp"
#include "base/packed.hpp"
#include "base/posix_file.hpp"
#include "storage/index/binary.hpp"
#include "storage/index/leaf_stats.hpp"
#include "storage/index/record_packing.hpp"

namespace cairn::storage {
namespace {

std::atomic<std::uint64_t> g_records_received{0};

// The positions in index.leaves of the array leaves, in order: slot of array index a.
std::vector<std::size_t> array_slots(const TreeIndex& index) {
  std::vector<std::size_t> slots;
  for (std::size_t i = 0; i < index.leaves.size(); ++i) {
    if (index.leaves[i].kind == LeafKind::array) slots.push_back(i);
  }
  return slots;
}

std::vector<std::byte> pack_names(const std::set<std::string>& names) {
  base::Packed out;
  out.put(static_cast<std::uint64_t>(names.size()));
  for (const std::string& name : names) out.put(name);
  return std::move(out.bytes());
}

void unpack_names(std::span<const std::byte> bytes, std::set<std::string>& into) {
  base::Unpacked in(bytes);
  for (std::uint64_t count = in.take(); count > 0; --count) into.insert(in.take_text());
  if (!in.done()) throw Error(ErrorCode::internal, "data file names end with stray bytes");
}

// The array index of a received record or section, checked: the ranks of one save send them.
std::size_t array_index(std::uint64_t array, std::size_t arrays, std::string_view what) {
  if (array >= arrays) {
    throw Error(ErrorCode::internal,
                fmt::format("{} of array leaf {} arrived; the tree has {}", what, array, arrays));
  }
  return static_cast<std::size_t>(array);
}

// What the primary needs of a section for cairn-tree.json: everything but its offset, which
// every rank computes from the lengths.
void put_section(base::Packed& out, std::size_t array, const BinarySection& s) {
  out.put(static_cast<std::uint64_t>(array));
  out.put(s.length);
  out.put_all(std::span(&s.checksum, 1));
  for (const std::uint64_t n : {s.shard_count, s.chunk_count, s.bytes, s.stored_bytes,
                                s.referenced_chunks, s.referenced_bytes}) {
    out.put(n);
  }
  out.put_byte(s.chunk_sizes ? 1 : 0);
  for (const auto* dims : {&s.blocks, &s.block}) {
    out.put(static_cast<std::uint64_t>(dims->size()));
    for (const std::int64_t n : *dims) out.put(static_cast<std::uint64_t>(n));
  }
  out.put(static_cast<std::uint64_t>(s.page_checksums.size()));
  out.put_all(s.page_checksums);
}

BinarySection take_section(base::Unpacked& in) {
  BinarySection s;
  s.length = in.take();
  s.checksum = in.take_all(1).at(0);
  for (std::uint64_t* n : {&s.shard_count, &s.chunk_count, &s.bytes, &s.stored_bytes,
                           &s.referenced_chunks, &s.referenced_bytes}) {
    *n = in.take();
  }
  s.chunk_sizes = in.take_byte() != 0;
  for (auto* dims : {&s.blocks, &s.block}) {
    for (std::uint64_t count = in.take(); count > 0; --count) {
      dims->push_back(static_cast<std::int64_t>(in.take()));
    }
  }
  s.page_checksums = in.take_all(in.take());
  return s;
}

// One collective write of an index: the state its five steps (write_index_collectively())
// hand on, each step a member.
class IndexWrite {
 public:
  IndexWrite(const Comm& comm, const std::filesystem::path& dir, TreeIndex index)
      : comm_(comm),
        dir_(dir),
        what_(fmt::format("save_tree '{}': writing the index:", dir.string())),
        bin_path_(dir / kTreeIndexBinaryFile),
        size_(comm.size()),
        slots_(array_slots(index)),
        index_(std::move(index)) {}

  // 1. The data files, numbered alike on every rank.
  void number_files(const std::vector<std::pair<std::size_t, ShardRecord>>& records) {
    std::set<std::string> names;
    for (const auto& [array, record] : records) {
      names.insert(record.file);
      names.insert(record.ref_files.begin(), record.ref_files.end());
    }
    for (const auto& from : comm_.allgather_bytes(pack_names(names))) unpack_names(from, names);
    index_.files.assign(names.begin(), names.end());
  }

  // 2. Each record to its leaf's section owner; returns what this rank received.
  std::vector<std::vector<std::byte>> send_to_owners(
      std::vector<std::pair<std::size_t, ShardRecord>> records) {
    std::vector<std::vector<std::byte>> outgoing;
    {
      std::vector<std::vector<std::pair<std::size_t, ShardRecord>>> to(
          static_cast<std::size_t>(size_));
      for (auto& [array, record] : records) {
        to[static_cast<std::size_t>(section_owner(array, size_))].emplace_back(array,
                                                                               std::move(record));
      }
      records.clear();
      for (const auto& part : to) outgoing.push_back(pack_records(part));
    }
    std::vector<std::vector<std::byte>> incoming = comm_.alltoall_bytes(outgoing);
    for (const auto& from : incoming) g_records_received += from.size();
    return incoming;
  }

  // 3. This rank's sections; the primary creates cairn-tree.bin, which the owners write into.
  void encode_sections(const std::vector<std::vector<std::byte>>& incoming) {
    comm_.run_all(what_, [&] {
      // Ranks arrive in order, so each leaf's shards come out in ascending rank.
      for (const auto& from : incoming) {
        unpack_records(from, [&](std::size_t array, ShardRecord&& record) {
          const std::size_t a = array_index(array, slots_.size(), "a shard record");
          if (section_owner(a, size_) != comm_.rank()) {
            throw Error(ErrorCode::internal,
                        fmt::format("a shard record of leaf '{}' arrived at rank {}, not at its "
                                    "section's owner",
                                    index_.leaves[slots_[a]].path, comm_.rank()));
          }
          index_.leaves[slots_[a]].shards.push_back(std::move(record));
        });
      }
      const FileNumbers numbers = file_numbers(index_.files);
      for (std::size_t a = 0; a < slots_.size(); ++a) {
        if (section_owner(a, size_) != comm_.rank()) continue;
        LeafRecord& leaf = index_.leaves[slots_[a]];
        for (const ShardRecord& s : leaf.shards) {
          referenced_.insert(s.ref_files.begin(), s.ref_files.end());
        }
        sections_.emplace_back(a, encode_section(leaf, numbers));
        leaf.stats = leaf_stats_of(leaf.shards);
        leaf.shards = {};
      }
      if (comm_.is_primary()) {
        base::PosixFile(bin_path_, base::PosixFile::Mode::write_new).close();
      }
    });
  }

  // 4. The sections' offsets, from every section's length; each owner writes its sections.
  void write_sections() {
    base::Packed lengths;
    lengths.put(static_cast<std::uint64_t>(sections_.size()));
    for (const auto& [array, bytes] : sections_) {
      lengths.put(static_cast<std::uint64_t>(array));
      lengths.put(static_cast<std::uint64_t>(bytes.size()));
    }
    offsets_.assign(slots_.size() + 1, 0);  // offsets_[a + 1]: a's length first
    for (const auto& from : comm_.allgather_bytes(lengths.bytes())) {
      base::Unpacked in(from);
      for (std::uint64_t count = in.take(); count > 0; --count) {
        const std::size_t a = array_index(in.take(), slots_.size(), "the length of a section");
        offsets_[a + 1] = in.take();
      }
    }
    offsets_[0] = kTreeIndexBinaryHeaderBytes;
    for (std::size_t a = 0; a < slots_.size(); ++a) offsets_[a + 1] += offsets_[a];
    comm_.run_all(what_, [&] {
      if (sections_.empty()) return;
      base::PosixFile bin(bin_path_, base::PosixFile::Mode::write_existing);
      for (const auto& [array, bytes] : sections_) {
        bin.write_at(offsets_[array], std::as_bytes(std::span(bytes)));
      }
      bin.sync();
      bin.close();
    });
  }

  // 5. The primary completes the index from one summary per section, links the files of
  // earlier saves (`link`), writes the header and cairn-tree.json. Returns the index's bytes
  // on the primary, 0 elsewhere.
  std::uint64_t complete(bool sync_dir, const LinkReferencedFiles& link) {
    base::Packed summary;
    summary.put(static_cast<std::uint64_t>(sections_.size()));
    for (const auto& [array, bytes] : sections_) {
      put_section(summary, array, *index_.leaves[slots_[array]].section);
      put_stats(summary, index_.leaves[slots_[array]].stats);
    }
    summary.put(static_cast<std::uint64_t>(referenced_.size()));
    for (const std::string& name : referenced_) summary.put(name);
    sections_.clear();
    const std::vector<std::vector<std::byte>> summaries = comm_.gather_bytes(summary.bytes());
    std::uint64_t index_bytes = 0;
    comm_.run_all(what_, [&] {
      if (!comm_.is_primary()) return;
      take_summaries(summaries);
      if (link) link(referenced_);
      index_.version = index_version_of(index_);
      index_.binary_checksum = sections_checksum(index_);
      const std::string header = index_header(index_);
      base::PosixFile bin(bin_path_, base::PosixFile::Mode::write_existing);
      bin.write_at(0, std::as_bytes(std::span(header)));
      bin.sync();
      bin.close();
      const std::string text = boost::json::serialize(to_json(index_));
      base::write_file_durably(dir_ / kTreeIndexFile, text);
      if (sync_dir) base::sync_directory(dir_);
      index_bytes = offsets_.back() + text.size();
    });
    return index_bytes;
  }

 private:
  // On the primary: every section's summary into its leaf, and the files they refer to.
  void take_summaries(const std::vector<std::vector<std::byte>>& summaries) {
    referenced_.clear();
    for (const auto& from : summaries) {
      base::Unpacked in(from);
      for (std::uint64_t count = in.take(); count > 0; --count) {
        const std::size_t a = array_index(in.take(), slots_.size(), "the summary of a section");
        BinarySection section = take_section(in);
        section.offset = offsets_[a];
        index_.leaves[slots_[a]].section = std::move(section);
        index_.leaves[slots_[a]].stats = take_stats(in);
      }
      for (std::uint64_t count = in.take(); count > 0; --count) referenced_.insert(in.take_text());
      if (!in.done()) throw Error(ErrorCode::internal, "a section summary ends with stray bytes");
    }
    for (const std::size_t slot : slots_) {
      if (!index_.leaves[slot].section) {
        throw Error(ErrorCode::internal, fmt::format("no rank wrote the section of leaf '{}'",
                                                     index_.leaves[slot].path));
      }
    }
  }

  const Comm& comm_;
  const std::filesystem::path& dir_;
  const std::string what_;
  const std::filesystem::path bin_path_;
  const int size_;
  const std::vector<std::size_t> slots_;
  TreeIndex index_;
  std::vector<std::pair<std::size_t, std::string>> sections_;  // this rank's: array, bytes
  std::set<std::string> referenced_;    // files of earlier saves that those sections name
  std::vector<std::uint64_t> offsets_;  // of every section, then the end
};

}  // namespace

std::uint64_t write_index_collectively(const Comm& comm, const std::filesystem::path& dir,
                                       TreeIndex index,
                                       std::vector<std::pair<std::size_t, ShardRecord>> records,
                                       bool sync_dir, const LinkReferencedFiles& link) {
  IndexWrite write(comm, dir, std::move(index));
  write.number_files(records);
  write.encode_sections(write.send_to_owners(std::move(records)));
  write.write_sections();
  return write.complete(sync_dir, link);
}

std::uint64_t index_records_received() noexcept { return g_records_received.load(); }

}  // namespace cairn::storage
