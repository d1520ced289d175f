// BytesHandler: opaque per-rank or replicated bytes with checksums.
#include <boost/json.hpp>
#include <cairn/handlers.hpp>
#include <fmt/format.h>
#include <new>

#include "base/durable_file.hpp"
#include "base/fault.hpp"
#include "base/first_error.hpp"
#include "base/posix_file.hpp"
#include "storage/stream/checksum.hpp"

namespace cairn {
namespace {

constexpr const char* kIndexFile = "cairn-bytes.json";

std::string blob_name(std::optional<int> rank) {
  return rank ? fmt::format("p{}.bin", *rank) : std::string("replicated.bin");
}

class BytesPendingSave final : public PendingSave {
 public:
  BytesPendingSave(const Comm& comm, std::filesystem::path dir, const BytesSave& args)
      : rank_(comm.rank()),
        writes_(!args.replicated || comm.is_primary()),
        replicated_(args.replicated),
        dir_(std::move(dir)),
        bytes_(args.bytes) {}

  void stage() override {}  // the bytes were copied when the save started

  void write(const Comm*) override {
    if (!writes_ || error_.failed()) return;
    try {
      base::fault::point("handler.bytes_write");
      checksum_ = storage::checksum_of(bytes_);
      base::PosixFile file(dir_ / blob_name(replicated_ ? std::nullopt : std::optional(rank_)),
                           base::PosixFile::Mode::write_new);
      file.write_at(0, bytes_);
      file.sync();
      file.close();
      written_ = bytes_.size();
    } catch (const std::exception& e) {
      fail(e);
    }
  }

  void finish(const Comm& comm) override {
    error_.report(comm);
    boost::json::value mine = nullptr;
    if (writes_) {
      mine = {
          {"rank", rank_}, {"bytes", bytes_.size()}, {"xxh3", storage::checksum_to_hex(checksum_)}};
    }
    const auto all = comm.gather_json(mine);
    comm.run_all(fmt::format("writing '{}':", (dir_ / kIndexFile).string()), [&] {
      if (!comm.is_primary()) return;
      boost::json::array blobs;
      for (const auto& blob : all) {
        if (!blob.is_null()) blobs.push_back(blob);
      }
      const boost::json::value index = {{"format", "cairn-bytes"},
                                        {"version", 1},
                                        {"replicated", replicated_},
                                        {"world_size", comm.size()},
                                        {"blobs", std::move(blobs)}};
      base::write_file_durably(dir_ / kIndexFile, boost::json::serialize(index));
      base::sync_directory(dir_);
    });
  }

  std::uint64_t bytes_written() const noexcept override { return written_; }

  void fail(const std::exception& error) noexcept override { error_.record(error); }

 private:
  int rank_;
  bool writes_;
  bool replicated_;
  std::filesystem::path dir_;
  std::vector<std::byte> bytes_;
  std::uint64_t checksum_ = 0;
  std::uint64_t written_ = 0;
  base::FirstError error_;
};

// The index, read by the primary and broadcast; validated identically on every rank.
struct BytesIndex {
  bool replicated = false;
  int world_size = 0;
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> blobs;  // rank -> (bytes, checksum)
};

BytesIndex read_index(const Comm& comm, const std::filesystem::path& dir) {
  const auto file = dir / kIndexFile;
  std::string text;
  comm.run_all(fmt::format("reading '{}':", file.string()), [&] {
    if (comm.is_primary()) text = base::read_small_file(file);
  });
  text = comm.broadcast(text);
  auto bad = [&](std::string_view field) -> FormatError {
    return FormatError(file.string(), std::string(field),
                       fmt::format("'{}': field '{}' is missing or wrong; the file is damaged",
                                   file.string(), field));
  };
  boost::system::error_code ec;
  const boost::json::value json = boost::json::parse(text, ec);
  if (ec || !json.is_object()) throw bad("json");
  const auto& o = json.get_object();
  BytesIndex index;
  const auto* replicated = o.if_contains("replicated");
  const auto* world_size = o.if_contains("world_size");
  const auto* blobs = o.if_contains("blobs");
  if (!replicated || !replicated->is_bool()) throw bad("replicated");
  if (!world_size || !world_size->is_int64() || world_size->get_int64() < 1)
    throw bad("world_size");
  if (!blobs || !blobs->is_array()) throw bad("blobs");
  index.replicated = replicated->get_bool();
  index.world_size = static_cast<int>(std::min<std::int64_t>(world_size->get_int64(), 1 << 24));
  for (const auto& blob : blobs->get_array()) {
    const auto* b = blob.if_object();
    if (!b) throw bad("blobs[]");
    const auto* rank = b->if_contains("rank");
    const auto* bytes = b->if_contains("bytes");
    const auto* sum = b->if_contains("xxh3");
    if (!rank || !rank->is_int64() || rank->get_int64() < 0 ||
        rank->get_int64() >= index.world_size) {
      throw bad("blobs[].rank");
    }
    if (!bytes || !(bytes->is_uint64() || (bytes->is_int64() && bytes->get_int64() >= 0))) {
      throw bad("blobs[].bytes");
    }
    if (!sum || !sum->is_string()) throw bad("blobs[].xxh3");
    const auto checksum = storage::checksum_from_hex(sum->get_string());
    if (!checksum) throw bad("blobs[].xxh3");
    index.blobs[static_cast<int>(rank->get_int64())] = {
        boost::json::value_to<std::uint64_t>(*bytes), *checksum};
  }
  return index;
}

}  // namespace

std::unique_ptr<PendingSave> BytesHandler::async_save(const Comm& comm,
                                                      const std::filesystem::path& dir,
                                                      const CheckpointArgs& args,
                                                      const AsyncContext&) {
  const auto* typed = dynamic_cast<const BytesSave*>(&args);
  if (typed == nullptr) {
    throw InvalidArgument(
        fmt::format("the cairn.bytes handler cannot take arguments for "
                    "handler '{}'",
                    args.handler_type()));
  }
  comm.agree({.operation = "bytes save " + dir.filename().string(),
              .options = typed->replicated ? 1u : 0u});
  return std::make_unique<BytesPendingSave>(comm, dir, *typed);
}

std::any BytesHandler::restore(const Comm& comm, const std::filesystem::path& dir,
                               const CheckpointArgs* args) {
  const auto* typed = args ? dynamic_cast<const BytesRestore*>(args) : nullptr;
  if (args != nullptr && typed == nullptr) {
    throw InvalidArgument(
        fmt::format("the cairn.bytes handler cannot take arguments for "
                    "handler '{}'",
                    args->handler_type()));
  }
  const BytesIndex index = read_index(comm, dir);
  std::vector<std::byte> out;
  comm.run_all(fmt::format("restoring bytes from '{}':", dir.string()), [&] {
    const int from = index.replicated
                         ? index.blobs.empty() ? -1 : index.blobs.begin()->first
                         : (typed && typed->from_rank ? *typed->from_rank : comm.rank());
    auto it = index.blobs.find(from);
    if (it == index.blobs.end()) {
      throw NotFound(dir.string(), fmt::format("'{}' holds no bytes of rank {} (the save had {} "
                                               "ranks)",
                                               dir.string(), from, index.world_size));
    }
    const auto file = dir / blob_name(index.replicated ? std::nullopt : std::optional(from));
    const base::PosixFile input(file, base::PosixFile::Mode::read);
    const auto [bytes, checksum] = it->second;
    if (input.size() != bytes) {
      throw FormatError(file.string(), "size",
                        fmt::format("'{}' has {} bytes but the index says {}; the file is "
                                    "damaged",
                                    file.string(), input.size(), bytes));
    }
    try {
      out.resize(static_cast<std::size_t>(bytes));
    } catch (const std::bad_alloc&) {
      throw IoError(file.string(), fmt::format("'{}' holds {} bytes, more than this rank can "
                                               "allocate (out of memory)",
                                               file.string(), bytes));
    }
    input.read_at(0, out);
    if (storage::checksum_of(out) != checksum) {
      throw FormatError(
          file.string(), "xxh3",
          fmt::format("checksum mismatch in '{}'; the file is damaged", file.string()));
    }
  });
  return out;
}

boost::json::value BytesHandler::metadata(const Comm& comm, const std::filesystem::path& dir) {
  const BytesIndex index = read_index(comm, dir);
  std::uint64_t bytes = 0;
  for (const auto& [rank, blob] : index.blobs) bytes += blob.first;
  return {{"handler", type_name()},
          {"replicated", index.replicated},
          {"world_size", index.world_size},
          {"blobs", index.blobs.size()},
          {"bytes", bytes}};
}

}  // namespace cairn
